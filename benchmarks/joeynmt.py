"""luong against JoeyNMT 2.3, side by side: training time to dev BLEU, then decoding speed.

    .venv/bin/python benchmarks/joeynmt.py --data ../shared/data/gettext-en-de --work runs/joeynmt
    .venv/bin/python benchmarks/joeynmt.py --plot-only     # redraw docs/joeynmt.png from the JSON
    make joeynmt-transformer-equal  # --peer benchmarks/joeynmt_transformer_equal.yaml; or -small
    make joeynmt-transformer-plot   # --plot-only: docs/transformer.png from the two JSONs

The peer is JoeyNMT with one configuration file (``--peer``): by default the shared LSTM of the
same size as the preset (``../shared/peers/joeynmt_gettext_en_de.yaml``: bi-LSTM 2 x 128, LSTM
256, Luong general attention, input feeding), or one of this folder's Transformers, with the
LSTM's data, subwords and token batches and JoeyNMT's own Transformer recipe (Adam 0.9/0.98,
linear warm-up then inverse square root decay, tied embeddings and softmax, pre-LN; the sizes
and their sources in each file's header): ``joeynmt_transformer_equal.yaml`` (about the preset's
parameter count) and ``joeynmt_transformer_small.yaml`` (the size of JoeyNMT's IWSLT14 de-en
Transformer). Files other than the LSTM are written in its ``PEERS/`` placeholder style.

What it does, in order (each step is skipped when its output is already in WORK: the venv,
the data, ``training.json`` and ``decoding.json``; give each peer its own WORK):

1. Installs JoeyNMT 2.3.0 into its own virtual environment (WORK/venv), with torch pinned to
   this project's version by a pip constraint (so pip keeps the local CPU build) and
   sentencepiece 0.1.99 (JoeyNMT calls ``SetVocabulary``, which later releases lack) and
   importlib-metadata (JoeyNMT imports it and does not declare it).
2. Cuts the corpus's TSV files into the one-sentence-a-line files JoeyNMT reads, and writes the
   sentencepiece model both tools use: the one ``luong train --preset translation`` learns
   (``luong.training.run.build_vocabularies``, 4,000 joint unigram pieces), so the two read the same
   subwords (checked against the luong run's own model at the end); and its pieces as one
   joint vocabulary (``spm4k.vocab``, the Transformers' ``voc_file``: tied embeddings need one
   vocabulary for both languages; the LSTM builds one a language from the data).
3. Trains both at once, each on one thread (``OMP_NUM_THREADS=1``), for the same wall time
   (``--minutes``): ``luong train --preset translation`` and JoeyNMT with the peer's file, its
   epochs raised so that only the clock stops it. Each tool's dev BLEU (greedy, sacreBLEU) is
   read from its own log against seconds since its process started; the results also keep
   the seconds JoeyNMT spent validating (``joeynmt_validation_seconds``: they are part of its
   hour, as luong's dev evaluations are of luong's).
4. Decodes devtest with both tools' selected models (greedy and beam 5), one after another on
   an otherwise idle machine with the same threads, through each tool's command line
   (``luong translate`` and ``joeynmt translate``), and scores both outputs with sacreBLEU
   (BLEU and chrF). Sentences per second: (929 - 1) sentences over the time of the whole file
   minus the time of a one-line file, so process start and model loading cancel out. A luong
   run that the clock stopped is decoded from its last checkpoint (``luong average --last 1``).
   ``--no-decoding`` writes the results without this step (``"decoding": null``); the same
   command without it later decodes and completes them.

Writes WORK/* (the runs, logs, outputs), the results (committed) and the figure (dev BLEU
against minutes), named after the peer unless ``--results`` and ``--figure`` say otherwise:
``benchmarks/joeynmt.json`` and ``docs/joeynmt.png`` for the LSTM;
``benchmarks/transformer_equal.json`` or ``transformer_small.json`` for a Transformer, and
``docs/transformer.png`` drawn from both of these JSONs that exist (luong once per run it was
in). The results name the peer's file and its parameter count (JoeyNMT's own, from its log)
beside luong's.
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
import sentencepiece
import torch

from luong.model.seq2seq import Seq2Seq
from luong.tasks import load_task, translation
from luong.training.run import build_vocabularies

ROOT = Path(__file__).resolve().parent.parent
PEERS = ROOT.parent / "shared" / "peers" / "joeynmt_gettext_en_de.yaml"  # the LSTM, the default
PEER_PREFIX = "joeynmt_"  # benchmarks/joeynmt_<family>_<variant>.yaml: a peer of this repository
JOEYNMT = "joeynmt==2.3.0"
SENTENCEPIECE = "sentencepiece==0.1.99"
MISSING = "importlib-metadata"  # JoeyNMT 2.3 imports it without declaring it
# JoeyNMT 2.3 logs "<asctime> - INFO - joeynmt.prediction - Evaluation result (greedy) bleu: ..."
JOEY_TIME = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ")
JOEY_STEP = re.compile(r"Step:\s+(\d+)")
JOEY_PREDICTING = re.compile(r"joeynmt\.prediction - Predicting \d+ example")
JOEY_BLEU = re.compile(r"Evaluation result \(greedy\).*?bleu:\s*([0-9.]+)")
JOEY_PARAMETERS = re.compile(r"Total params: (\d+)")  # JoeyNMT's own count, tied weights once
MODEL_DIR = re.compile(r'(?m)^model_dir: "([^"]+)"')


# luong through the python running this script (make's .venv/bin/python; a worktree's
# PYTHONPATH reaches its children too)
LUONG = [sys.executable, "-m", "luong"]


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
    """WORK/joey/data/{train,dev,devtest}.{en,de}, spm4k.model and spm4k.vocab; returns the
    folder."""
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
    # Every piece of the model, in its order, one a line: the joint vocabulary (JoeyNMT's
    # voc_file) that tied embeddings need; JoeyNMT puts its specials first and drops repeats.
    # An LSTM peer without voc_file builds one vocabulary a language from the data instead.
    processor = sentencepiece.SentencePieceProcessor(model_file=str(model))
    pieces = [processor.id_to_piece(i) for i in range(processor.get_piece_size())]
    (folder / "spm4k.vocab").write_text("".join(p + "\n" for p in pieces), encoding="utf-8")
    return folder


def joey_config(peer: Path, work: Path, epochs: int = 1000, validation_freq: int = 400) -> Path:
    """The peer's configuration with PEERS/ pointed at WORK/joey and more epochs."""
    text = peer.read_text(encoding="utf-8").replace("PEERS/", f"{work / 'joey'}/")
    text = re.sub(r"(?m)^(\s*)epochs: \d+", rf"\g<1>epochs: {epochs}", text)
    text = re.sub(
        r"(?m)^(\s*)validation_freq: \d+", rf"\g<1>validation_freq: {validation_freq}", text
    )
    logging = min(100, validation_freq // 2)  # JoeyNMT wants it below validation_freq
    text = re.sub(r"(?m)^(\s*)logging_freq: \d+", rf"\g<1>logging_freq: {logging}", text)
    path = work / "joey" / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def joey_model_dir(config: Path) -> Path:
    """The ``model_dir`` of a JoeyNMT configuration (where train.log and the checkpoints go)."""
    found = MODEL_DIR.search(config.read_text(encoding="utf-8"))
    if found is None:
        raise ValueError(f'{config}: expected a line model_dir: "FOLDER", found none')
    return Path(found.group(1))


def joey_parameters(model_dir: Path) -> int | None:
    """The parameter count JoeyNMT logged as it built the model (None before it did)."""
    found = JOEY_PARAMETERS.search((model_dir / "train.log").read_text(encoding="utf-8"))
    return int(found.group(1)) if found else None


def outputs(peer: Path) -> tuple[Path, Path]:
    """The results JSON and the figure of a peer: benchmarks/joeynmt.json and docs/joeynmt.png
    for the shared LSTM; benchmarks/FAMILY_VARIANT.json and docs/FAMILY.png for
    joeynmt_FAMILY_VARIANT.yaml (the Transformers: transformer_equal.json and
    transformer_small.json, both drawn in docs/transformer.png)."""
    if peer.name == PEERS.name:  # wherever ../shared is
        return ROOT / "benchmarks" / "joeynmt.json", ROOT / "docs" / "joeynmt.png"
    name = peer.stem.removeprefix(PEER_PREFIX)
    family = name.split("_")[0]
    return ROOT / "benchmarks" / f"{name}.json", ROOT / "docs" / f"{family}.png"


def figure_runs(results: Path) -> list[Path]:
    """The results drawn into one figure: a FAMILY_VARIANT.json with every FAMILY_*.json that
    exists beside it (both Transformers), any other JSON alone."""
    if "_" not in results.stem:
        return [results]
    family = results.stem.split("_")[0]
    return sorted({results, *results.parent.glob(f"{family}_*.json")})


def train_side_by_side(
    python: Path, config: Path, data: Path, work: Path, minutes: float, luong_flags: list[str]
) -> dict:
    """Start both trainings, stop whatever still runs after ``minutes``; the wall-clock start
    of each process (epoch seconds) and whether it finished on its own."""
    luong_dir = work / "luong"
    luong = [
        *LUONG,
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


def joey_validation_seconds(model_dir: Path) -> float:
    """Seconds JoeyNMT spent in its dev validations (from each "Predicting" line to the
    "Evaluation result" after it): part of its wall time, not of its training."""
    total, begun = 0.0, None
    for line in (model_dir / "train.log").read_text(encoding="utf-8").splitlines():
        stamp = JOEY_TIME.match(line)
        if not stamp:
            continue
        when = datetime.strptime(stamp.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
        if JOEY_PREDICTING.search(line):
            begun = when
        elif begun is not None and JOEY_BLEU.search(line):
            total, begun = total + when - begun, None
    return round(total, 1)


def luong_startup(run_dir: Path, started: float) -> float:
    """Seconds from the process start to the training loop's start (reading the data and
    learning the subwords): run.json is written as the loop starts."""
    return (run_dir / "run.json").stat().st_mtime - started


def timed(command: list[str], stdin: Path, stdout: Path) -> float:
    with stdin.open("rb") as source, stdout.open("wb") as sink:
        start = time.perf_counter()
        subprocess.run(command, stdin=source, stdout=sink, stderr=subprocess.DEVNULL, check=True)
        return time.perf_counter() - start


def luong_model(work: Path) -> Path:
    """The luong run's model folder: its selected model, or its last checkpoint when the clock
    stopped it (``luong average --last 1``)."""
    model = work / "luong"
    if not (model / "model.safetensors").exists():
        model = work / "luong-last"
        if not model.exists():
            run([*LUONG, "average", str(work / "luong"), "--last", "1", "--out", str(model)])
    return model


def decode_speed(python: Path, config: Path, work: Path, repeats: int, lines: int | None) -> dict:
    """Each tool translates devtest.en (greedy and beam 5) through its command line; BLEU and
    chrF of both outputs from sacreBLEU, speed from the whole file minus a one-line file."""
    data = work / "joey" / "data"
    sources = (data / "devtest.en").read_text(encoding="utf-8").splitlines()[:lines]
    refs = (data / "devtest.de").read_text(encoding="utf-8").splitlines()[: len(sources)]
    source = work / "devtest.en"
    source.write_text("".join(line + "\n" for line in sources), encoding="utf-8")
    one = work / "one.en"
    one.write_text(sources[0] + "\n", encoding="utf-8")
    results: dict[str, dict] = {}
    model = luong_model(work)
    for beam in (1, 5):
        beam_config = config.with_name(f"config-beam{beam}.yaml")
        text = config.read_text(encoding="utf-8")
        beam_config.write_text(re.sub(r"beam_size: \d+", f"beam_size: {beam}", text))
        commands = {
            "luong": [*LUONG, "translate", str(model), "--beam", str(beam)]
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
                "chrf": round(sacrebleu.corpus_chrf(hyps, [refs]).score, 2),
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


def peer_label(results: dict) -> str:
    """``JoeyNMT 2.3`` and, when the results name it, the peer's file and parameter count."""
    peer = results.get("peer")
    if peer is None:  # the results of the LSTM run before the peer became a choice
        return "JoeyNMT 2.3"
    return f"JoeyNMT 2.3, {peer['name']} ({peer['parameters'] / 1e6:.2f} M)"


def plot(runs: list[dict], path: Path) -> None:
    """Dev BLEU against minutes: luong and the peer of each run (luong once per run it was in).
    One run without a named peer is drawn as docs/joeynmt.png always was."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7, 4.2))
    FigureCanvasAgg(figure)
    axis = figure.subplots()
    luong_colours = ("tab:blue", "tab:cyan", "navy")
    peer_colours = ("tab:orange", "tab:red", "tab:green")
    for index, results in enumerate(runs):
        alone = len(runs) == 1 and "peer" not in results
        luong = "luong (--preset translation)"
        if not alone:
            # the preset evaluates dev at each epoch's end: one point an epoch
            epochs = len(results["curves"]["luong"])
            luong = f"luong (--preset translation, {epochs} epochs)"
            luong += f" ({results['luong_parameters'] / 1e6:.2f} M)"
            if len(runs) > 1:
                luong += f", beside {results['peer']['name']}"
        for name, colour, label in (
            ("luong", luong_colours[index % 3], luong),
            ("joeynmt", peer_colours[index % 3], peer_label(results)),
        ):
            curve = results["curves"][name]
            axis.plot([p["seconds"] / 60 for p in curve], [p["dev_bleu"] for p in curve],
                      "o-", ms=3, color=colour, label=label)  # fmt: skip
    axis.set_xlabel("minutes since the process started (one thread each, side by side)")
    axis.set_ylabel("dev BLEU, greedy (sacreBLEU)")
    title = "gettext-en-de, the same subwords (parameters in brackets)"
    if len(runs) == 1 and "peer" not in runs[0]:
        title = "gettext-en-de, the same model size and subwords"
    axis.set_title(title, fontsize=10)
    axis.grid(alpha=0.3)
    if len(runs) > 1:  # below the axes: a run longer than the hour ends in the lower right
        figure.set_figheight(6.0)
        axis.axvline(60, color="grey", lw=0.8, ls=":")
        axis.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=1)
    else:
        axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared/data/gettext-en-de")
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "joeynmt")
    parser.add_argument("--peer", type=Path, default=PEERS,
                        help="JoeyNMT's configuration (default: the shared LSTM)")  # fmt: skip
    parser.add_argument("--minutes", type=float, default=60.0, help="training wall time each")
    parser.add_argument("--repeats", type=int, default=3, help="decoding runs (median)")
    parser.add_argument("--validation-freq", type=int, default=400, help="JoeyNMT's (steps)")
    parser.add_argument("--decode-lines", type=int, default=None, help="devtest lines to decode")
    parser.add_argument("--no-decoding", action="store_true",
                        help="write the results of the training alone (decoding: null); a later "
                        "run without it decodes and completes them")  # fmt: skip
    parser.add_argument("--plot-only", action="store_true",
                        help="redraw the peer's figure from the JSONs only")  # fmt: skip
    parser.add_argument(
        "--results",
        type=Path,
        default=None,
        help="default: from --peer (benchmarks/joeynmt.json for the LSTM, "
        "benchmarks/transformer_equal.json for joeynmt_transformer_equal.yaml)",
    )
    parser.add_argument(
        "--figure",
        type=Path,
        default=None,
        help="default: from --peer (docs/joeynmt.png, docs/transformer.png)",
    )
    parser.add_argument("luong_flags", nargs="*", help="after --: more `luong train` flags")
    args = parser.parse_args()
    default_results, default_figure = outputs(args.peer)
    results_path = args.results or default_results
    figure_path = args.figure or default_figure
    if args.plot_only:
        runs = [json.loads(path.read_text()) for path in figure_runs(results_path)
                if path.exists()]  # fmt: skip
        if not runs:
            parser.error(f"no results to draw: {results_path} does not exist")
        plot(runs, figure_path)
        print(f"figure written to {figure_path} from {len(runs)} run(s)")
        return
    if not args.peer.is_file():
        parser.error(f"--peer: expected a JoeyNMT configuration file, got {args.peer}")
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    python = setup_venv(work)
    prepare_data(args.data.resolve(), work)
    config = joey_config(args.peer, work, validation_freq=args.validation_freq)
    model_dir = joey_model_dir(config)
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
        "joeynmt": joey_curve(model_dir, started["joeynmt"]),
    }
    final = curves["joeynmt"][-1] if curves["joeynmt"] else None
    record = work / "decoding.json"
    if not record.exists() and not args.no_decoding:
        decoding = decode_speed(python, config, work, args.repeats, args.decode_lines)
        record.write_text(json.dumps(decoding, indent=1) + "\n")
    decoding = json.loads(record.read_text()) if record.exists() else None
    versions = subprocess.run(
        [str(python), "-c", "import joeynmt, torch, sentencepiece as s; "
         "print(joeynmt.__version__, torch.__version__, s.__version__)"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    # the model decoded: a run that the clock stopped has its vocabularies in luong-last only
    luong = luong_model(work)
    spm_same = (luong / "src_vocab.model").read_bytes() == (
        work / "joey" / "data" / "spm4k.model"
    ).read_bytes()
    peer = args.peer.resolve()
    results = {
        "command": "python benchmarks/joeynmt.py " + " ".join(sys.argv[1:]),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}",
        "joeynmt": {"version": versions[0], "torch": versions[1], "sentencepiece": versions[2]},
        "peer": {
            "config": str(peer.relative_to(ROOT) if peer.is_relative_to(ROOT) else peer),
            "name": peer.stem.removeprefix(PEER_PREFIX),
            "parameters": joey_parameters(model_dir),
        },
        "luong_parameters": sum(p.numel() for p in Seq2Seq.from_pretrained(luong).parameters()),
        "minutes": args.minutes,
        "finished_on_its_own": training["finished_on_its_own"],
        "same_sentencepiece_model": spm_same,
        "curves": curves,
        # over the whole process: start-up and dev evaluations included
        "steps_per_second": {
            name: round(curve[-1]["step"] / curve[-1]["seconds"], 2) if curve else None
            for name, curve in curves.items()
        },
        "joeynmt_validation_freq": args.validation_freq,
        "joeynmt_validation_seconds": joey_validation_seconds(model_dir),
        "joeynmt_final_dev_bleu": final["dev_bleu"] if final else None,
        "luong_seconds_to_joeynmt_final": reached(curves["luong"], final["dev_bleu"])
        if final
        else None,
        "joeynmt_seconds_to_its_final": reached(curves["joeynmt"], final["dev_bleu"])
        if final
        else None,
        "decoding": decoding,
    }
    results_path.write_text(json.dumps(results, indent=1) + "\n")
    runs = [json.loads(path.read_text()) for path in figure_runs(results_path)]
    plot(runs, figure_path)
    print(f"results written to {results_path}, figure to {figure_path}")


if __name__ == "__main__":
    main()
