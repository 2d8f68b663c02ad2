"""A GPU's figures for docs/performance.md (issue 28), in one prepared run: the dates demo on
the device, the translation preset trained for a fixed number of steps in bf16, and devtest
decoded there in float32 and bf16 (greedy and beam 5).

    .venv/bin/python benchmarks/gpu.py [--device cuda] [--data ../shared/data/gettext-en-de]
        [--epochs 1] [--out runs/gpu] [--write docs/performance.md]

``bash benchmarks/gpu.sh`` runs it after the benchmark suite. The trainings run through
``luong train`` as a user runs them (``--device``, ``--precision bf16``); their wall time is
the command's, start-up included. The decoding runs here, timed with a device
synchronisation after the warm-up call and after the timed one. ``--write`` replaces the text
between the markers ``<!-- gpu:begin -->`` and ``<!-- gpu:end -->`` of that file with the
table; without it the table is printed only. ``--device cpu --quick`` runs the same steps
shortened on the CPU (a check of the script, not a figure).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

from luong.common.devices import autocast, resolve_device
from luong.config.search import SearchOptions
from luong.data.vocab import one_line
from luong.evaluation.metrics import bleu_chrf
from luong.model.seq2seq import Seq2Seq
from luong.translation.translator import translate

ROOT = Path(__file__).resolve().parent.parent
BEGIN, END = "<!-- gpu:begin -->", "<!-- gpu:end -->"
TEST_KEYS = ("test_exact_match", "test_bleu", "train_seconds", "steps")


def train(out: Path, arguments: list[str]) -> dict[str, object]:
    """``luong train ARGUMENTS --out OUT``, timed; its test scores (metrics.json)."""
    luong = Path(sys.executable).with_name("luong")
    start = time.perf_counter()
    subprocess.run([luong, "train", *arguments, "--out", out, "--no-progress"], check=True)
    seconds = time.perf_counter() - start
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    return {"seconds": seconds, "metrics": {k: metrics[k] for k in TEST_KEYS if k in metrics}}


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def decoding(
    model_dir: Path, data: Path, device: torch.device, repeats: int
) -> list[dict[str, object]]:
    """devtest decoded greedy and with beam 5, in float32 and bf16: sentences/s (median of
    ``repeats``), BLEU, the device's peak memory."""
    pairs = [line.split("\t") for line in data.read_text(encoding="utf-8").splitlines() if line]
    sources = [pair[0] for pair in pairs]
    model = Seq2Seq.from_pretrained(model_dir, device=device).eval()
    refs = [[model.tgt_vocab.normalize(one_line(pair[1]))] for pair in pairs]
    rows = []
    for beam in (1, 5):
        for precision in ("fp32", "bf16"):
            options = SearchOptions(beam=beam)
            times = []
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats(device)
            with autocast(precision, device):
                translate(model, sources[:8], options)  # warm-up
                for _ in range(repeats):
                    synchronize(device)
                    start = time.perf_counter()
                    outputs = translate(model, sources, options)
                    synchronize(device)
                    times.append(time.perf_counter() - start)
            hyps = [model.tgt_vocab.normalize(output) for output in outputs]
            peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else 0
            rows.append(
                {
                    "search": "greedy" if beam == 1 else f"beam {beam}",
                    "precision": precision,
                    "sentences_per_second": len(sources) / statistics.median(times),
                    "bleu": bleu_chrf(hyps, refs)["bleu"],
                    "peak_memory_mib": peak / 2**20,
                }
            )
    return rows


def table(record: dict) -> str:
    """The figures as the markdown docs/performance.md shows."""
    dates, preset = record["dates"], record["translation"]
    lines = [
        f"Measured {record['date']} on {record['gpu']} (torch {record['torch']}) with "
        "`bash benchmarks/gpu.sh`.",
        "",
        "| run | wall time | result |",
        "|---|---:|---|",
        f"| `luong train dates --device {record['device']}` | {dates['seconds']:.0f} s | "
        f"test exact match {dates['metrics']['test_exact_match']:.4f} |",
        f"| translation preset, {record['epochs']} epoch(s), `--precision bf16` | "
        f"{preset['seconds']:.0f} s | {preset['metrics']['steps']} steps, devtest BLEU "
        f"{preset['metrics']['test_bleu']:.2f} (beam 5) |",
        "",
        "| devtest decoding | precision | sentences/s | BLEU | peak device memory |",
        "|---|---|---:|---:|---:|",
    ]
    for row in record["decoding"]:
        lines.append(
            f"| {row['search']} | {row['precision']} | {row['sentences_per_second']:.0f} | "
            f"{row['bleu']:.2f} | {row['peak_memory_mib']:.0f} MiB |"
        )
    return "\n".join(lines)


def write_section(path: Path, text: str) -> None:
    """Replace what lies between the markers in ``path`` with ``text``."""
    document = path.read_text(encoding="utf-8")
    if BEGIN not in document or END not in document:
        raise SystemExit(f"{path}: no {BEGIN} ... {END} markers to write between")
    head, rest = document.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    path.write_text(f"{head}{BEGIN}\n{text}\n{END}{tail}", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda", help="the device (cuda)")
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared/data/gettext-en-de")
    parser.add_argument("--epochs", type=int, default=1, help="the preset's epochs (1)")
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "gpu")
    parser.add_argument("--write", type=Path, help="the document to write the table into")
    parser.add_argument("--quick", action="store_true", help="a few steps: checks the script")
    args = parser.parse_args()
    device = resolve_device(args.device, "--device")
    args.out.mkdir(parents=True, exist_ok=True)
    data = {split: args.data / f"{split}.tsv" for split in ("train", "dev", "devtest")}
    on = ["--device", args.device]
    tiny = [
        "--n-train",
        "200",
        "--n-dev",
        "50",
        "--n-test",
        "50",
        "--epochs",
        "1",
        "--warmup-steps",
        "1",
    ]
    dates = train(args.out / "dates", ["dates", *on, *(tiny if args.quick else [])])
    if args.quick:  # the first 300 pairs of each split
        for split, path in data.items():
            lines = path.read_text(encoding="utf-8").splitlines()[:300]
            data[split] = args.out / f"{split}.tsv"
            data[split].write_text("\n".join(lines) + "\n", encoding="utf-8")
    preset = train(
        args.out / "translation",
        ["--preset", "translation", "--train", str(data["train"]), "--dev", str(data["dev"])]
        + ["--test", str(data["devtest"]), "--epochs", str(args.epochs), "--precision", "bf16"]
        + on
        + (["--vocab-size", "400", "--warmup-steps", "1"] if args.quick else []),
    )
    record = {
        "date": time.strftime("%Y-%m-%d"),
        "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else platform.machine(),
        "torch": torch.__version__,
        "device": args.device,
        "epochs": args.epochs,
        "dates": dates,
        "translation": preset,
        "decoding": decoding(args.out / "translation", data["devtest"], device, 3),
    }
    (args.out / "gpu.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    text = table(record)
    print(text)
    if args.write is not None:
        write_section(args.write, text)
        print(f"written into {args.write}")


if __name__ == "__main__":
    main()
