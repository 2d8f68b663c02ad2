"""The README's Python examples run as written, so the README cannot rot."""

from __future__ import annotations

import re
import subprocess
import sys
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
    assert "faster" not in line[: line.index(" pair ")]


def test_the_files_the_readme_names_from_the_clone_exist() -> None:
    # The translation demo's template, memory and glossary, and every other committed example
    # a README command reads, are in the repository (issue 53).
    named = set(re.findall(r"(?:examples|tests/data)/[\w./-]*\w", BASH))
    assert {"examples/wdiff.earlier.de.po", "examples/glossary.de.tsv"} <= named
    assert sorted(p for p in named if not (README.parent / p).exists()) == []
