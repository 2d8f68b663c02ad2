"""The attention zoo: Luong et al. (2015)'s attentions trained side by side (``luong zoo``).

Every variant of the paper's Table 4, global attention with the location, dot, general and
concat scores, local-m and local-p with dot and general, plus the scaled dot and Bahdanau's
additive attention, each with and without input feeding, is trained on one task with the same
budget, data and seeds. Each run is reported by its test exact match, dev perplexity (exp of
the mean per-token cross-entropy of the teacher-forced dev set), training seconds and
parameter count; ``write_report`` turns the runs into a Markdown table and a figure.

The budget is a number of optimizer steps N: one epoch over the first N x batch_size training
pairs (so every run sees the same pairs in the same seeded order), the task's other training
settings unchanged except the warm-up, a tenth of N.

Translation (``ZooSettings(task="translation", train=..., dev=..., test=...)``) runs on your
own TSV files with the translation preset (``luong.tasks.translation``: its subword model,
architecture and optimizer) in batches of ``batch_size`` pairs: the N x batch_size training
pairs are as many passes over the shuffled corpus as that takes, each run is scored by test
BLEU and chrF (sacreBLEU, greedy search) and the table ranks by BLEU.
"""

from __future__ import annotations

import dataclasses
import json
import math
import platform
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from luong.common.checks import check_positive_int
from luong.common.errors import LuongError, LuongTypeError
from luong.common.files import read_json, write_text
from luong.config.presets import SPLITS, ZOO_PRESETS
from luong.config.search import check_seed
from luong.evaluation.evaluate import dev_loss
from luong.model.seq2seq import Seq2Seq
from luong.tasks import OWN_DATA, TaskData, load_task, task_configs
from luong.training.run import train

__all__ = [
    "MAX_ZOO_SEEDS",
    "FILES",
    "VARIANTS",
    "ZOO_TASKS",
    "Variant",
    "ZooRun",
    "ZooSettings",
    "dev_perplexity",
    "plot_zoo",
    "run_zoo",
    "summarize",
    "write_report",
]

Pair = tuple[str, str]
BEGIN = "<!-- zoo:begin -->"
END = "<!-- zoo:end -->"


@dataclass(frozen=True)
class Variant:
    """One attention: a score (``Seq2SeqConfig.attention``) and global or local."""

    attention: str  # "location", "dot", "scaled_dot", "general", "concat" or "bahdanau"
    local: str = "none"  # "none" (global), "monotonic" (local-m) or "predictive" (local-p)

    @property
    def name(self) -> str:
        """As in the paper's Table 4: "global (dot)", "local-p (general)", "Bahdanau"."""
        if self.attention == "bahdanau":
            return "Bahdanau (additive)"
        kind = {"none": "global", "monotonic": "local-m", "predictive": "local-p"}[self.local]
        return f"{kind} ({self.attention})"


VARIANTS: tuple[Variant, ...] = (
    Variant("location"),
    Variant("dot"),
    Variant("scaled_dot"),
    Variant("general"),
    Variant("concat"),
    Variant("dot", "monotonic"),
    Variant("general", "monotonic"),
    Variant("dot", "predictive"),
    Variant("general", "predictive"),
    Variant("bahdanau"),
)


ZOO_TASKS = ZOO_PRESETS  # translation runs on your own files; not wmt14 (presets.py)
FILES = SPLITS  # translation's data: TSV files of the user's


MAX_ZOO_SEEDS = 1000
"""The most seeds a zoo trains each variant with (``ZooSettings.seeds``): a thousand
trainings of each variant is a study's size; more was a typo that would never end."""


@dataclass(frozen=True)
class ZooSettings:
    """What every run of one zoo shares (runs are reused only under the same settings)."""

    task: str = "dates"  # "dates", "g2p" or "translation"
    steps: int = 200  # N: optimizer steps per run (one epoch over N x batch_size pairs)
    seeds: int = 3  # seeds 0 .. seeds - 1 (model initialisation and data order)
    window: int = 4  # D of local attention
    n_dev: int = 1000  # dev sources (dates: pairs; g2p: words, with all their pronunciations)
    n_test: int = 2000  # test sources, as n_dev
    data_seed: int = 0  # the task's data
    train: str = ""  # translation: the training pairs, a source<TAB>target file
    dev: str = ""  # translation: the dev pairs (dev perplexity and BLEU)
    test: str = ""  # translation: the test pairs (the table's BLEU)
    vocab_size: int = 0  # translation: subword pieces (0: the preset's)

    def __post_init__(self) -> None:
        if self.task not in ZOO_TASKS:
            raise LuongError(
                f"task: expected one of {', '.join(ZOO_TASKS)} (the zoo's tasks), got {self.task!r}"
            )
        files = {name: getattr(self, name) for name in FILES}
        for name, value in files.items():
            if not isinstance(value, str):
                raise LuongTypeError(
                    f"{name}: expected a file name (str), got {type(value).__name__}"
                )
        if self.task == "translation" and not all(files.values()):
            missing = ", ".join(name for name, value in files.items() if not value)
            raise LuongError(
                f"translation: expected train, dev and test TSV files, missing {missing}"
            )
        if self.task != "translation" and any(files.values()):
            given = ", ".join(name for name, value in files.items() if value)
            raise LuongError(f"{given}: files only for the translation zoo, got task {self.task!r}")
        if isinstance(self.vocab_size, bool) or not isinstance(self.vocab_size, int):
            raise LuongError(f"vocab_size: expected an int >= 0, got {self.vocab_size!r}")
        if self.vocab_size < 0 or (self.vocab_size and self.task != "translation"):
            raise LuongError(
                f"vocab_size: expected 0, or pieces for the translation zoo, got {self.vocab_size}"
            )
        for name in ("steps", "seeds", "window", "n_dev", "n_test"):
            value = getattr(self, name)
            check_positive_int(name, value)
        if self.seeds > MAX_ZOO_SEEDS:
            raise LuongError(
                f"seeds: expected at most {MAX_ZOO_SEEDS} (each trains every variant), "
                f"got {self.seeds}"
            )
        check_seed("data_seed", self.data_seed)


@dataclass(frozen=True)
class ZooRun:
    """The result of one run."""

    variant: str  # Variant.name
    attention: str
    local: str
    input_feed: bool
    seed: int
    test_exact_match: float
    dev_exact_match: float
    dev_perplexity: float
    train_seconds: float  # the training loop, its one dev evaluation at the end included
    parameters: int
    steps: int
    seconds: float = 0.0  # the whole run: training, test decoding, dev perplexity
    test_bleu: float | None = None  # translation: sacreBLEU of the test outputs
    test_chrf: float | None = None
    dev_bleu: float | None = None

    @property
    def score(self) -> float:
        """What the table ranks by, 0 to 100: test BLEU for translation, else exact match."""
        return self.test_bleu if self.test_bleu is not None else 100 * self.test_exact_match


def dev_perplexity(model: Seq2Seq, pairs: Sequence[Pair], batch_size: int = 500) -> float:
    """exp of the mean cross-entropy per target token (EOS included) of the teacher-forced
    ``pairs`` (``luong.evaluation.evaluate.dev_loss``): the model's perplexity on them.

    Raises:
        ValueError: no pairs, or ``batch_size < 1``.
    """
    return math.exp(dev_loss(model, pairs, batch_size))


def zoo_data(settings: ZooSettings) -> TaskData:
    """The task's data cut to the zoo's budget: N x batch_size training pairs, the first
    ``n_dev`` and ``n_test`` sources (a G2P word with all its pronunciations), in an order
    that follows from ``data_seed``."""
    train_config = task_configs(settings.task).train
    n_train = settings.steps * train_config.batch_size
    if settings.task == "translation":
        data = load_task(OWN_DATA, train=settings.train, dev=settings.dev, test=settings.test)
        rng = random.Random(settings.data_seed)
        train_pairs: list[Pair] = []
        while len(train_pairs) < n_train:  # as many shuffled passes as the budget takes
            corpus = list(data.train)
            rng.shuffle(corpus)
            train_pairs += corpus
        data = dataclasses.replace(
            data,
            train=train_pairs[:n_train],
            dev=_first_sources(data.dev, settings.n_dev, rng),
            test=_first_sources(data.test, settings.n_test, rng),
        )
    elif settings.task == "dates":
        data = load_task(
            "dates",
            seed=settings.data_seed,
            n_train=n_train,
            n_dev=settings.n_dev,
            n_test=settings.n_test,
        )
    else:
        data = load_task(settings.task, seed=settings.data_seed)
        rng = random.Random(settings.data_seed)
        train_pairs = list(data.train)
        rng.shuffle(train_pairs)
        data = dataclasses.replace(
            data,
            train=train_pairs[:n_train],
            dev=_first_sources(data.dev, settings.n_dev, rng),
            test=_first_sources(data.test, settings.n_test, rng),
        )
    return data


def _first_sources(pairs: Sequence[Pair], n: int, rng: random.Random) -> list[Pair]:
    """The pairs of ``n`` sources drawn with ``rng`` (every target of a source kept)."""
    sources = sorted({source for source, _ in pairs})
    rng.shuffle(sources)
    keep = set(sources[:n])
    return [pair for pair in pairs if pair[0] in keep]


def _run_key(variant: Variant, input_feed: bool, seed: int) -> tuple[str, bool, int]:
    return variant.name, input_feed, seed


def run_zoo(
    settings: ZooSettings,
    *,
    variants: Sequence[Variant] = VARIANTS,
    feeds: Sequence[bool] = (True, False),
    results: str | Path | None = None,
    log: Callable[[str], None] | None = None,
) -> list[ZooRun]:
    """Train every variant x input feeding x seed with the same budget.

    Args:
        settings: the task, budget, seeds and window.
        variants: the attentions (default: all of ``VARIANTS``).
        feeds: input feeding on, off, or both.
        results: a JSON file of the runs, written after each run. When it exists and holds
            the same settings, its runs are kept and only the missing ones train (a killed
            zoo continues); other settings raise ``ValueError``.
        log: where to report each run (default: nothing).

    Returns:
        the runs, in the order variants x feeds x seeds.

    Raises:
        ValueError: ``results`` holds runs of other settings.
    """

    say = log or (lambda message: None)
    done: dict[tuple[str, bool, int], ZooRun] = {}
    path = Path(results) if results is not None else None
    if path is not None and path.is_file():
        for run in _read_results(path, settings):
            done[(run.variant, run.input_feed, run.seed)] = run
    data = zoo_data(settings)
    base_model, base_train, vocab_config = task_configs(settings.task)
    if settings.vocab_size:
        vocab_config = dataclasses.replace(vocab_config, vocab_size=settings.vocab_size)
    task = OWN_DATA if settings.task == "translation" else settings.task
    # The location score's fixed length must cover every source (EOS included).
    longest = max(len(s) for s, _ in (*data.train, *data.dev, *data.test))
    runs: list[ZooRun] = []
    total = len(variants) * len(feeds) * settings.seeds
    for variant in variants:
        for input_feed in feeds:
            for seed in range(settings.seeds):
                key = _run_key(variant, input_feed, seed)
                if key in done:
                    runs.append(done[key])
                    continue
                model_config = dataclasses.replace(
                    base_model,
                    attention=variant.attention,
                    local=variant.local,
                    window=settings.window,
                    max_src_len=max(base_model.max_src_len, longest),
                    input_feed=input_feed,
                )
                train_config = dataclasses.replace(
                    base_train,
                    epochs=1,
                    batch_tokens=0,  # batches of batch_size pairs: N steps are one epoch
                    warmup_steps=max(1, settings.steps // 10),
                    eval_every=settings.steps,  # one dev evaluation, at the end
                    test_beam=1,  # greedy search, as for the other tasks
                    seed=seed,
                    progress=False,
                )
                started = time.perf_counter()
                result = train(
                    task,
                    None,
                    model_config=model_config,
                    train_config=train_config,
                    vocab_config=vocab_config,
                    data=data,
                    log=say,
                )
                m = result.metrics
                perplexity = dev_perplexity(result.model, data.dev)
                bleu = {
                    key: float(m[key]) if m.get(key) is not None else None
                    for key in ("test_bleu", "test_chrf", "dev_bleu")
                }
                run = ZooRun(
                    variant=variant.name,
                    attention=variant.attention,
                    local=variant.local,
                    input_feed=input_feed,
                    seed=seed,
                    test_exact_match=float(m["test_exact_match"]),
                    dev_exact_match=float(m["dev_exact_match"]),
                    dev_perplexity=perplexity,
                    train_seconds=float(m["train_seconds"]),
                    parameters=int(m["parameters"]),
                    steps=int(m["steps"]),
                    seconds=time.perf_counter() - started,
                    **bleu,
                )
                runs.append(run)
                done[key] = run
                scored = "BLEU" if run.test_bleu is not None else "EM"
                say(
                    f"[{len(done)}/{total}] {variant.name:22s} feed={int(input_feed)} "
                    f"seed={seed}: test {scored} {run.score:.2f}, dev ppl "
                    f"{run.dev_perplexity:.3f}, {run.train_seconds:.1f} s train, "
                    f"{run.seconds:.1f} s in all"
                )
                if path is not None:
                    _write_results(path, settings, list(done.values()))
    return runs


def _read_results(path: Path, settings: ZooSettings) -> list[ZooRun]:
    """The runs a results file holds, when it holds runs of ``settings``."""
    saved = read_json(path)
    if not isinstance(saved, dict) or not isinstance(saved.get("runs", []), list):
        raise LuongError(
            f"{path}: not a zoo results file (expected a JSON object with settings and runs); "
            "delete it or choose another --out"
        )
    if saved.get("settings") != dataclasses.asdict(settings):
        raise LuongError(
            f"{path} holds runs of other settings ({saved.get('settings')}); delete it or "
            "choose another --out"
        )
    runs = []
    for number, entry in enumerate(saved.get("runs", []), start=1):
        try:
            runs.append(ZooRun(**entry))
        except TypeError:
            raise LuongError(
                f"{path}: run {number} is not a zoo run ({entry!r:.80}); delete the file or "
                "choose another --out"
            ) from None
    return runs


def _write_results(path: Path, settings: ZooSettings, runs: Sequence[ZooRun]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "settings": dataclasses.asdict(settings),
        "runs": [dataclasses.asdict(r) for r in runs],
    }
    write_text(path, json.dumps(payload, indent=1) + "\n")


@dataclass(frozen=True)
class Row:
    """One line of the table: a variant with or without input feeding, over its seeds."""

    variant: str
    input_feed: bool
    seeds: int
    score_mean: float  # ZooRun.score: test BLEU, or test exact match in %
    score_sd: float  # sample standard deviation over seeds (0 for one seed)
    score_min: float
    score_max: float
    ppl_mean: float
    seconds_mean: float
    parameters: int


def summarize(runs: Sequence[ZooRun]) -> list[Row]:
    """Group runs by (variant, input feeding), in first-seen order."""
    groups: dict[tuple[str, bool], list[ZooRun]] = {}
    for run in runs:
        groups.setdefault((run.variant, run.input_feed), []).append(run)
    rows = []
    for (variant, feed), group in groups.items():
        scores = [r.score for r in group]
        rows.append(
            Row(
                variant=variant,
                input_feed=feed,
                seeds=len(group),
                score_mean=statistics.fmean(scores),
                score_sd=statistics.stdev(scores) if len(scores) > 1 else 0.0,
                score_min=min(scores),
                score_max=max(scores),
                ppl_mean=statistics.fmean(r.dev_perplexity for r in group),
                seconds_mean=statistics.fmean(r.train_seconds for r in group),
                parameters=group[0].parameters,
            )
        )
    return rows


def _table(rows: Sequence[Row], measure: str, seeds: int) -> str:
    """The Markdown table; with one seed a plain score to two decimals (no spread to show)."""
    spread = ", mean ± sd (min - max)" if seeds > 1 else ""
    lines = [
        f"| attention | input feeding | {measure}{spread} "
        "| dev perplexity | training s | parameters |",
        "|---|---|---|---:|---:|---:|",
    ]
    for r in rows:
        score = (
            f"{r.score_mean:.1f} ± {r.score_sd:.1f} ({r.score_min:.1f} - {r.score_max:.1f})"
            if seeds > 1
            else f"{r.score_mean:.2f}"
        )
        lines.append(
            f"| {r.variant} | {'yes' if r.input_feed else 'no'} | {score} "
            f"| {r.ppl_mean:.3f} | {r.seconds_mean:.1f} | {r.parameters:,} |"
        )
    return "\n".join(lines)


def plot_zoo(
    rows: Sequence[Row],
    path: str | Path,
    *,
    title: str = "",
    measure: str = "test exact match (%)",
    dpi: int = 100,
) -> Path:
    """Two panels: the score (``measure``; bars: mean; whiskers: min to max over seeds) and
    dev perplexity, per variant, with and without input feeding. PNG, Agg, no pyplot."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    variants = list(dict.fromkeys(r.variant for r in rows))
    by_key = {(r.variant, r.input_feed): r for r in rows}
    figure = Figure(figsize=(12, 4.8))
    FigureCanvasAgg(figure)
    axes = figure.subplots(1, 2)
    width = 0.4
    for offset, feed, colour in ((-width / 2, True, "tab:blue"), (width / 2, False, "tab:orange")):
        xs, means, lows, highs, ppls = [], [], [], [], []
        for i, name in enumerate(variants):
            row = by_key.get((name, feed))
            if row is None:
                continue
            xs.append(i + offset)
            means.append(row.score_mean)
            lows.append(row.score_mean - row.score_min)
            highs.append(row.score_max - row.score_mean)
            ppls.append(row.ppl_mean)
        label = "input feeding" if feed else "no input feeding"
        axes[0].bar(xs, means, width, yerr=[lows, highs], capsize=2, color=colour, label=label)
        axes[1].bar(xs, ppls, width, color=colour, label=label)
    axes[0].set_ylabel(f"{measure}, whiskers: min to max over seeds")
    axes[0].set_ylim(0, 100 if "exact" in measure else None)
    axes[1].set_ylabel("dev perplexity (mean over seeds)")
    axes[1].set_ylim(bottom=1.0)
    for axis in axes:
        axis.set_xticks(range(len(variants)))
        axis.set_xticklabels(variants, rotation=35, ha="right", fontsize=8)
        axis.grid(axis="y", alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="upper right", ncol=2, fontsize=8, frameon=False)
    if title:
        figure.suptitle(title, fontsize=10, x=0.02, ha="left")
    figure.tight_layout(rect=(0, 0, 1, 0.95))
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=dpi)
    return out


def write_report(
    runs: Sequence[ZooRun],
    settings: ZooSettings,
    out: str | Path,
    *,
    command: str,
) -> tuple[Path, Path]:
    """Write ``OUT/TASK.md`` (the table, the settings, the command) and ``OUT/TASK.png``.

    The generated part of the Markdown lies between ``<!-- zoo:begin -->`` and
    ``<!-- zoo:end -->``; when the file exists, the text around the markers (a discussion
    written by hand) is kept.

    Returns:
        the Markdown and PNG paths.
    """
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    rows = summarize(runs)
    translation = settings.task == "translation"
    measure = "test BLEU" if translation else "test exact match (%)"
    png = plot_zoo(
        rows,
        folder / f"{settings.task}.png",
        title=f"{settings.task}: {settings.steps} steps, {settings.seeds} seeds, D = "
        f"{settings.window}",
        measure=measure,
    )
    md = folder / f"{settings.task}.md"
    model_config, train_config, _ = task_configs(settings.task)
    batch = train_config.batch_size
    model = (
        "the `make demo` model otherwise (2 x 64 bi-GRU encoder, 128-unit GRU decoder)"
        if settings.task == "dates"
        else f"the {settings.task} defaults otherwise ({model_config.enc_layers} x "
        f"{model_config.enc_hidden} bi-{model_config.cell.upper()} encoder, "
        f"{model_config.dec_hidden}-unit {model_config.cell.upper()} decoder, dropout "
        f"{model_config.dropout})"
    )
    if translation:
        model = (
            f"the translation preset otherwise ({model_config.enc_layers} x "
            f"{model_config.enc_hidden} bi-LSTM encoder, {model_config.dec_hidden}-unit LSTM "
            f"decoder, dropout {model_config.dropout}, label smoothing "
            f"{train_config.label_smoothing}, {settings.vocab_size or 'the preset'}'s joint "
            "unigram pieces)"
        )
    up_to = "the files' pairs, up to " if translation else ""
    seed_list = f"Seeds 0 to {settings.seeds - 1}" if settings.seeds > 1 else "Seed 0"
    unit = {"dates": "pairs", "g2p": "words (all their pronunciations)"}.get(settings.task, "pairs")
    how = {
        "dates": "Test exact match: greedy search on the test pairs",
        "g2p": "Test exact match: greedy search, a word right when its output equals any of its "
        "pronunciations (word accuracy, 100 - WER)",
    }.get(
        settings.task,
        "Test BLEU: sacreBLEU (its default 13a tokenizer) of the greedy outputs of the test "
        f"pairs of `{settings.test}`, trained on `{settings.train}`",
    )
    total = sum(r.seconds for r in runs)
    took = f" The runs took {total / 60:.0f} minutes in all, one after another." if total else ""
    generated = "\n".join(
        [
            BEGIN,
            f"Produced by `{command}` (torch {torch.__version__}, Python "
            f"{platform.python_version()}, {torch.get_num_threads()} CPU thread(s)).{took}",
            "",
            f"Budget per run: {settings.steps} optimizer steps, one epoch over the first "
            f"{settings.steps * batch:,} training pairs (batch {batch}"
            f"{'; passes over the shuffled corpus' if translation else ''}), Adam at lr "
            f"{train_config.lr} with {max(1, settings.steps // 10)} warm-up steps and linear "
            f"decay; {model}. Local attention: D = {settings.window}. {seed_list} "
            "(initialisation and data order); the same data for every "
            f"run: {up_to}{settings.n_dev:,} dev and {settings.n_test:,} test {unit} (data seed "
            f"{settings.data_seed}). {how}; dev "
            "perplexity: exp of the mean per-token cross-entropy of the teacher-forced dev "
            "set; training seconds: the training loop with its one dev evaluation; "
            f"{len(runs)} runs.",
            "",
            _table(rows, measure, settings.seeds),
            "",
            f"![{measure} and dev perplexity per attention]({png.name})",
            END,
        ]
    )
    before, after = f"# The attention zoo: {settings.task}\n\n", "\n"
    if md.is_file():
        text = md.read_text(encoding="utf-8")
        if BEGIN in text and END in text:
            before = text[: text.index(BEGIN)]
            after = text[text.index(END) + len(END) :]
    write_text(md, before + generated + after)
    return md, png
