"""How well a model's attention aligns words: its word links on gettext-en-de's devtest
against eflomal's (an independent statistical aligner), beside the AER of Luong et al. (2015),
Table 6.

    python benchmarks/alignment.py LABEL=MODEL [LABEL=MODEL ...] [--data DIR]
        [--out docs/alignment.json] [--batch-size 64] [--threads 1]

e.g. ``global=runs/translation local-m=runs/align/monotonic local-p=runs/align/predictive``.

The reference: eflomal 2.0 (``eflomal.Aligner``, its default settings, ``EFLOMAL``) trained
on train + devtest together (an unsupervised aligner needs the data; devtest is in it so that
it gets links), devtest's links kept. Its *forward* links: each target word linked to at most
one source word (none: aligned to NULL), which is what attention gives. The eflomal package
offers no symmetrisation of its two directions (its repository's ``align_symmetrize`` script
calls fast_align's ``atools`` for grow-diag-final-and), so none is made. eflomal seeds its
samplers from ``/dev/urandom`` and has no seed option: a second run, scored against the
first, shows how much the reference itself moves.

A model: each devtest reference is *force-decoded*: the model reads the source and is fed
the reference (teacher forcing, ``Seq2Seq.encode`` and the decoder's teacher-forced pass), and
the attention ``[T + 1, S + 1]`` of the reference's tokens and EOS over the source's symbols
and EOS is kept. ``luong.translation.alignment.hypothesis_alignment`` turns it into word links, each
reference word to the source word with the most attention mass. Words are ``str.split()`` of
each side, for eflomal and for the model alike; a pair whose words the vocabularies'
normalisation changes (a different count) is left out of every score, and counted.

The score: the alignment error rate (Och and Ney 2003), summed over the corpus,
``AER = 1 - (|A & S| + |A & P|) / (|A| + |S|)``, with one reference set (S = P = eflomal's
links), so ``AER = 1 - F1`` of the links; with precision ``|A & P| / |A|`` and recall
``|A & S| / |S|``. A floor to read them by: the diagonal, each target word ``j`` of ``n``
linked to source word ``round(j * m / n)`` of ``m`` (the last one where that is ``m``).

The paper's figures are AER against human gold alignments (RWTH's German-English, 508
sentences), with sure and possible links; ours are against another aligner, on software
messages: not the same measure. Each AER is also given against eflomal's second run
(``aer_second_run``): how much it moves with the reference's sampling. Writes one JSON object
(``--out``) and prints a markdown table.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from luong import Seq2Seq, __version__
from luong.data.batching import pad_batch
from luong.data.vocab import Vocab
from luong.search.hypothesis import Hypothesis
from luong.translation.alignment import hypothesis_alignment, parse_pharaoh, word_groups

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "gettext-en-de"
# eflomal.Aligner's defaults, written out so that the JSON records them.
EFLOMAL = {"model": 3, "n_samplers": 3, "rel_iterations": 1.0, "null_prior": 0.2}
# Luong et al. (2015), Table 6: AER against RWTH's gold German-English alignments, 508 sentences.
PAPER = {
    "global": ("global (location)", 0.39),
    "local-m": ("local-m (general)", 0.34),
    "local-p": ("local-p (general)", 0.36),
    "ensemble": ("ensemble", 0.34),
    "berkeley": ("Berkeley aligner", 0.32),
}

Links = set[tuple[int, int]]


@dataclass(frozen=True)
class Agreement:
    """Links scored against a reference: ``aer``, ``precision``, ``recall``, and the counts
    they come from (``links`` |A|, ``reference_links`` |S|, ``sentences``)."""

    aer: float
    precision: float
    recall: float
    links: int
    reference_links: int
    sentences: int


def agreement(
    predicted: Sequence[Links], sure: Sequence[Links], possible: Sequence[Links] | None = None
) -> Agreement:
    """The corpus AER of ``predicted`` (Och and Ney 2003), its precision and recall.

    ``AER = 1 - (|A & S| + |A & P|) / (|A| + |S|)``, precision ``|A & P| / |A|``, recall
    ``|A & S| / |S|``, each count summed over the sentences.

    Args:
        predicted: A, a set of ``(i, j)`` links per sentence.
        sure: S, the reference's sure links, per sentence.
        possible: P, the reference's possible links (each sentence's a superset of its sure
            ones); None: P = S, and AER = 1 - F1.

    Raises:
        ValueError: lists of different lengths, a sure link that is not possible, or no
            predicted or no sure link at all (the figures are undefined).
    """
    possible = sure if possible is None else possible
    if not len(predicted) == len(sure) == len(possible):
        raise ValueError(
            f"expected as many sentences of links in predicted, sure and possible, got "
            f"{len(predicted)}, {len(sure)} and {len(possible)}"
        )
    a_and_s = a_and_p = a_size = s_size = 0
    for k, (a, s, p) in enumerate(zip(predicted, sure, possible, strict=True)):
        if not s <= p:
            raise ValueError(
                f"sentence {k}: expected the sure links among the possible ones, got "
                f"{sorted(s - p)} sure only"
            )
        a_and_s += len(a & s)
        a_and_p += len(a & p)
        a_size += len(a)
        s_size += len(s)
    if not a_size or not s_size:
        raise ValueError(
            f"expected predicted and sure links, got {a_size} predicted and {s_size} sure"
        )
    return Agreement(
        aer=1 - (a_and_s + a_and_p) / (a_size + s_size),
        precision=a_and_p / a_size,
        recall=a_and_s / s_size,
        links=a_size,
        reference_links=s_size,
        sentences=len(predicted),
    )


def diagonal_links(sources: int, targets: int) -> Links:
    """The diagonal: target word ``j`` -> source word ``round(j * sources / targets)``, the
    last source word where that is ``sources``; none when either side has no words."""
    if not sources or not targets:
        return set()
    return {(min(round(j * sources / targets), sources - 1), j) for j in range(targets)}


def force_decode(
    model: Seq2Seq, pairs: Sequence[tuple[str, str]], batch_size: int = 64
) -> list[Hypothesis]:
    """Each pair's target teacher-forced through the model: the hypothesis whose tokens are
    the target's ids and EOS (``tgt_vocab.encode(target)``), with the model's
    log-probability of each and its attention ``[len(tokens), S + 1]`` over the source's
    symbols and EOS, in the pairs' order. Batches of ``batch_size`` pairs of similar lengths.
    """
    src_ids = [model.src_vocab.encode(source, eos=True) for source, _ in pairs]
    tgt_ids = [model.tgt_vocab.encode(target, eos=True) for _, target in pairs]
    order = sorted(range(len(pairs)), key=lambda k: (len(src_ids[k]), len(tgt_ids[k])))
    out: list[Hypothesis | None] = [None] * len(pairs)
    device = model.device
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            src, src_lengths = pad_batch([src_ids[k] for k in rows], device)
            # The decoder reads BOS and the target, and predicts the target and EOS.
            tgt_in, _ = pad_batch([[Vocab.bos_id, *tgt_ids[k][:-1]] for k in rows], device)
            memory, state = model.encode(src, src_lengths)
            logits, weights = model.decoder(tgt_in, state, memory)
            log_probs = torch.log_softmax(logits.float(), dim=-1)
            for b, k in enumerate(rows):
                tokens = tgt_ids[k]
                steps = torch.arange(len(tokens), device=device)
                token_log_probs = log_probs[b, steps, torch.tensor(tokens, device=device)]
                attention = weights[b, : len(tokens), : len(src_ids[k])].float().cpu()
                out[k] = Hypothesis(
                    tokens, float(token_log_probs.sum()), token_log_probs.tolist(), attention
                )
    return [hyp for hyp in out if hyp is not None]


def word_count(vocab: Vocab, text: str) -> int:
    """The words ``luong.translation.alignment`` finds in ``text`` as ``vocab`` encodes it."""
    symbols = vocab.symbols_of(vocab.encode(text, eos=False), strip=False)
    return len(word_groups(symbols, vocab.tokens))


def model_links(
    model: Seq2Seq, pairs: Sequence[tuple[str, str]], batch_size: int
) -> tuple[list[Links], list[int]]:
    """A model's word links of each pair's target (force-decoded), and the pairs whose
    words its vocabularies do not keep (``str.split()`` counts differ)."""
    hyps = force_decode(model, pairs, batch_size)
    links, changed = [], []
    for k, ((source, target), hyp) in enumerate(zip(pairs, hyps, strict=True)):
        if (word_count(model.src_vocab, source), word_count(model.tgt_vocab, target)) != (
            len(source.split()),
            len(target.split()),
        ):
            changed.append(k)
        links.append(set(hypothesis_alignment(hyp, source, model.src_vocab, model.tgt_vocab)))
    return links, changed


def eflomal_links(pairs: Sequence[tuple[str, str]]) -> list[Links]:
    """eflomal's forward links (target word -> source word) of every pair, ``EFLOMAL``'s
    settings, words ``str.split()``."""
    import eflomal  # the align extra: only the benchmark needs it

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "forward.links"
        eflomal.Aligner(**EFLOMAL).align(
            [" ".join(source.split()) + "\n" for source, _ in pairs],
            [" ".join(target.split()) + "\n" for _, target in pairs],
            links_filename_fwd=str(path),
        )
        lines = path.read_text(encoding="utf-8").splitlines()
    if len(lines) != len(pairs):
        raise RuntimeError(f"eflomal wrote {len(lines)} lines of links for {len(pairs)} pairs")
    return [set(parse_pharaoh(line)) for line in lines]


def read_pairs(path: Path) -> list[tuple[str, str]]:
    pairs = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        fields = line.split("\t")
        if len(fields) != 2:
            raise ValueError(f"{path}:{number}: expected source<TAB>target, got {line!r}")
        pairs.append((fields[0], fields[1]))
    return pairs


def labelled(text: str) -> tuple[str, Path]:
    label, sep, folder = text.partition("=")
    if not sep or not label or not folder:
        raise argparse.ArgumentTypeError(f"expected LABEL=MODEL_FOLDER, got {text!r}")
    return label, Path(folder)


def keep(links: Sequence[Links], kept: Sequence[int]) -> list[Links]:
    return [links[k] for k in kept]


def scored(links: list[Links], reference: list[Links], second: list[Links]) -> dict[str, Any]:
    """``agreement``'s figures against the reference, and the AER against eflomal's second
    run."""
    return {**asdict(agreement(links, reference)), "aer_second_run": agreement(links, second).aer}


def table(result: dict[str, Any]) -> str:
    """The markdown table of ``main``'s result."""
    lines = [
        "| aligner | AER vs eflomal | precision | recall | paper's AER (Table 6, vs gold) |",
        "|---|---|---|---|---|",
    ]

    def row(name: str, scores: dict[str, Any] | None, paper: str | None) -> None:
        figures = (
            f"{scores['aer']:.2f} | {scores['precision']:.2f} | {scores['recall']:.2f}"
            if scores
            else "- | - | -"
        )
        paper_figure = f"{PAPER[paper][1]:.2f} ({PAPER[paper][0]})" if paper else "-"
        lines.append(f"| {name} | {figures} | {paper_figure} |")

    for label, scores in result["models"].items():
        what = f"{label} ({scores['attention']}, local {scores['local']}, {scores['tokens']})"
        row(what, scores, label if label in PAPER else None)
    row("diagonal baseline", result["diagonal"], None)
    row("eflomal, another run", result["eflomal"]["second_run"], None)
    row("ensemble", None, "ensemble")
    row("Berkeley aligner", None, "berkeley")
    lines.append("")
    lines.append(
        f"{result['sentences']} devtest pairs. Ours: one reference set (S = P = eflomal's "
        "forward links), so AER = 1 - F1. The paper's: RWTH's human gold German-English "
        "alignments (508 sentences, sure and possible links): not the same measure."
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", nargs="+", type=labelled, help="LABEL=MODEL_FOLDER")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "alignment.json")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    labels = [label for label, _ in args.model]
    if len(set(labels)) != len(labels):
        parser.error(f"expected different labels, got {', '.join(labels)}")
    torch.set_num_threads(args.threads)
    train = read_pairs(args.data / "train.tsv")
    devtest = read_pairs(args.data / "devtest.tsv")

    start = time.perf_counter()
    runs = [eflomal_links(train + devtest)[len(train) :] for _ in range(2)]
    eflomal_seconds = (time.perf_counter() - start) / 2
    reference = runs[0]

    models = {}
    left_out: set[int] = set()
    for label, folder in args.model:
        model = Seq2Seq.from_pretrained(folder)
        start = time.perf_counter()
        links, changed = model_links(model, devtest, args.batch_size)
        seconds = time.perf_counter() - start
        left_out.update(changed)
        cfg = model.config
        models[label] = (folder, cfg, links, changed, seconds, model.tgt_vocab.tokens)

    kept = [k for k in range(len(devtest)) if k not in left_out]
    sure = keep(reference, kept)
    diagonal = [diagonal_links(len(s.split()), len(t.split())) for s, t in devtest]
    result: dict[str, Any] = {
        "what": "word links of force-decoded attention on gettext-en-de devtest, scored "
        "against eflomal's forward links (S = P, so AER = 1 - F1)",
        "date": datetime.date.today().isoformat(),
        "command": " ".join(["python", *sys.argv]),
        "torch": torch.__version__,
        "luong": __version__,
        "data": str(args.data),
        "sentences": len(kept),
        "left_out": sorted(left_out),
        "eflomal": {
            "version": _version("eflomal"),
            "settings": EFLOMAL,
            "trained_on": f"train ({len(train)}) + devtest ({len(devtest)}) pairs",
            "links": "forward (each target word -> at most one source word; no "
            "symmetrisation: the eflomal package offers none)",
            "seed": "none: eflomal seeds from /dev/urandom; second_run scores a second run "
            "against the first (the reference)",
            "seconds_per_run": round(eflomal_seconds, 1),
            "second_run": asdict(agreement(keep(runs[1], kept), sure)),
        },
        "diagonal": scored(keep(diagonal, kept), sure, keep(runs[1], kept)),
        "models": {},
        "paper": {label: {"system": name, "aer": aer} for label, (name, aer) in PAPER.items()},
    }
    for label, (folder, cfg, links, changed, seconds, tokens) in models.items():
        scores = scored(keep(links, kept), sure, keep(runs[1], kept))
        result["models"][label] = {
            "folder": str(folder),
            "attention": cfg.attention,
            "local": cfg.local,
            "tokens": tokens,
            **scores,
            "words_changed": len(changed),
            "force_decode_seconds": round(seconds, 1),
        }
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(table(result))


def _version(package: str) -> str:
    from importlib.metadata import version

    return version(package)


if __name__ == "__main__":
    main()
