"""The README's Python examples run as written, so the README cannot rot."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import luong

README = Path(__file__).resolve().parent.parent / "README.md"
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
