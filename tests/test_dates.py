"""Tests for luong.tasks.dates: well-posedness, fidelity to babel, determinism, splits."""

from __future__ import annotations

import datetime
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from itertools import cycle

import babel.dates
import pytest

from luong.tasks import dates
from luong.tasks.dates import PATTERNS, DateRenderer, DatesSplits, sample, splits

MIXED = ("en_US", "en_GB", "de_DE", "fr_FR")
ISO = re.compile(r"\d{4}-\d{2}-\d{2}")


def _every_day() -> list[datetime.date]:
    first = dates.FIRST_DAY.toordinal()
    return [datetime.date.fromordinal(k) for k in range(first, dates.LAST_DAY.toordinal() + 1)]


def _two_targets(pairs: list[tuple[str, str]]) -> dict[str, set[str]]:
    targets: defaultdict[str, set[str]] = defaultdict(set)
    for source, target in pairs:
        targets[source].add(target)
    return {source: seen for source, seen in targets.items() if len(seen) > 1}


# Well posed: one target per source.


def test_no_source_has_two_targets_in_200k_samples() -> None:
    assert _two_targets(sample(200_000, seed=1)) == {}


def test_no_source_has_two_targets_in_200k_mixed_locale_samples() -> None:
    assert _two_targets(sample(200_000, seed=2, locales=MIXED)) == {}


def test_mixed_locales_are_well_posed_exhaustively() -> None:
    """Every day under every (pattern, locale) the sampler can draw: 46 x 36,525 renderings.

    en_US comes first, so this covers en_US alone (all 14 patterns) as well.
    """
    renderer = DateRenderer(MIXED)
    target_of: dict[str, str] = {}
    collisions = []
    for locale in MIXED:
        for pattern in PATTERNS:
            if locale != MIXED[0] and renderer.is_numeric(pattern, locale):
                continue  # rendered by the first locale, already covered
            for day in _every_day():
                source, target = renderer.render(day, pattern, locale), day.isoformat()
                if target_of.setdefault(source, target) != target:
                    collisions.append((source, target_of[source], target))
    assert collisions == []
    assert len(target_of) > 1_000_000


def test_two_digit_years_cover_the_window_once() -> None:
    renderer = DateRenderer()
    for day in (datetime.date(1950, 1, 1), datetime.date(1999, 12, 31)):
        assert renderer.render(day, "d MM yy", "en_US").endswith(f" {day.year - 1900}")
    assert renderer.render(datetime.date(2049, 12, 31), "dd.MM.yy", "en_US") == "31.12.49"
    assert renderer.render(datetime.date(2000, 1, 2), "dd.MM.yy", "en_US") == "02.01.00"


def test_short_in_en_us_is_month_day_two_digit_year() -> None:
    locale = babel.Locale.parse("en_US")
    assert babel.dates.get_date_format("short", locale=locale).pattern == "M/d/yy"
    assert DateRenderer().render(datetime.date(1979, 3, 5), "short", "en_US") == "3/5/79"


def test_patterns_use_calendar_year_only() -> None:
    # Week year ``Y`` differs from ``y`` around New Year; the predefined formats too.
    for locale in MIXED:
        parsed = babel.Locale.parse(locale)
        for pattern in PATTERNS:
            if pattern in ("short", "medium", "long", "full"):
                pattern = babel.dates.get_date_format(pattern, locale=parsed).pattern  # type: ignore[arg-type]
            assert "Y" not in pattern.replace("'", ""), (locale, pattern)
    renderer = DateRenderer()
    assert renderer.render(datetime.date(2049, 12, 31), "d MMM y", "en_US") == "31 Dec 2049"
    assert renderer.render(datetime.date(1950, 1, 1), "long", "en_US") == "January 1, 1950"


# Faithful to babel.


def test_renderer_is_byte_identical_to_format_date() -> None:
    renderer = DateRenderer(MIXED)
    days = _every_day()[::97] + [dates.FIRST_DAY, dates.LAST_DAY, datetime.date(2000, 2, 29)]
    for locale in MIXED:
        for pattern in PATTERNS:
            owner = MIXED[0] if renderer.is_numeric(pattern, locale) else locale
            for day in days:
                expected = babel.dates.format_date(day, format=pattern, locale=owner)
                assert renderer.render(day, pattern, locale) == expected


def test_numeric_patterns_render_in_the_first_locale() -> None:
    renderer = DateRenderer(("de_DE", "en_US"))
    day = datetime.date(1979, 3, 5)
    assert renderer.is_numeric("short", "en_US")
    assert renderer.is_numeric("medium", "de_DE")  # dd.MM.y
    assert not renderer.is_numeric("medium", "en_US")  # MMM d, y
    assert not renderer.is_numeric("full", "de_DE")
    assert renderer.is_numeric("d MM yy", "de_DE")
    assert renderer.render(day, "short", "en_US") == "05.03.79"  # de_DE's dd.MM.yy, not M/d/yy
    assert renderer.render(day, "medium", "en_US") == "Mar 5, 1979"
    assert renderer.render(day, "full", "de_DE") == "Montag, 5. März 1979"


def test_renderer_rejects_unknown_pattern_and_locale() -> None:
    renderer = DateRenderer()
    with pytest.raises(ValueError, match="pattern: expected one of short, .*, got 'YYYY'"):
        renderer.render(dates.FIRST_DAY, "YYYY", "en_US")
    with pytest.raises(ValueError, match="locale: expected one of en_US, got 'en_GB'"):
        renderer.render(dates.FIRST_DAY, "short", "en_GB")


# What a sample looks like.


def test_known_example() -> None:
    assert DateRenderer().render(datetime.date(1979, 3, 5), "full", "en_US") == (
        "Monday, March 5, 1979"
    )


def test_targets_are_iso_dates_in_the_window() -> None:
    for _, target in sample(5_000, seed=3):
        assert ISO.fullmatch(target)
        assert dates.FIRST_DAY <= datetime.date.fromisoformat(target) <= dates.LAST_DAY


def test_full_pattern_samples_parse_back_to_their_target() -> None:
    parsed = 0
    for source, target in sample(3_000, seed=4):
        try:
            day = datetime.datetime.strptime(source, "%A, %B %d, %Y").date()
        except ValueError:
            continue  # another pattern
        assert day.isoformat() == target
        parsed += 1
    assert parsed > 100  # about 3,000 / 14


def test_every_pattern_occurs_and_explains_every_sample() -> None:
    renderer = DateRenderer()
    n = 14_000
    counts: Counter[str] = Counter()
    for source, target in sample(n, seed=5):
        day = datetime.date.fromisoformat(target)
        matching = [p for p in PATTERNS if renderer.render(day, p, "en_US") == source]
        assert matching, source  # every source is one of the patterns' renderings
        counts.update(matching)
    for pattern in PATTERNS:
        # About n / 14 = 1,000 each (long and "MMMM d, y" render alike and share 2,000).
        assert counts[pattern] > 800, (pattern, counts)


def test_source_days_are_spread_over_the_window() -> None:
    years = Counter(int(target[:4]) for _, target in sample(20_000, seed=6))
    assert set(years) == set(range(1950, 2050))


# Determinism.


def test_sample_is_deterministic_by_seed() -> None:
    assert sample(500, seed=7) == sample(500, seed=7)
    assert sample(500, seed=7) != sample(500, seed=8)
    assert sample(200, seed=7) == sample(500, seed=7)[:200]
    assert sample(500, seed=7, locales=MIXED) == sample(500, seed=7, locales=MIXED)
    assert sample(0, seed=7) == []


def test_sample_leaves_global_random_alone() -> None:
    import random

    random.seed(123)
    expected = random.random()
    random.seed(123)
    sample(100, seed=9)
    assert random.random() == expected


def test_mixed_locales_use_every_locale() -> None:
    sources = [source for source, _ in sample(2_000, seed=10, locales=MIXED)]
    assert any("März" in s for s in sources)
    assert any("mars" in s for s in sources)
    assert any(re.match(r"[A-Z][a-z]+day, \d", s) for s in sources)  # en_GB full


# Splits.


def test_default_splits_sizes_disjoint_and_without_repeats() -> None:
    data = splits()
    assert isinstance(data, DatesSplits)
    assert (len(data.train), len(data.dev), len(data.test)) == (20_000, 1_000, 10_000)
    train, dev, test = ({s for s, _ in part} for part in (data.train, data.dev, data.test))
    assert (len(train), len(dev), len(test)) == (20_000, 1_000, 10_000)  # no repeats inside
    assert not train & dev and not train & test and not dev & test
    with pytest.raises(AttributeError):
        data.train = []  # type: ignore[misc]


def test_splits_are_deterministic_and_test_depends_only_on_its_size() -> None:
    a = splits(300, 50, 200, seed=11)
    assert a == splits(300, 50, 200, seed=11)
    assert a.test != splits(300, 50, 200, seed=12).test
    other = splits(0, 0, 200, seed=11)
    assert other.test == a.test and other.train == [] and other.dev == []
    assert splits(300, 50, 200, seed=11, locales=MIXED) != a


def test_splits_mixed_locales_are_disjoint() -> None:
    data = splits(2_000, 200, 1_000, seed=13, locales=MIXED)
    sources = [s for part in (data.train, data.dev, data.test) for s, _ in part]
    assert len(sources) == len(set(sources)) == 3_200


def test_splits_stop_when_the_sources_run_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dates, "_MAX_MISSES", 50)
    stream = cycle([("a", "1"), ("b", "2")])
    with pytest.raises(ValueError, match="more distinct sources than the task has: 2 drawn"):
        dates._take_new(stream, 3, set())


# Validation.


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: sample(-1, 0), ValueError, "n: expected a non-negative int, got -1"),
        (lambda: sample(2.0, 0), TypeError, "n: expected an int, got float"),  # type: ignore[arg-type]
        (lambda: sample(True, 0), TypeError, "n: expected an int, got bool"),
        (lambda: sample(1, "0"), TypeError, "seed: expected an int, got str"),  # type: ignore[arg-type]
        (lambda: splits(n_dev=-5), ValueError, "n_dev: expected a non-negative int, got -5"),
        (lambda: splits(n_test=-1), ValueError, "n_test: expected a non-negative int"),
        (lambda: splits(n_train=-1), ValueError, "n_train: expected a non-negative int"),
        (
            lambda: sample(1, 0, locales=("en_US", "xx_YY")),
            ValueError,
            r"locales\[1\]: unknown locale 'xx_YY'",
        ),
        (lambda: splits(locales=("en-US",)), ValueError, "unknown locale 'en-US'"),
        (lambda: sample(1, 0, locales="en_US"), TypeError, "got str 'en_US'"),
        (lambda: sample(1, 0, locales=()), ValueError, "at least one locale"),
        (lambda: sample(1, 0, locales=("en_US", "en_US")), ValueError, "listed twice"),
        (
            lambda: sample(1, 0, locales=(None,)),  # type: ignore[arg-type]
            TypeError,
            r"locales\[0\]: expected a str",
        ),
    ],
)
def test_arguments_are_validated(
    call: Callable[[], object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        call()
