"""The README's Python examples run as written, so the README cannot rot."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import luong

README = Path(__file__).resolve().parent.parent / "README.md"
PYPROJECT = (README.parent / "pyproject.toml").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_readme_has_the_api_examples() -> None:
    assert len(BLOCKS) == 3
    assert "luong.load" in BLOCKS[0] and "LuongAttention" in BLOCKS[1]
    assert 'luong.load(["runs/d1", "runs/d2"])' in BLOCKS[2]


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example_runs(index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    exec(compile(BLOCKS[index], f"README.md block {index}", "exec"), namespace)
    if index == 0:
        result = namespace["result"]
        # One epoch of the dates task already decodes nearly every date.
        assert result.metrics["test_exact_match"] > 0.9  # type: ignore[attr-defined]
        assert (tmp_path / "runs" / "api" / "model.safetensors").is_file()
    if index == 2:
        ensemble = namespace["ensemble"]
        assert [type(m).__name__ for m in ensemble.members] == ["Seq2Seq", "Seq2Seq"]  # type: ignore[attr-defined]
        options = luong.SearchOptions(beam=5, nbest=3)
        outputs = ensemble.translate_nbest(["3 May 1979"], options)  # type: ignore[attr-defined]
        assert len(outputs[0]) == 3 and len(set(outputs[0])) == 3
        # A pair that has learned the task (16 steps under 100 of warm-up gave "20-0-0-0-...").
        assert outputs[0][0] == "1979-05-03"


BASH = "\n".join(re.findall(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S))


def test_readme_commands_write_nothing_over_the_committed_files() -> None:
    # A reader who runs the README's commands in a clone overwrites no tracked figure: every
    # --out of a luong command names a new place (runs/, a file of the reader's), not docs/.
    outs = re.findall(r"luong [a-z-]+ [^\n#]*?--out (\S+)", BASH)
    assert len(outs) > 10
    assert [out for out in outs if out.startswith("docs")] == []


def test_readme_names_every_extra_of_the_package() -> None:
    text = README.read_text(encoding="utf-8")
    extras = re.findall(
        r"^([a-z]+) = \[",
        re.search(r"optional-dependencies\]\n(.*?)\n\[", PYPROJECT, re.S)[1],
        re.M,
    )
    assert extras == ["serve", "plot", "tensorboard", "export", "po", "tm", "align", "dev"]
    paragraph = text[text.index("The extras: ") :].split("\n\n")[0]
    assert [extra for extra in extras if f"`{extra}`" not in paragraph] == []


def test_quantize_says_what_int8_measured() -> None:
    help_text = " ".join(
        subprocess.run(
            [sys.executable, "-m", "luong", "--help"], capture_output=True, text=True, check=True
        ).stdout.split()
    )
    line = help_text[help_text.index("quantize ") :]
    assert line.startswith("quantize write a model's int8 form: half the size on disk")
    claim = line[: line.index(" pair ")]
    # The speeds docs/performance.md measured since issue 50 (1.38-1.54x, greedy and beam 5,
    # on the VNNI and the AMX CPU), and where: a bare "faster" would promise it on any CPU.
    assert "1.4-1.5x float32's speed on a CPU with VNNI or AMX units" in claim
    assert "faster" not in claim


def test_the_files_the_readme_names_from_the_clone_exist() -> None:
    # The translation demo's template, memory and glossary, and every other committed example
    # a README command reads, are in the repository (issue 53).
    named = set(re.findall(r"(?:examples|tests/data)/[\w./-]*\w", BASH))
    assert {"examples/wdiff.earlier.de.po", "examples/glossary.de.tsv"} <= named
    assert sorted(p for p in named if not (README.parent / p).exists()) == []


# What the README's shell blocks may read (issue 53): see the docstring of the test below.
BENCHMARK_MARKER = "# benchmark data:"
NEEDS_MARKER = "# needs "
SYNOPSIS_SECTION = "## Command line"
# A path: a word with a slash (not absolute, not a URL's, not a variable's), or a file name
# with one of these endings.
PATH = re.compile(
    r"(?<![\w./@:$<-])(?:(?:\.\./)*[\w.@-]+(?:/[\w.@-]+)+/?"
    r"|[\w.-]*\w\.(?:tsv|po|pot|mo|txt|jsonl|json|toml|tbx|csv|png|safetensors|gz|xz|whl))(?![\w/])"
)
# Commands that write a path that no flag names.
WRITES = {
    ("make", "demo"): "runs/dates",
    ("make", "demo-translation"): "runs/demo-de",
    ("-m", "build"): "dist",
}
# Flags (and shell operators) whose next word is a path the command writes.
WRITTEN_BY = {"--out", "-o", ">", "--debian", "--adapt", "venv"}
# Needs more than a clone and minutes: hours of training, a GPU, several machines, the network.
SLOW = re.compile(r"torchrun|--device cuda|luong train g2p|--preset (?:translation|wmt14)|--debian")


def readme_shell_blocks() -> list[tuple[str, str]]:
    """Each ```bash block (indented ones too, dedented) with the section it is in."""
    text = README.read_text(encoding="utf-8")
    blocks, section = [], ""
    pattern = r"^(#{2,3} [^\n]*)$|^( *)```bash\n(.*?)^\2```"
    for match in re.finditer(pattern, text, flags=re.S | re.M):
        if match[1]:
            section = match[1]
        else:
            blocks.append((section, textwrap.dedent(match[3])))
    return blocks


def shell_words(block: str) -> list[str]:
    """The words of a block's commands, in order: comments dropped, and in a transcript
    (lines starting with `$ `) the commands alone, not their output."""
    lines = block.splitlines()
    if any(line.startswith("$ ") for line in lines):
        kept, going_on = [], False
        for line in lines:
            if line.startswith("$ ") or going_on:
                kept.append(line.removeprefix("$ "))
            going_on = (line.startswith("$ ") or going_on) and line.endswith("\\")
        lines = kept
    lexer = shlex.shlex("\n".join(lines), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    return list(lexer)


def is_placeholder(path: str) -> bool:
    """A name in capitals (FILE.toml, T.tsv, OWN-DEV.tsv) stands for the reader's own file."""
    stem = path.rstrip("/").rsplit("/", 1)[-1].split(".")[0]
    return bool(re.fullmatch(r"[A-Z][A-Z0-9_-]*", stem))


def test_every_readme_block_runs_from_a_clone() -> None:
    """A clone holds what each README shell block reads (issue 53). In every ```bash block:

    - `../shared` (benchmark data beside the project's checkout, never in a clone) appears
      only in a block whose first line starts with `# benchmark data:` and says what the data
      is and where its figures and how to get it are (docs/results.md, benchmarks/);
    - every path a command names (a word with a slash, or a file name ending in .tsv, .po,
      .pot, .txt, ...) exists in the repository, or an earlier command of the README writes
      it or a folder above it: `--out`, `-o`, `>`, `--debian`, `--adapt`, `python -m venv`,
      `python -m build` (dist/), `make demo` (runs/dates), `make demo-translation`
      (runs/demo-de: its model and corpus). A model folder (`runs/...`) no command writes
      fails. Not checked: comments, a transcript's output lines, absolute paths (/dev/null),
      URLs, `$VARIABLE/...` paths, names in capitals (`FILE.toml`, `OWN.tsv`: the reader's
      own files), and, in a benchmark-data block, its `../shared` paths;
    - a block that trains for hours, needs a GPU, several machines or the network
      (`torchrun`, `--device cuda`, `luong train g2p`, `--preset translation` or `wmt14`,
      `--debian`) says so in its first line, `# needs ...` (with the time measured) or
      `# benchmark data: ...`; the synopsis under "## Command line" lists forms, not a
      session, and is exempt from this rule alone.
    """
    root = README.parent
    written: list[str] = []
    shared, missing, unsaid, marked = [], [], [], []

    def is_written(path: str) -> bool:
        path = path.rstrip("/")
        return any(
            path == out or path.startswith(out + "/") or ("$" in raw and path.startswith(out))
            for raw, out in ((raw, raw.split("$")[0].rstrip("/")) for raw in written)
        )

    for number, (section, block) in enumerate(readme_shell_blocks()):
        first = block.splitlines()[0]
        benchmark = first.startswith(BENCHMARK_MARKER)
        where = f"block {number} ({section}): "
        if benchmark:
            marked.append(section)
        if "../shared" in block and not benchmark:
            shared.append(where + first)
        if (
            SLOW.search(block)
            and section != SYNOPSIS_SECTION
            and not (benchmark or first.startswith(NEEDS_MARKER))
        ):
            unsaid.append(where + first)
        words = shell_words(block)
        for index, word in enumerate(words):
            for command, out in WRITES.items():
                if tuple(words[index : index + 2]) == command:
                    written.append(out)
            if index and words[index - 1] in WRITTEN_BY:
                written.append(word)
                continue
            if "://" in word or (index and words[index - 1] == "-H"):
                continue
            for path in PATH.findall(word):
                if benchmark and path.startswith("../shared"):
                    continue
                if is_placeholder(path) or is_written(path) or (root / path).exists():
                    continue
                missing.append(where + path)
    assert len(written) > 20 and marked == ["### A general corpus: every Debian package's catalogs"]
    assert {"../shared": shared, "missing": missing, "unsaid": unsaid} == {
        "../shared": [],
        "missing": [],
        "unsaid": [],
    }
