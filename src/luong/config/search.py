"""The decoding options, once: ``SearchOptions``, what to search for and how.

Every option of decoding is a field of ``SearchOptions``, with its type, its default, its
bounds and its help text (the field's metadata, made by ``option``). The dataclass checks
itself on construction: each field against its metadata (``check_field``), then the rules
between fields. Everything else is generated from it or reads it whole: the command line's
flags (``luong.cli.common.add_search_flags``), the server's request model
(``luong.server.app``), the training config's test and dev decoding (``TrainConfig``), and
``luong.search``, ``luong.translation.translator``, ``luong.evaluation.evaluate`` and ensembles,
which take a ``SearchOptions`` and read what they need from it.

**Adding an option** is a field here (``option(...)`` gives its help and bounds; a rule
between fields goes into ``__post_init__``) and the code in ``luong.search`` that reads it
(an option that forbids tokens at a step is a rule of ``luong.search.rules``, which every
search loop applies): its flag, its place in the server's schema, the explorer's control and
its checks follow from the field. ``exported=False`` marks an option the exported ONNX
runtime does not implement (``SearchOptions.for_runtime`` refuses it when set).

The bounds are where a larger value only breaks the arithmetic or costs without end:
``alpha`` at most ``MAX_ALPHA`` (GNMT tunes it in [0.6, 1]; at 5, lp stays finite in float32
for outputs of up to 10^8 tokens, where alpha = 39 overflowed at 140), ``beta`` at most
``MAX_BETA`` (GNMT: 0.2; at 10 a source position the attention never reached costs 873,
finite for any source, where beta = 1e37 made every score -inf), ``beam`` and sampling's
``nbest`` at most ``MAX_BEAM`` (each is a decoder row per source), outputs at most
``MAX_OUTPUT_LEN`` tokens and a prefix at most ``MAX_PREFIX_CHARS`` characters (each output
step is a decoder step), a seed below 2^64 (what ``torch.Generator`` takes), and the
constraints of lexically constrained search at most ``MAX_PHRASE_PIECES`` target symbols a
phrase and ``MAX_CONSTRAINT_PIECES`` a sentence (``luong.search.constrained``: each is a
column of every step's tables, and the output limit grows to hold them).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import typing
from dataclasses import dataclass, field
from typing import Any

from luong.common.errors import LuongError, LuongTypeError
from luong.common.lines import LINE_BREAKS, lone_surrogate

__all__ = [
    "COMBINE",
    "MAX_ALPHA",
    "MAX_BEAM",
    "MAX_BETA",
    "MAX_CONSTRAINT_PIECES",
    "MAX_NGRAM",
    "MAX_OUTPUT_LEN",
    "MAX_PHRASE_PIECES",
    "MAX_PREFIX_CHARS",
    "MAX_SEED",
    "MAX_TEMPERATURE",
    "OptionError",
    "OptionSpec",
    "OptionTypeError",
    "SearchOptions",
    "check_field",
    "check_seed",
    "option",
    "option_specs",
]

MAX_BEAM = 1000
"""The widest beam, and the most draws per source when sampling."""

MAX_ALPHA = 5.0
"""The largest length penalty weight (module docstring)."""

MAX_BETA = 10.0
"""The largest coverage penalty weight."""

MAX_TEMPERATURE = 100.0
"""The highest sampling temperature (above it the distribution is all but uniform)."""

MAX_OUTPUT_LEN = 10_000
"""The most tokens an output may be given (``max_len``, ``min_len``)."""

MAX_PREFIX_CHARS = 1000
"""The longest target prefix, in characters."""

MAX_PHRASE_PIECES = 100
"""The most target symbols (pieces, characters or words) of one constraint phrase
(``luong.search.constrained``)."""

MAX_CONSTRAINT_PIECES = 200
"""The most target symbols of one sentence's constraints, all its phrases together. The
output limit grows to hold them (past ``max_len``), and a step of the search weighs each
constraint token for every candidate of every beam: at this bound a sentence decodes in
seconds (docs/robustness.md), where 1,000 took a minute and 2,000 more than ten."""

MAX_NGRAM = 100
"""The longest n-gram ``no_repeat_ngram`` may name (each step compares every earlier n-gram
of an output with its last n - 1 tokens)."""

MAX_SEED = 2**64 - 1
"""The largest sampling seed (``torch.Generator.manual_seed`` takes 64 bits)."""


def check_seed(name: str, value: object) -> int:
    """``value``, refused unless it is an int from 0 to ``MAX_SEED`` (a bool is none), the
    seeds that ``torch.Generator.manual_seed`` takes, ``name`` the argument's in the message.

    Raises:
        ValueError: ``NAME: expected an int from 0 to 18446744073709551615, got VALUE``.
    """
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SEED:
        raise LuongError(f"{name}: expected an int from 0 to {MAX_SEED}, got {value!r:.60}")
    return value


COMBINE: tuple[str, ...] = ("logprob", "prob")
"""How an ensemble combines its members' next-token distributions (``luong.model.ensemble``)."""


class OptionError(LuongError):
    """A decoding option out of its bounds, or against another option. ``name`` is the
    field, ``detail`` the rest of the message; ``str(error)`` is ``"name: detail"``. The
    command line writes ``--name: detail``, the server answers 422 with the message."""

    def __init__(self, name: str, detail: str) -> None:
        super().__init__(f"{name}: {detail}")
        self.name = name
        self.detail = detail


class OptionTypeError(OptionError, LuongTypeError):
    """A decoding option of the wrong type (an ``OptionError`` and a ``TypeError``)."""


@dataclass(frozen=True)
class OptionSpec:
    """What a field's metadata says about it (``option``): the help text, the bounds."""

    help: str
    low: float | None = None  # the smallest value (numbers)
    above: float | None = None  # values must be above this (numbers, exclusive)
    high: float | None = None  # the largest value (numbers)
    choices: tuple[str, ...] | None = None  # the valid values (strings)
    max_chars: int | None = None  # the longest string
    metavar: str | None = None  # the flag's placeholder in --help
    exported: bool = True  # the exported ONNX runtime (luong.export.runtime) implements it


def option(
    help: str,
    *,
    low: float | None = None,
    above: float | None = None,
    high: float | None = None,
    choices: tuple[str, ...] | None = None,
    max_chars: int | None = None,
    metavar: str | None = None,
    exported: bool = True,
) -> dict[str, OptionSpec]:
    """A field's metadata: ``field(default=..., metadata=option("what it does", ...))``;
    ``exported=False`` for an option the exported ONNX runtime does not implement
    (``SearchOptions.for_runtime`` refuses it)."""
    return {"option": OptionSpec(help, low, above, high, choices, max_chars, metavar, exported)}


def option_specs(cls: type) -> tuple[tuple[dataclasses.Field[Any], Any, OptionSpec], ...]:
    """Each field of the options dataclass ``cls`` (``SearchOptions`` or a subclass), with
    its resolved type and its ``OptionSpec``, in order. Computed once a class (cached: a
    class's fields and hints do not change): every options value checks its fields with
    them on construction, and ``typing.get_type_hints`` each time was a fifth of a server's
    interpreter time under 64 clients (docs/performance.md)."""
    return _option_specs(cls)


@functools.cache
def _option_specs(cls: type) -> tuple[tuple[dataclasses.Field[Any], Any, OptionSpec], ...]:
    hints = typing.get_type_hints(cls)
    specs = []
    for f in dataclasses.fields(cls):
        spec = f.metadata.get("option")
        if not isinstance(spec, OptionSpec):
            raise LuongTypeError(
                f"{cls.__name__}.{f.name}: expected metadata=option(...), got none"
            )
        specs.append((f, hints[f.name], spec))
    return tuple(specs)


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _show(bound: float) -> str:
    """A bound as written: 1000, 0.5, 18446744073709551615 (not 1.84467e+19)."""
    return str(bound) if isinstance(bound, int) else f"{bound:g}"


def check_field(name: str, kind: Any, spec: OptionSpec, value: object) -> object:
    """``value`` checked against the field's type ``kind`` (int, float, bool, str, or one
    of them ``| None``) and ``spec``'s bounds; returns it (a float for a float field).

    Raises:
        OptionTypeError: the wrong type.
        OptionError: out of bounds.
    """
    args = typing.get_args(kind)
    if type(None) in args:
        if value is None:
            return None
        (kind,) = [arg for arg in args if arg is not type(None)]
    if kind is bool:
        if not isinstance(value, bool):
            raise OptionTypeError(name, f"expected true or false, got {value!r:.60}")
        return value
    if kind is str:
        if not isinstance(value, str):
            raise OptionTypeError(name, f"expected a string, got {type(value).__name__}")
        surrogate = lone_surrogate(value)
        if surrogate is not None:
            raise OptionError(
                name, f"expected valid Unicode, got a lone surrogate at character {surrogate}"
            )
        if spec.choices is not None and value not in spec.choices:
            raise OptionError(name, f"expected one of {', '.join(spec.choices)}, got {value!r:.60}")
        if spec.max_chars is not None and len(value) > spec.max_chars:
            raise OptionError(
                name, f"expected at most {spec.max_chars} characters, got {len(value)}"
            )
        return value
    if kind is int:
        low = f" >= {_show(spec.low)}" if spec.low is not None else ""
        if not isinstance(value, int) or isinstance(value, bool):
            raise OptionTypeError(name, f"expected an int{low}, got {value!r:.60}")
        if spec.low is not None and value < spec.low:
            raise OptionError(name, f"expected an int{low}, got {value!r}")
        if spec.high is not None and value > spec.high:
            raise OptionError(name, f"expected at most {_show(spec.high)}, got {value!r}")
        return value
    if kind is float:
        bound = (
            f" > {_show(spec.above)}"
            if spec.above is not None
            else f" >= {_show(spec.low)}"
            if spec.low is not None
            else ""
        )
        if not _number(value):
            raise OptionTypeError(name, f"expected a finite number{bound}, got {value!r:.60}")
        number = float(value)  # type: ignore[arg-type]
        too_low = (spec.above is not None and not number > spec.above) or (
            spec.low is not None and not number >= spec.low
        )
        if not math.isfinite(number) or too_low:
            raise OptionError(name, f"expected a finite number{bound}, got {value!r}")
        if spec.high is not None and number > spec.high:
            raise OptionError(name, f"expected at most {_show(spec.high)}, got {value!r}")
        return number
    raise LuongTypeError(f"{name}: options are int, float, bool or str (or None), got {kind}")


@dataclass(frozen=True)
class SearchOptions:
    """How to decode: every option of ``luong.search``, checked on construction.

    The defaults are greedy search with the model's own output limit. Each field's help
    text is the one ``luong translate --help`` and the server's schema show.

    Raises:
        OptionError (a ``ValueError``): a value out of its bounds or against another option,
            named with the value (``"nbest: expected at most beam = 1, got 2"``).
        OptionTypeError (also a ``TypeError``): a value of the wrong type.
    """

    beam: int = field(
        default=1,
        metadata=option(
            f"beam size k, 1 to {MAX_BEAM} (1: greedy search)", low=1, high=MAX_BEAM, metavar="K"
        ),
    )
    nbest: int = field(
        default=1,
        metadata=option(
            "outputs per source, best first, at most the beam (with sample: draws per source)",
            low=1,
            high=MAX_BEAM,
            metavar="N",
        ),
    )
    alpha: float = field(
        default=0.0,
        metadata=option(
            f"length penalty weight, lp = ((5 + |Y|) / 6) ** alpha, 0 to {MAX_ALPHA:g} "
            "(0: rank by log P)",
            low=0.0,
            high=MAX_ALPHA,
        ),
    )
    beta: float = field(
        default=0.0,
        metadata=option(
            f"coverage penalty weight, beta * sum_s log(min(sum_t a_ts, 1)), 0 to {MAX_BETA:g} "
            "(0: none)",
            low=0.0,
            high=MAX_BETA,
        ),
    )
    min_len: int = field(
        default=0,
        metadata=option(
            "EOS is forbidden until the output has this many tokens (each source's limit "
            "minus one at most; 0: no minimum)",
            low=0,
            high=MAX_OUTPUT_LEN,
            metavar="N",
        ),
    )
    no_repeat_ngram: int = field(
        default=0,
        metadata=option(
            f"no n-gram of this many tokens twice in an output, the prefix included, 1 to "
            f"{MAX_NGRAM} (1: no token twice; 0: no such rule)",
            low=0,
            high=MAX_NGRAM,
            metavar="N",
            exported=False,
        ),
    )
    max_len: int | None = field(
        default=None,
        metadata=option(
            f"the most output tokens, EOS included, at most {MAX_OUTPUT_LEN} (default: twice "
            "the source's length plus 10)",
            low=1,
            high=MAX_OUTPUT_LEN,
            metavar="N",
        ),
    )
    prefix: str = field(
        default="",
        metadata=option(
            "target text every output starts with (teacher-forced; the search continues "
            f"from it), one line of at most {MAX_PREFIX_CHARS} characters (empty: none)",
            max_chars=MAX_PREFIX_CHARS,
            metavar="TEXT",
            exported=False,
        ),
    )
    sample: bool = field(
        default=False,
        metadata=option(
            "draw outputs instead of searching (nbest draws per source; beam 1)",
            exported=False,
        ),
    )
    temperature: float = field(
        default=1.0,
        metadata=option(
            f"with sample: draw from softmax(log p / T), 0 < T <= {MAX_TEMPERATURE:g}",
            above=0.0,
            high=MAX_TEMPERATURE,
            metavar="T",
            exported=False,
        ),
    )
    top_k: int | None = field(
        default=None,
        metadata=option(
            "with sample: draw from the K most probable tokens only (default: all)",
            low=1,
            metavar="K",
            exported=False,
        ),
    )
    seed: int | None = field(
        default=None,
        metadata=option(
            "with sample: the seed of the draws, 0 to 2^64 - 1, for the same outputs again "
            "(default: a fresh seed)",
            low=0,
            high=MAX_SEED,
            metavar="N",
            exported=False,
        ),
    )
    replace_unk: bool = field(
        default=False,
        metadata=option(
            "replace each <unk> in an output by the source token it attended to most "
            "(Luong et al. 2015, the rare word problem)",
            exported=False,
        ),
    )
    shortlist: int | None = field(
        default=None,
        metadata=option(
            "the output layer and the softmax over a lexical shortlist only (luong shortlist): "
            "the K most likely target pieces of each source piece in the batch, the most "
            "frequent ones and the special symbols; 0: the full vocabulary, exact (default: "
            "the model folder's shortlist whole when it has one, else the full vocabulary)",
            low=0,
            metavar="K",
        ),
    )
    combine: str = field(
        default=COMBINE[0],
        metadata=option(
            "an ensemble's next-token distribution: the mean of the members' "
            "log-probabilities, renormalised (logprob), or of their probabilities (prob)",
            choices=COMBINE,
            exported=False,
        ),
    )

    def __post_init__(self) -> None:
        for f, kind, spec in option_specs(type(self)):
            value = check_field(f.name, kind, spec, getattr(self, f.name))
            object.__setattr__(self, f.name, value)  # ints given for floats become floats
        if self.sample and self.beam != 1:
            raise OptionError(
                "beam", f"sampling draws one token a step, expected 1, got {self.beam}"
            )
        if not self.sample:
            if self.nbest > self.beam:
                raise OptionError("nbest", f"expected at most beam = {self.beam}, got {self.nbest}")
            for name, unset in (("temperature", 1.0), ("top_k", None), ("seed", None)):
                if getattr(self, name) != unset:
                    raise OptionError(name, "only when sampling")
        if self.shortlist and self.sample:
            raise OptionError(
                "shortlist",
                f"sampling draws from the whole vocabulary, expected 0 or none, got "
                f"{self.shortlist}",
            )
        if self.min_len and (self.prefix or self.sample):
            raise OptionError("min_len", f"not with a prefix or sampling, got {self.min_len}")
        if self.max_len is not None and self.min_len >= self.max_len:
            raise OptionError(
                "min_len",
                f"expected < max_len = {self.max_len} (EOS could never come), got {self.min_len}",
            )
        if LINE_BREAKS.intersection(self.prefix):
            raise OptionError(
                "prefix", "expected one line of text, got a line break, tab or NUL in it"
            )

    @property
    def greedy(self) -> bool:
        """Whether this is plain greedy search (one beam, no penalty, minimum, prefix, step
        rule or sampling): ``luong.search`` then takes its shortest path."""
        return (
            self.beam == 1
            and not (self.alpha or self.beta or self.min_len or self.prefix)
            and not (self.no_repeat_ngram or self.sample)
        )

    def for_runtime(self) -> dict[str, Any]:
        """These options as the exported ONNX runtime's ``SearchOptions`` takes them
        (``luong.export.runtime``): the fields it implements (``OptionSpec.exported``).

        Raises:
            OptionError: an option the runtime does not implement set to other than its
                default (``"no_repeat_ngram: the exported ONNX runtime does not implement
                it, got 3"``).
        """
        kept = {}
        for f, _, spec in option_specs(type(self)):
            value = getattr(self, f.name)
            if spec.exported:
                kept[f.name] = value
            elif value != f.default:
                raise OptionError(
                    f.name, f"the exported ONNX runtime does not implement it, got {value!r:.60}"
                )
        return kept

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
