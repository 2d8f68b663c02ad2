"""luong against JoeyNMT 2.3, side by side: training time to dev BLEU, then decoding speed.

    .venv/bin/python benchmarks/joeynmt.py --data ../shared/data/gettext-en-de --work runs/joeynmt
    .venv/bin/python benchmarks/joeynmt.py --plot-only     # redraw docs/joeynmt.png from the JSON

What it does, in order (each step is skipped when its output is already in WORK: the venv,
the data, ``training.json`` and ``decoding.json``):

1. Installs JoeyNMT 2.3.0 into its own virtual environment (WORK/venv), with torch pinned to
   this project's version by a pip constraint (so pip keeps the local CPU build) and
   sentencepiece 0.1.99 (JoeyNMT calls ``SetVocabulary``, which later releases lack) and
   importlib-metadata (JoeyNMT imports it and does not declare it).
2. Cuts the corpus's TSV files into the one-sentence-a-line files JoeyNMT reads, and writes the
   sentencepiece model both tools use: the one ``luong train --preset translation`` learns
   (``luong.run.build_vocabularies``, 4,000 joint unigram pieces), so the two read the same
   subwords (checked against the luong run's own model at the end).
3. Trains both at once, each on one thread (``OMP_NUM_THREADS=1``), for the same wall time
   (``--minutes``): ``luong train --preset translation`` and JoeyNMT with
   ``../shared/peers/joeynmt_gettext_en_de.yaml`` (the same model size: bi-LSTM 2 x 128, LSTM
   256, Luong general attention, input feeding), its epochs raised so that only the clock stops
   it. Each tool's dev BLEU (greedy, sacreBLEU) is read from its own log against seconds since
   its process started.
4. Decodes devtest with both tools' selected models (greedy and beam 5), one after another on
   an otherwise idle machine with the same threads, through each tool's command line
   (``luong translate`` and ``joeynmt translate``), and scores both outputs with one sacreBLEU
   call. Sentences per second: (929 - 1) sentences over the time of the whole file minus the
   time of a one-line file, so process start and model loading cancel out. A luong run that
   the clock stopped is decoded from its last checkpoint (``luong average --last 1``).

Writes WORK/* (the runs, logs, outputs), ``benchmarks/joeynmt.json`` (the results, committed)
and ``docs/joeynmt.png`` (dev BLEU against minutes).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import sacrebleu
import torch

from luong.run import build_vocabularies
from luong.tasks import load_task, translation

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "joeynmt.json"
FIGURE = ROOT / "docs" / "joeynmt.png"
PEERS = ROOT.parent / "shared" / "peers" / "joeynmt_gettext_en_de.yaml"
JOEYNMT = "joeynmt==2.3.0"
SENTENCEPIECE = "sentencepiece==0.1.99"
MISSING = "importlib-metadata"  # JoeyNMT 2.3 imports it without declaring it
# JoeyNMT 2.3 logs "<asctime> - INFO - joeynmt.prediction - Evaluation result (greedy) bleu: ..."
JOEY_TIME = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ")
JOEY_STEP = re.compile(r"Step:\s+(\d+)")
JOEY_BLEU = re.compile(r"Evaluation result \(greedy\).*?bleu:\s*([0-9.]+)")


def run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    print("+", " ".join(command), flush=True)
    return subprocess.run(command, check=True, **kwargs)


def one_thread() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def setup_venv(work: Path) -> Path:
    """WORK/venv with JoeyNMT; returns its python."""
    python = work / "venv" / "bin" / "python"
    if not python.exists():
        run([sys.executable, "-m", "venv", str(work / "venv")])
    probe = subprocess.run([str(python), "-c", "import joeynmt.training"], capture_output=True)
    if probe.returncode != 0:
        constraints = work / "constraints.txt"
        constraints.write_text(f"torch=={torch.__version__.split('+')[0]}\n")
        run(
            [str(python), "-m", "pip", "install", "-q", "-c", str(constraints)]
            + [f"torch=={torch.__version__.split('+')[0]}", JOEYNMT, SENTENCEPIECE, MISSING]
        )
    return python


def prepare_data(data: Path, work: Path) -> Path:
    """WORK/joey/data/{train,dev,devtest}.{en,de} and spm4k.model; returns the folder."""
    folder = work / "joey" / "data"
    folder.mkdir(parents=True, exist_ok=True)
    for split in ("train", "dev", "devtest"):
        lines = (data / f"{split}.tsv").read_text(encoding="utf-8").splitlines()
        pairs = [line.split("\t") for line in lines]
        for side, column in (("en", 0), ("de", 1)):
            text = "".join(pair[column] + "\n" for pair in pairs)
            (folder / f"{split}.{side}").write_text(text, encoding="utf-8")
    model = folder / "spm4k.model"
    if not model.exists():
        pairs_data = load_task("tsv", train=str(data / "train.tsv"), dev=str(data / "dev.tsv"))
        vocab, _ = build_vocabularies(pairs_data, translation.VOCAB_CONFIG)
        model.write_bytes(vocab.model)  # type: ignore[attr-defined]
    return folder


def joey_config(work: Path, epochs: int = 1000, validation_freq: int = 400) -> Path:
    """The peers' configuration with PEERS/ pointed at WORK/joey and more epochs."""
    text = PEERS.read_text(encoding="utf-8").replace("PEERS/", f"{work / 'joey'}/")
    text = re.sub(r"(?m)^(\s*)epochs: \d+", rf"\g<1>epochs: {epochs}", text)
    text = re.sub(
        r"(?m)^(\s*)validation_freq: \d+", rf"\g<1>validation_freq: {validation_freq}", text
    )
    logging = min(100, validation_freq // 2)  # JoeyNMT wants it below validation_freq
    text = re.sub(r"(?m)^(\s*)logging_freq: \d+", rf"\g<1>logging_freq: {logging}", text)
    path = work / "joey" / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def train_side_by_side(
    python: Path, config: Path, data: Path, work: Path, minutes: float, luong_flags: list[str]
) -> dict:
    """Start both trainings, stop whatever still runs after ``minutes``; the wall-clock start
    of each process (epoch seconds) and whether it finished on its own."""
    luong_dir = work / "luong"
    luong = [
        str(ROOT / ".venv" / "bin" / "luong"),
        "train",
        "--train", str(data / "train.tsv"),
        "--dev", str(data / "dev.tsv"),
        "--test", str(data / "devtest.tsv"),
        "--preset", "translation",
        "--no-progress",
        "--out", str(luong_dir),
        *luong_flags,
    ]  # fmt: skip
    joey = [str(python), "-m", "joeynmt", "train", str(config), "--skip-test"]
    logs = {name: open(work / f"{name}.out", "w") for name in ("luong", "joeynmt")}  # noqa: SIM115
    started = {}
    processes = {}
    for name, command in (("luong", luong), ("joeynmt", joey)):
        print("+", " ".join(command), flush=True)
        started[name] = time.time()
        processes[name] = subprocess.Popen(
            command, env=one_thread(), stdout=logs[name], stderr=subprocess.STDOUT
        )
    deadline = min(started.values()) + 60 * minutes
    while time.time() < deadline and any(p.poll() is None for p in processes.values()):
        time.sleep(5)
    finished = {name: p.poll() is not None for name, p in processes.items()}
    for process in processes.values():
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes.values():
        try:
            process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            process.kill()
    for log in logs.values():
        log.close()
    return {"started": started, "finished_on_its_own": finished}


def luong_curve(run_dir: Path, startup: float) -> list[dict]:
    """(seconds since the process started, step, dev BLEU) of each evaluation in log.jsonl;
    ``startup`` is the time before the training loop (reading data, learning subwords)."""
    points = []
    for line in (run_dir / "log.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if "dev_bleu" in record:
            seconds = startup + record["seconds"]
            points.append({"seconds": round(seconds, 1), "step": record["step"],
                           "dev_bleu": record["dev_bleu"]})  # fmt: skip
    return points


def joey_curve(model_dir: Path, started: float) -> list[dict]:
    """(seconds since the process started, step, dev BLEU) of each validation in train.log."""
    points: list[dict] = []
    step = 0
    for line in (model_dir / "train.log").read_text(encoding="utf-8").splitlines():
        stamp = JOEY_TIME.match(line)
        found = JOEY_STEP.search(line)
        if found:
            step = int(found.group(1))
        bleu = JOEY_BLEU.search(line)
        if stamp and bleu:
            when = datetime.strptime(stamp.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
            points.append({"seconds": round(when - started, 1), "step": step,
                           "dev_bleu": float(bleu.group(1))})  # fmt: skip
    return points


def luong_startup(run_dir: Path, started: float) -> float:
    """Seconds from the process start to the training loop's start (reading the data and
    learning the subwords): run.json is written as the loop starts."""
    return (run_dir / "run.json").stat().st_mtime - started


def timed(command: list[str], stdin: Path, stdout: Path) -> float:
    with stdin.open("rb") as source, stdout.open("wb") as sink:
        start = time.perf_counter()
        subprocess.run(command, stdin=source, stdout=sink, stderr=subprocess.DEVNULL, check=True)
        return time.perf_counter() - start


def decode_speed(python: Path, config: Path, work: Path, repeats: int, lines: int | None) -> dict:
    """Each tool translates devtest.en (greedy and beam 5) through its command line; BLEU of
    both outputs from one sacreBLEU call, speed from the whole file minus a one-line file."""
    data = work / "joey" / "data"
    sources = (data / "devtest.en").read_text(encoding="utf-8").splitlines()[:lines]
    refs = (data / "devtest.de").read_text(encoding="utf-8").splitlines()[: len(sources)]
    source = work / "devtest.en"
    source.write_text("".join(line + "\n" for line in sources), encoding="utf-8")
    one = work / "one.en"
    one.write_text(sources[0] + "\n", encoding="utf-8")
    results: dict[str, dict] = {}
    luong_bin = str(ROOT / ".venv" / "bin" / "luong")
    model = work / "luong"
    if not (model / "model.safetensors").exists():  # stopped by the clock: its last checkpoint
        model = work / "luong-last"
        if not model.exists():
            run([luong_bin, "average", str(work / "luong"), "--last", "1", "--out", str(model)])
    for beam in (1, 5):
        beam_config = config.with_name(f"config-beam{beam}.yaml")
        text = config.read_text(encoding="utf-8")
        beam_config.write_text(re.sub(r"beam_size: \d+", f"beam_size: {beam}", text))
        commands = {
            "luong": [luong_bin, "translate", str(model), "--beam", str(beam)]
            + (["--alpha", str(translation.TRAIN_CONFIG.test_alpha)] if beam > 1 else []),
            "joeynmt": [str(python), "-m", "joeynmt", "translate", str(beam_config)],
        }
        for name, command in commands.items():
            out = work / f"{name}.devtest.beam{beam}.de"
            full, single = [], []
            for _ in range(repeats):  # interleaved with the one-line run
                full.append(timed(command, source, out))
                single.append(timed(command, one, work / "one.out"))
            hyps = out.read_text(encoding="utf-8").splitlines()
            full.sort()
            single.sort()
            seconds = full[len(full) // 2] - single[len(single) // 2]
            results[f"{name} beam {beam}"] = {
                "bleu": round(sacrebleu.corpus_bleu(hyps, [refs]).score, 2),
                "outputs": len(hyps),
                "seconds_file": round(full[len(full) // 2], 2),
                "seconds_one_line": round(single[len(single) // 2], 2),
                "sentences_per_second": round((len(refs) - 1) / seconds, 1),
            }
            print(name, f"beam {beam}", results[f"{name} beam {beam}"], flush=True)
    return results


def reached(curve: list[dict], bleu: float) -> float | None:
    """Seconds at which ``curve`` first reaches ``bleu`` (None if never)."""
    return next((p["seconds"] for p in curve if p["dev_bleu"] >= bleu), None)


def plot(results: dict, path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7, 4.2))
    FigureCanvasAgg(figure)
    axis = figure.subplots()
    for name, colour in (("luong", "tab:blue"), ("joeynmt", "tab:orange")):
        curve = results["curves"][name]
        label = "luong (--preset translation)" if name == "luong" else "JoeyNMT 2.3"
        axis.plot([p["seconds"] / 60 for p in curve], [p["dev_bleu"] for p in curve], "o-",
                  ms=3, color=colour, label=label)  # fmt: skip
    axis.set_xlabel("minutes since the process started (one thread each, side by side)")
    axis.set_ylabel("dev BLEU, greedy (sacreBLEU)")
    axis.set_title("gettext-en-de, the same model size and subwords", fontsize=10)
    axis.grid(alpha=0.3)
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared/data/gettext-en-de")
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "joeynmt")
    parser.add_argument("--minutes", type=float, default=60.0, help="training wall time each")
    parser.add_argument("--repeats", type=int, default=3, help="decoding runs (median)")
    parser.add_argument("--validation-freq", type=int, default=400, help="JoeyNMT's (steps)")
    parser.add_argument("--decode-lines", type=int, default=None, help="devtest lines to decode")
    parser.add_argument("--plot-only", action="store_true", help="redraw the figure only")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--figure", type=Path, default=FIGURE)
    parser.add_argument("luong_flags", nargs="*", help="after --: more `luong train` flags")
    args = parser.parse_args()
    if args.plot_only:
        plot(json.loads(args.results.read_text()), args.figure)
        print(f"figure written to {args.figure}")
        return
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    python = setup_venv(work)
    prepare_data(args.data.resolve(), work)
    config = joey_config(work, validation_freq=args.validation_freq)
    record = work / "training.json"  # a finished training is not run again
    if not record.exists():
        training = train_side_by_side(
            python, config, args.data.resolve(), work, args.minutes, args.luong_flags
        )
        record.write_text(json.dumps(training, indent=1) + "\n")
    training = json.loads(record.read_text())
    started = training["started"]
    curves = {
        "luong": luong_curve(work / "luong", luong_startup(work / "luong", started["luong"])),
        "joeynmt": joey_curve(work / "joey" / "joey_small", started["joeynmt"]),
    }
    final = curves["joeynmt"][-1] if curves["joeynmt"] else None
    record = work / "decoding.json"
    if not record.exists():
        decoding = decode_speed(python, config, work, args.repeats, args.decode_lines)
        record.write_text(json.dumps(decoding, indent=1) + "\n")
    decoding = json.loads(record.read_text())
    versions = subprocess.run(
        [str(python), "-c", "import joeynmt, torch, sentencepiece as s; "
         "print(joeynmt.__version__, torch.__version__, s.__version__)"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    spm_same = (work / "luong" / "src_vocab.model").read_bytes() == (
        work / "joey" / "data" / "spm4k.model"
    ).read_bytes()
    results = {
        "command": "python benchmarks/joeynmt.py " + " ".join(sys.argv[1:]),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}",
        "joeynmt": {"version": versions[0], "torch": versions[1], "sentencepiece": versions[2]},
        "minutes": args.minutes,
        "finished_on_its_own": training["finished_on_its_own"],
        "same_sentencepiece_model": spm_same,
        "curves": curves,
        "joeynmt_final_dev_bleu": final["dev_bleu"] if final else None,
        "luong_seconds_to_joeynmt_final": reached(curves["luong"], final["dev_bleu"])
        if final
        else None,
        "joeynmt_seconds_to_its_final": reached(curves["joeynmt"], final["dev_bleu"])
        if final
        else None,
        "decoding": decoding,
    }
    args.results.write_text(json.dumps(results, indent=1) + "\n")
    plot(results, args.figure)
    print(f"results written to {args.results}, figure to {args.figure}")


if __name__ == "__main__":
    main()
