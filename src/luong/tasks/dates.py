"""The dates task: a date as people write it -> ISO 8601 ``YYYY-MM-DD``.

A sample is a day drawn uniformly from 1950-01-01..2049-12-31, a pattern drawn uniformly from
``PATTERNS`` and a locale drawn uniformly from ``locales``, rendered exactly as
``babel.dates.format_date(day, format=pattern, locale=locale)`` writes it::

    ("Monday, March 5, 1979", "1979-03-05")      # full, en_US
    ("3/5/79", "1979-03-05")                     # short, en_US (M/d/yy)
    ("05.03.79", "1979-03-05")                   # dd.MM.yy

The source is the raw babel string, case and punctuation kept; any normalisation belongs to
the pipeline (``luong.data.vocab.Vocab.normalize``).

Well posed: every source maps to exactly one target.

- Years are the calendar year ``y``, never the week year ``Y``.
- A two-digit year ``yy`` is unambiguous inside the 100-year window: 50..99 are 1950..1999,
  00..49 are 2000..2049.
- With several locales, a *numeric* pattern (no month or weekday name among its fields:
  ``short`` in most locales, ``d MM yy``, ``dd.MM.yy``, de_DE's ``medium`` ``dd.MM.y``, ...)
  could mean two dates (en_US ``M/d/yy`` against ``d/M/yy`` elsewhere), so numeric patterns are
  always rendered in the *first* locale. A draw of (numeric pattern, other locale) renders
  (pattern, first locale); the first locale's numeric patterns thus appear more often.

The tests check well-posedness exhaustively (every day, every pattern, every locale) for
en_US + en_GB + de_DE + fr_FR, hence for en_US alone. Other locale mixes are accepted but not
checked: month names that coincide across locales with different meanings would break it.
"""

from __future__ import annotations

import datetime
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import babel
import babel.dates

from luong.common.errors import LuongError, LuongTypeError

__all__ = [
    "DEFAULT_LOCALES",
    "FIRST_DAY",
    "LAST_DAY",
    "PATTERNS",
    "DateRenderer",
    "DatesSplits",
    "sample",
    "splits",
]

PATTERNS: tuple[str, ...] = (
    "short",
    "medium",
    "long",
    "full",
    "d MMM y",
    "d MMMM y",
    "dd MMM y",
    "d MMM, y",
    "d MMMM, y",
    "dd, MMM y",
    "d MM yy",
    "MMMM d y",
    "MMMM d, y",
    "dd.MM.yy",
)
"""The format patterns, drawn uniformly; the first four are the locale's own formats."""

FIRST_DAY = datetime.date(1950, 1, 1)
LAST_DAY = datetime.date(2049, 12, 31)
DEFAULT_LOCALES: tuple[str, ...] = ("en_US",)

_PREDEFINED = ("short", "medium", "long", "full")
_DAYS = (LAST_DAY - FIRST_DAY).days + 1  # 36,525
_FIRST_ORDINAL = FIRST_DAY.toordinal()
# Stop when this many draws in a row give sources already taken: the space is exhausted.
_MAX_MISSES = 100_000

Pair = tuple[str, str]


@dataclass(frozen=True)
class DatesSplits:
    """Train, dev and test (source, target) pairs, disjoint by source."""

    train: list[Pair]  # model fitting
    dev: list[Pair]  # early stopping and model selection
    test: list[Pair]  # the held-out figure; drawn first, so it depends only on seed and n_test


class DateRenderer:
    """Renders days as ``babel.dates.format_date`` does, numeric patterns in the first locale.

    Parsed patterns and ``babel.Locale`` objects are built once here and reused, which makes
    rendering almost twice as fast as ``format_date``; the strings are the same byte for byte
    (``format_date`` is ``parse_pattern(pattern).apply(day, locale)``).

    Args:
        locales: babel locale names, e.g. ``("en_US", "en_GB")``; the first one renders every
            numeric pattern.

    Raises:
        TypeError: ``locales`` is a single string or holds a non-string.
        ValueError: ``locales`` is empty, repeats a name, or names a locale babel does not know.
    """

    def __init__(self, locales: Sequence[str] = DEFAULT_LOCALES) -> None:
        self.locales: tuple[str, ...] = _check_locales(locales)
        parsed = {name: babel.Locale.parse(name) for name in self.locales}
        first = self.locales[0]
        # _table[locale index][pattern index] = (parsed pattern, locale that renders it)
        self._table: list[list[tuple[babel.dates.DateTimePattern, babel.Locale]]] = []
        self._numeric: dict[tuple[str, str], bool] = {}  # (pattern, locale) -> numeric
        for name in self.locales:
            row = []
            for pattern in PATTERNS:
                numeric = _is_numeric(_resolve(pattern, parsed[name]))
                self._numeric[pattern, name] = numeric
                owner = first if numeric else name
                parsed_pattern = babel.dates.parse_pattern(_resolve(pattern, parsed[owner]))
                row.append((parsed_pattern, parsed[owner]))
            self._table.append(row)

    def is_numeric(self, pattern: str, locale: str) -> bool:
        """Whether ``pattern`` in ``locale`` writes no month or weekday name.

        Args:
            pattern: one of ``PATTERNS``.
            locale: one of ``locales``.

        Returns:
            True when every field is a number (day, month number, year).

        Raises:
            ValueError: ``pattern`` is not in ``PATTERNS`` or ``locale`` not in ``locales``.
        """
        return self._numeric[self._key(pattern, locale)]

    def render(self, day: datetime.date, pattern: str, locale: str) -> str:
        """The source string for ``day``.

        Args:
            day: any date (the task draws from ``FIRST_DAY``..``LAST_DAY``).
            pattern: one of ``PATTERNS``.
            locale: one of ``locales``.

        Returns:
            ``format_date(day, format=pattern, locale=locale)``, or with the first locale when
            ``pattern`` is numeric in ``locale``.

        Raises:
            ValueError: ``pattern`` is not in ``PATTERNS`` or ``locale`` not in ``locales``.
        """
        pattern, locale = self._key(pattern, locale)
        parsed, owner = self._table[self.locales.index(locale)][PATTERNS.index(pattern)]
        return parsed.apply(day, owner)

    def stream(self, rng: random.Random) -> Iterator[Pair]:
        """Endless (source, target) pairs, each drawn from ``rng`` as day, pattern, locale.

        Args:
            rng: the only source of randomness (the locale draw is skipped with one locale).

        Yields:
            (source, ISO target) pairs; sources may repeat.
        """
        table = self._table
        n_patterns = len(PATTERNS)
        n_locales = len(table)
        randrange = rng.randrange
        while True:
            day = datetime.date.fromordinal(_FIRST_ORDINAL + randrange(_DAYS))
            pattern_index = randrange(n_patterns)
            locale_index = randrange(n_locales) if n_locales > 1 else 0
            parsed, owner = table[locale_index][pattern_index]
            yield parsed.apply(day, owner), day.isoformat()

    def _key(self, pattern: str, locale: str) -> tuple[str, str]:
        if pattern not in PATTERNS:
            raise LuongError(f"pattern: expected one of {', '.join(PATTERNS)}, got {pattern!r}")
        if locale not in self.locales:
            raise LuongError(f"locale: expected one of {', '.join(self.locales)}, got {locale!r}")
        return pattern, locale


def sample(n: int, seed: int, locales: Sequence[str] = DEFAULT_LOCALES) -> list[Pair]:
    """``n`` independent (source, target) pairs; sources may repeat.

    Deterministic: the same ``n``, ``seed`` and ``locales`` give the same list, and a shorter
    list is a prefix of a longer one. Uses its own ``random.Random(seed)``.

    Args:
        n: how many pairs.
        seed: the random seed.
        locales: babel locale names; numeric patterns are rendered in the first.

    Returns:
        The pairs, e.g. ``("Mar 5, 1979", "1979-03-05")``.

    Raises:
        TypeError: ``n`` or ``seed`` is not an int, ``locales`` is not a sequence of strings.
        ValueError: ``n`` is negative; ``locales`` is empty, repeats or names an unknown locale.
    """
    _check_count("n", n)
    _check_seed(seed)
    stream = DateRenderer(locales).stream(random.Random(seed))
    return [next(stream) for _ in range(n)]


def splits(
    n_train: int = 20_000,
    n_dev: int = 1_000,
    n_test: int = 10_000,
    seed: int = 0,
    locales: Sequence[str] = DEFAULT_LOCALES,
) -> DatesSplits:
    """Train, dev and test splits, disjoint by source, without repeated sources.

    One stream of draws (as ``sample``'s) fills test first, then dev, then train, skipping
    every source already taken. The test split therefore depends only on ``n_test``, ``seed``
    and ``locales``: ``splits(0, 0, n_test, seed).test`` is the same test set.

    Args:
        n_train: training pairs.
        n_dev: development pairs.
        n_test: test pairs.
        seed: the random seed.
        locales: babel locale names; numeric patterns are rendered in the first.

    Returns:
        ``DatesSplits(train, dev, test)``.

    Raises:
        TypeError: a count or ``seed`` is not an int, ``locales`` is not a sequence of strings.
        ValueError: a negative count; bad ``locales``; more distinct sources asked for than
            the task has (about 475,000 per locale).
    """
    for name, value in (("n_train", n_train), ("n_dev", n_dev), ("n_test", n_test)):
        _check_count(name, value)
    _check_seed(seed)
    stream = DateRenderer(locales).stream(random.Random(seed))
    taken: set[str] = set()
    test = _take_new(stream, n_test, taken)
    dev = _take_new(stream, n_dev, taken)
    train = _take_new(stream, n_train, taken)
    return DatesSplits(train=train, dev=dev, test=test)


def _take_new(stream: Iterator[Pair], n: int, taken: set[str]) -> list[Pair]:
    """The next ``n`` pairs of ``stream`` whose source is not in ``taken`` (which grows)."""
    out: list[Pair] = []
    misses = 0
    while len(out) < n:
        source, target = next(stream)
        if source in taken:
            misses += 1
            if misses == _MAX_MISSES:
                raise LuongError(
                    f"asked for more distinct sources than the task has: {len(taken)} drawn, "
                    f"then {_MAX_MISSES} draws in a row repeated one; ask for fewer pairs"
                )
            continue
        misses = 0
        taken.add(source)
        out.append((source, target))
    return out


def _resolve(pattern: str, locale: babel.Locale) -> str:
    """The CLDR pattern string: the locale's own for short/medium/long/full."""
    if pattern in _PREDEFINED:
        return babel.dates.get_date_format(pattern, locale=locale).pattern  # type: ignore[arg-type]
    return pattern


def _is_numeric(pattern: str) -> bool:
    """True when no field of ``pattern`` writes a name (month, weekday, era, quarter)."""
    for kind, value in babel.dates.tokenize_pattern(pattern):
        if kind != "field" or isinstance(value, str):
            continue
        char, count = value
        if char in "EGabB" or (char in "MLecQq" and count >= 3):
            return False
    return True


def _check_locales(locales: object) -> tuple[str, ...]:
    if isinstance(locales, str) or not isinstance(locales, Sequence):
        raise LuongTypeError(
            f"locales: expected a sequence of locale names such as ('en_US',), "
            f"got {type(locales).__name__} {locales!r}"
        )
    if not locales:
        raise LuongError("locales: expected at least one locale name, got none")
    names: list[str] = []
    for index, name in enumerate(locales):
        if not isinstance(name, str):
            raise LuongTypeError(f"locales[{index}]: expected a str, got {type(name).__name__}")
        if name in names:
            raise LuongError(f"locales[{index}]: {name!r} is listed twice")
        try:
            babel.Locale.parse(name)
        except (ValueError, babel.UnknownLocaleError):
            raise LuongError(
                f"locales[{index}]: unknown locale {name!r} (expected a babel name like 'en_US')"
            ) from None
        names.append(name)
    return tuple(names)


def _check_count(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise LuongTypeError(f"{name}: expected an int, got {type(value).__name__}")
    if value < 0:
        raise LuongError(f"{name}: expected a non-negative int, got {value}")


def _check_seed(seed: object) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise LuongTypeError(f"seed: expected an int, got {type(seed).__name__}")
