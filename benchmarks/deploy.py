"""One model, four ways to decode it, in one run: float32 PyTorch, bf16 (autocast), int8
(``luong quantize``) and onnxruntime (``luong export``'s runtime).

    .venv/bin/python benchmarks/deploy.py MODEL --data ../shared/data/gettext-en-de/devtest.tsv
        [--threads 2] [--repeats 3] [--batch-size 512] [--beam 5] [--json docs/deploy.json]

MODEL is quantized (``luong quantize``) and exported (``luong export``) into a temporary
folder first, through the command line as a user would. Then every decoder decodes the sources
of the TSV file (source TAB reference) with greedy search and with beam ``--beam``, each
(decoder, search) in a process of its own, so that its peak memory (the process's maximum
resident set, torch and the model included) is its own; the processes run ``--repeats``
rounds, each round every (decoder, search) once in turn, so that the machine's load falls on
all alike. Each process times its decoding alone (the model loaded and one sentence decoded
first, outside the clock). Prints one table: sentences per second (all lines over the median
wall time), BLEU against the references (sacreBLEU, outputs and references normalised as
``luong eval`` does), the share of lines whose output equals float32's, the model's size on
disk (the weights: model.safetensors; encoder.onnx + step.onnx), and the median peak memory.
Nothing is trained.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DECODERS = ("float32", "bf16", "int8", "onnxruntime")


# The imports are in the functions, not at the top: a worker process imports only what its
# decoder needs, so that onnxruntime's peak memory is measured without torch, as a deployment
# that has only numpy, onnxruntime and sentencepiece runs it.


def worker(args: argparse.Namespace) -> None:
    """Decode ``args.data``'s sources with one decoder and one beam; print a JSON line."""
    if args.worker == "onnxruntime":
        from luong.export import runtime

        onnx = runtime.load(args.model, threads=args.threads)
        search = runtime.SearchOptions(beam=args.beam)

        def run(texts: list[str]) -> list[str]:
            return onnx.translate(texts, search, args.batch_size)
    else:
        import torch

        from luong.common.devices import autocast
        from luong.config.search import SearchOptions
        from luong.model.seq2seq import Seq2Seq
        from luong.translation.translator import translate

        torch.set_num_threads(args.threads)
        model = Seq2Seq.from_pretrained(args.model).eval()
        options = SearchOptions(beam=args.beam)
        precision = "bf16" if args.worker == "bf16" else "fp32"

        def run(texts: list[str]) -> list[str]:
            with autocast(precision, torch.device("cpu")):
                return translate(model, texts, options, batch_size=args.batch_size)

    lines = args.data.read_text(encoding="utf-8").splitlines()
    sources = [line.split("\t")[0] for line in lines if line.strip()]
    run(sources[:1])  # warm: the first call's allocations and kernel choices
    start = time.perf_counter()
    outputs = run(sources)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    print(json.dumps({"seconds": seconds, "peak_bytes": peak, "outputs": outputs}))


def prepare(model: Path, folder: Path) -> dict[str, Path]:
    """The four decoders' folders: MODEL itself (float32, bf16), its int8 model and its ONNX
    export, made with luong's commands."""
    luong = Path(sys.executable).with_name("luong")
    int8, onnx = folder / "int8", folder / "onnx"
    for command in (["quantize", model, "--out", int8], ["export", model, "--out", onnx]):
        subprocess.run([luong, *command], check=True, stdout=subprocess.DEVNULL)
    return {"float32": model, "bf16": model, "int8": int8, "onnxruntime": onnx}


def weights_bytes(decoder: str, folder: Path) -> int:
    names = ("encoder.onnx", "step.onnx") if decoder == "onnxruntime" else ("model.safetensors",)
    return sum((folder / name).stat().st_size for name in names)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", type=Path, help="a model folder or run folder")
    parser.add_argument("--data", type=Path, required=True, help="TSV: source TAB reference")
    parser.add_argument("--threads", type=int, default=2, help="threads of each decoder (2)")
    parser.add_argument("--repeats", type=int, default=3, help="timed rounds (median)")
    parser.add_argument("--batch-size", type=int, default=512, help="sentences per search call")
    parser.add_argument("--beam", type=int, default=5, help="the beam search's size (5)")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    parser.add_argument("--worker", choices=DECODERS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return

    import onnxruntime
    import torch

    from luong.data.vocab import one_line
    from luong.evaluation.metrics import bleu_chrf
    from luong.model.seq2seq import Seq2Seq

    lines = args.data.read_text(encoding="utf-8").splitlines()
    pairs = [line.split("\t") for line in lines if line.strip()]
    vocab = Seq2Seq.from_pretrained(args.model).tgt_vocab
    refs = [[vocab.normalize(one_line(pair[1]))] for pair in pairs]
    folders = prepare(args.model, Path(tempfile.mkdtemp(prefix="luong-deploy-")))
    searches = {"greedy": 1, f"beam {args.beam}": args.beam}
    runs: dict[tuple[str, str], list[dict]] = {(s, d): [] for s in searches for d in DECODERS}
    for _ in range(args.repeats):
        for search, beam in searches.items():
            for decoder in DECODERS:
                command = [sys.executable, __file__, str(folders[decoder]), "--worker", decoder]
                command += ["--data", str(args.data), "--beam", str(beam)]
                command += ["--threads", str(args.threads), "--batch-size", str(args.batch_size)]
                done = subprocess.run(command, check=True, capture_output=True, text=True)
                runs[search, decoder].append(json.loads(done.stdout.splitlines()[-1]))

    rows = []
    for search in searches:
        reference = runs[search, "float32"][-1]["outputs"]
        for decoder in DECODERS:
            found = runs[search, decoder]
            seconds = statistics.median(run["seconds"] for run in found)
            outputs = found[-1]["outputs"]
            rows.append(
                {
                    "search": search,
                    "decoder": decoder,
                    "sentences_per_second": len(pairs) / seconds,
                    "seconds": seconds,
                    "bleu": bleu_chrf([vocab.normalize(o) for o in outputs], refs)["bleu"],
                    "same_as_float32": sum(a == b for a, b in zip(outputs, reference, strict=True))
                    / len(pairs),
                    "weights_bytes": weights_bytes(decoder, folders[decoder]),
                    "peak_bytes": statistics.median(run["peak_bytes"] for run in found),
                }
            )
    print(
        f"{args.model}, {len(pairs)} lines of {args.data}; torch {torch.__version__}, "
        f"onnxruntime {onnxruntime.__version__}, {platform.machine()}, {args.threads} "
        f"thread(s) each, batch {args.batch_size}, median of {args.repeats}"
    )
    print()
    print(
        "| search | decoder | sentences/s | x float32 | BLEU | same output as float32 "
        "| weights on disk | peak memory |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        base = next(r for r in rows if r["search"] == row["search"] and r["decoder"] == "float32")
        print(
            f"| {row['search']} | {row['decoder']} | {row['sentences_per_second']:.1f} | "
            f"{row['sentences_per_second'] / base['sentences_per_second']:.2f} | "
            f"{row['bleu']:.2f} | {100 * row['same_as_float32']:.1f} % | "
            f"{row['weights_bytes'] / 1e6:.1f} MB | {row['peak_bytes'] / 2**20:.0f} MiB |"
        )
    if args.json is not None:
        record = {
            "model": str(args.model),
            "data": str(args.data),
            "lines": len(pairs),
            "threads": args.threads,
            "batch_size": args.batch_size,
            "repeats": args.repeats,
            "torch": torch.__version__,
            "onnxruntime": onnxruntime.__version__,
            "rows": rows,
        }
        args.json.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
