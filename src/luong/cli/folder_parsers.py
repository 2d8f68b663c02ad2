"""The grammar of the commands that read or rewrite run and model folders: ``luong runs``,
``curves``, ``average``, ``quantize``, ``shortlist`` and ``pair``, one
``add_<command>(commands)`` each.

Plain data only, as ``luong.cli.parsers``: this module imports no torch (nor anything that
does); ``luong.cli.COMMANDS`` names each function.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from luong.cli.common import add_device_flags, add_threads_flag, folder_to_write
from luong.config.choices import INT8_PARTS
from luong.config.faces import SHORTLIST_FREQUENT, SHORTLIST_PER_SOURCE

__all__ = [
    "add_average",
    "add_curves",
    "add_pair",
    "add_quantize",
    "add_runs",
    "add_shortlist",
]


def add_runs(commands: Any) -> None:
    runs = commands.add_parser(
        "runs",
        help="a table of the run folders under DIR",
        description="One row per run folder under DIR: task or data (paths as the run was "
        "given them), the settings that differ between the runs, the best dev figure, the "
        "test figures, training time, steps. A folder that cannot be read is skipped, with "
        "a line on stderr saying why.",
    )
    runs.add_argument("root", type=Path, metavar="DIR", help="a folder of run folders")
    runs.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text: a table; json: the rows as a JSON list (default text)",
    )
    runs.add_argument(
        "--wide",
        action="store_true",
        help="text: every column and whole cells (default: the table fits 120 columns; the "
        "settings left out are named on stderr)",
    )


def add_curves(commands: Any) -> None:
    curves = commands.add_parser(
        "curves",
        help="training loss and dev figure against steps and seconds",
        description="The curves of log.jsonl: training loss and the dev figure against "
        "steps and against seconds, several runs overlaid and labelled (PNG).",
    )
    curves.add_argument("runs", nargs="+", type=Path, metavar="RUN", help="run folders")
    curves.add_argument("--out", type=Path, required=True, help="the PNG to write")
    curves.add_argument("--dpi", type=int, default=100, help="pixels per inch (default 100)")


def add_average(commands: Any) -> None:
    parser = commands.add_parser(
        "average",
        help="average the weights of a run's last checkpoints into a model folder",
        description="Average checkpoints of one run into a model folder that luong eval, "
        "luong translate and luong.load read. Give a run folder with --last N (its N newest "
        "checkpoints; train with --keep-checkpoints N to keep them), or the checkpoint "
        "folders themselves. Checkpoints of two runs are refused (separately trained weights "
        "do not line up; an ensemble combines runs: luong translate RUN1 RUN2). --out must be "
        "a new or empty folder, or with --force an earlier average; it is written all or "
        "nothing. With --weights, interpolate instead: a model fine-tuned with --init-from "
        "and the model it started from (their runs may differ; their architecture and "
        "vocabularies may not), as luong average GENERAL ADAPTED --weights 0.5 0.5.",
    )
    parser.add_argument(
        "paths",
        nargs="+",
        type=Path,
        metavar="PATH",
        help="a run folder (with --last), or checkpoint folders of one run (or model folders "
        "outside any run)",
    )
    parser.add_argument(
        "--last", type=int, metavar="N", help="the run's N newest checkpoints (default: all)"
    )
    parser.add_argument(
        "--weights",
        type=float,
        nargs="+",
        metavar="W",
        help="one weight per PATH, each in [0, 1], summing to 1: the weighted mean of model "
        "folders or run folders of several runs that share an architecture and vocabularies "
        "(default: the plain mean of one run's checkpoints)",
    )
    parser.add_argument(
        "--out",
        type=folder_to_write("average"),
        required=True,
        help="the model folder to write (new or empty)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace --out if it holds an earlier average (in one step: a reader sees the "
        "old average or the new one); any other folder is still refused",
    )
    add_device_flags(parser)


def add_quantize(commands: Any) -> None:
    parser = commands.add_parser(
        "quantize",
        help="write a model's int8 form: half the size on disk, decoding 1.4-1.5x float32's "
        "speed on a CPU with VNNI or AMX units (docs/performance.md)",
        description="Write the int8 form of a model folder (int8 weights with a float scale "
        "per row, in safetensors): the decoder's output layer, cells and attentional layer "
        "multiply in int8 on the CPU. luong translate, eval, serve, ensembles and luong.load "
        "read it as any model folder; it is not trained further. --out must be a new or empty "
        "folder, or with --force an earlier int8 model; it is written all or nothing.",
    )
    parser.add_argument("model", type=Path, metavar="DIR", help="a model folder (float32)")
    parser.add_argument(
        "--out",
        type=folder_to_write("quantize"),
        required=True,
        help="the model folder to write (new or empty)",
    )
    parser.add_argument(
        "--parts",
        default=",".join(INT8_PARTS),
        metavar="PART[,PART]",
        help=f"what to hold in int8, comma-separated: some of {', '.join(INT8_PARTS)} "
        "(default: all three)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace --out if it holds an earlier int8 model (in one step); any other folder "
        "is still refused",
    )
    add_threads_flag(parser)


def add_shortlist(commands: Any) -> None:
    parser = commands.add_parser(
        "shortlist",
        help="learn a model's lexical shortlist from its training data: decoding then runs the "
        "output layer over each batch's likely target pieces only (--shortlist)",
        description="Learn a lexical table from training pairs with the model's own attention "
        "(each target piece linked to the source piece it attends to most, teacher-forced, "
        "one forward pass per batch), and write its shortlist into the model folder "
        "(shortlist.safetensors): each source piece's --per-source most likely target pieces "
        "and the --frequent most frequent ones. Every command that decodes the folder then "
        "uses it (--shortlist 0: the full vocabulary). The pairs: --train, or the run's own "
        "training data (its config.toml).",
    )
    parser.add_argument("model", type=Path, metavar="DIR", help="a model folder (or a run)")
    parser.add_argument(
        "--train",
        type=Path,
        metavar="FILE.tsv",
        help="the training pairs, source TAB target a line (default: the run's own, as its "
        "config.toml names them)",
    )
    parser.add_argument(
        "--skip-bad-lines",
        action="store_true",
        help="skip the training pairs' bad lines (counted on stderr) instead of stopping",
    )
    parser.add_argument(
        "--per-source",
        type=int,
        default=SHORTLIST_PER_SOURCE,
        metavar="K",
        help=f"target pieces kept per source piece (default {SHORTLIST_PER_SOURCE})",
    )
    parser.add_argument(
        "--frequent",
        type=int,
        default=SHORTLIST_FREQUENT,
        metavar="N",
        help=f"the most frequent target pieces, in every batch (default {SHORTLIST_FREQUENT})",
    )
    parser.add_argument(
        "--batch-size", type=int, default=64, help="pairs per forward pass (default 64)"
    )
    add_threads_flag(parser)


def add_pair(commands: Any) -> None:
    parser = commands.add_parser(
        "pair",
        help="show or record the language pair of a model folder",
        description="Show the language pair a model folder records (config.json's src_lang "
        "and tgt_lang), or record one with --src-lang and --tgt-lang: for a model trained "
        "without luong train --src-lang/--tgt-lang, so that luong serve's LibreTranslate API "
        "routes requests to it. Only config.json changes (all or nothing).",
    )
    parser.add_argument("model", type=Path, metavar="DIR", help="a model folder or run folder")
    parser.add_argument("--src-lang", metavar="CODE", help="the source language (en)")
    parser.add_argument("--tgt-lang", metavar="CODE", help="the target language (de)")
