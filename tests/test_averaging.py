"""``luong average``'s output folder and inputs: nothing but an earlier average is ever
replaced, the output is written all or nothing, only one run's checkpoints are averaged, and
every refusal is one line saying what was expected and what was given."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from helpers import assert_one_line_error, output_lines, small_model
from helpers import luong as run_luong

from luong.data.vocab import Vocab
from luong.model.averaging import average_checkpoints, average_models, run_of
from luong.model.seq2seq import Seq2Seq


def checkpoints(run: Path, seeds: list[int]) -> list[Path]:
    """A run folder holding checkpoints of small_model(seed) at steps ``seeds``, and the run's
    own model (small_model(99)) and files beside them, as ``luong train`` leaves it."""
    paths = []
    for seed in seeds:
        folder = run / "checkpoints" / f"step-{seed:07d}"
        small_model(seed).save_pretrained(folder)
        paths.append(folder)
    small_model(99).save_pretrained(run)
    (run / "run.json").write_text("{}\n", encoding="utf-8")
    return paths


def contents(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder``, by relative path, with its bytes."""
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def assert_weights(folder: Path, expected: Seq2Seq) -> None:
    loaded = Seq2Seq.from_pretrained(folder)
    for name, tensor in expected.state_dict().items():
        assert torch.equal(loaded.state_dict()[name], tensor), name


# -- item 1: nothing but an earlier average is replaced ------------------------------------


def test_out_at_a_run_a_model_or_your_own_folder_is_refused_and_left_alone(
    tmp_path: Path,
) -> None:
    run, other = tmp_path / "run", tmp_path / "other"
    paths = checkpoints(run, [1, 2])
    checkpoints(other, [3])
    own = tmp_path / "mine"
    own.mkdir()
    (own / "config.json").write_text('{"mine": true}\n', encoding="utf-8")
    (own / "notes.txt").write_text("keep me\n", encoding="utf-8")
    before = contents(tmp_path)
    message = (
        "{}: not empty and not an earlier luong average (it holds {}); choose a new or empty "
        "folder for --out (--force replaces only an earlier average)"
    )
    held = "checkpoints, config.json, model.safetensors and 3 more"
    cases = [(run, held), (other, held), (own, "config.json, notes.txt")]  # the input run too
    for out, shown in cases:
        for force in (False, True):
            with pytest.raises(ValueError) as info:
                average_checkpoints(paths, out, force=force)
            assert str(info.value) == message.format(out, shown)
    result = run_luong("average", str(run), "--out", str(run))
    assert_one_line_error(result, "luong: error: " + message.format(run, held))
    forced = run_luong("average", str(run), "--out", str(own), "--force")
    assert_one_line_error(forced, "luong: error: " + message.format(own, "config.json, notes.txt"))
    assert contents(tmp_path) == before


def test_an_earlier_average_is_replaced_only_with_force_and_all_at_once(tmp_path: Path) -> None:
    paths = checkpoints(tmp_path / "run", [1, 2, 3])
    out = tmp_path / "avg"
    average_checkpoints(paths[:2], out)
    first = contents(out)
    with pytest.raises(ValueError, match=f"{out}: holds an earlier average .* or --force to"):
        average_checkpoints(paths[1:], out)
    result = run_luong("average", str(tmp_path / "run"), "--last", "2", "--out", str(out))
    assert_one_line_error(
        result,
        f"{out}: holds an earlier average (averaged.json, config.json, model.safetensors and "
        "2 more); choose a new or empty folder for --out, or --force to replace it",
    )
    assert contents(out) == first
    forced = run_luong(
        "average", str(tmp_path / "run"), "--last", "2", "--out", str(out), "--force"
    )
    assert output_lines(forced) == [
        f"averaged 2 checkpoints (step-0000002, step-0000003) into {out}"
    ]
    assert_weights(out, average_models([small_model(2), small_model(3)]))
    record = json.loads((out / "averaged.json").read_text())
    assert record == {"averaged": [str(p) for p in paths[1:]], "count": 2}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["avg", "run"]  # no leftovers


def test_an_empty_folder_is_a_fine_out(tmp_path: Path) -> None:
    paths = checkpoints(tmp_path / "run", [1, 2])
    (tmp_path / "empty").mkdir()
    assert average_checkpoints(paths, tmp_path / "empty") == tmp_path / "empty"
    assert_weights(tmp_path / "empty", average_models([small_model(1), small_model(2)]))


def test_a_failed_write_leaves_no_half_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = checkpoints(tmp_path / "run", [1, 2])

    def full_disk(self: Seq2Seq, directory: Path) -> Path:
        Path(directory).mkdir(parents=True, exist_ok=True)
        (Path(directory) / "model.safetensors").write_bytes(b"half")
        raise OSError(28, "No space left on device", str(directory))

    monkeypatch.setattr(Seq2Seq, "save_pretrained", full_disk)
    with pytest.raises(OSError, match="No space left on device"):
        average_checkpoints(paths, tmp_path / "avg")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_force_must_be_a_bool(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="force: expected a bool, got str"):
        average_checkpoints([tmp_path], tmp_path / "avg", force="yes")  # type: ignore[arg-type]


# -- item 4: the checkpoints of one run -----------------------------------------------------


def test_checkpoints_of_two_runs_are_refused(tmp_path: Path) -> None:
    a = checkpoints(tmp_path / "a", [1, 2])
    b = checkpoints(tmp_path / "b", [3])
    result = run_luong("average", str(a[1]), str(b[0]), "--out", str(tmp_path / "avg"))
    assert_one_line_error(
        result,
        f"luong: error: {a[1]} and {b[0]} are checkpoints of two runs, {tmp_path / 'a'} and "
        f"{tmp_path / 'b'}; only the checkpoints of one run can be averaged (separately "
        "trained weights do not line up); to combine runs, use them as an ensemble (luong "
        f"translate {tmp_path / 'a'} {tmp_path / 'b'})",
    )
    # A run folder's own model belongs to its run as well.
    with pytest.raises(ValueError, match="are checkpoints of two runs"):
        average_checkpoints([a[0], tmp_path / "b"], tmp_path / "avg")
    assert not (tmp_path / "avg").exists()


def test_checkpoints_of_one_run_and_folders_outside_runs_average(tmp_path: Path) -> None:
    a = checkpoints(tmp_path / "a", [1, 2])
    copy = tmp_path / "copy"
    small_model(3).save_pretrained(copy)
    average_checkpoints([a[0], a[1], tmp_path / "a", copy], tmp_path / "avg")
    expected = average_models([small_model(s) for s in (1, 2, 99, 3)])
    assert_weights(tmp_path / "avg", expected)


def test_run_of_finds_the_run_where_the_folder_lies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = checkpoints(tmp_path / "a", [1])
    assert run_of(a[0]) == tmp_path / "a"
    assert run_of(tmp_path / "a") == tmp_path / "a"
    assert run_of(tmp_path) is None
    monkeypatch.chdir(a[0].parent)
    assert run_of("step-0000001") == (tmp_path / "a").resolve()


# -- item 10: the messages ------------------------------------------------------------------


def test_out_at_an_existing_file_names_it(tmp_path: Path) -> None:
    checkpoints(tmp_path / "run", [1])
    data = tmp_path / "tr.tsv"
    data.write_text("abc\t012\n", encoding="utf-8")
    result = run_luong("average", str(tmp_path / "run"), "--out", str(data))
    assert_one_line_error(
        result,
        f"luong: error: {data}: a file, not a folder; --out names the model folder to write "
        "(a new or empty folder)",
    )
    assert data.read_text(encoding="utf-8") == "abc\t012\n"


def test_two_run_folders_or_a_run_among_checkpoints_say_what_was_expected(
    tmp_path: Path,
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    ckpt = checkpoints(a, [1])[0]
    checkpoints(b, [2])
    two = run_luong("average", str(a), str(b), "--out", str(tmp_path / "avg"))
    assert_one_line_error(
        two,
        f"luong: error: expected one run folder, got 2 ({a}, {b}): only the checkpoints of "
        f"one run can be averaged; to combine runs, use them as an ensemble (luong translate "
        f"{a} {b})",
    )
    mixed = run_luong("average", str(ckpt), str(b), "--out", str(tmp_path / "avg"))
    assert_one_line_error(
        mixed,
        f"luong: error: expected one run folder alone, or checkpoint folders, got the run "
        f"folder {b} and {ckpt}; give the run folder alone (with --last N for its newest "
        f"checkpoints) or its checkpoint folders ({b / 'checkpoints'}/step-*)",
    )
    assert not (tmp_path / "avg").exists()


# -- interpolation: two runs that share a vocabulary, with a weight (issue 51) ---------------


def test_interpolation_is_the_weighted_mean_of_two_runs(tmp_path: Path) -> None:
    checkpoints(tmp_path / "general", [1])  # its own model: small_model(99)
    adapted = checkpoints(tmp_path / "adapted", [2])
    out = average_checkpoints(
        [tmp_path / "general", adapted[0]], tmp_path / "mixed", weights=[0.25, 0.75]
    )
    a, b = small_model(99), small_model(2)
    loaded = Seq2Seq.from_pretrained(out)
    for name, tensor in a.state_dict().items():
        if not tensor.is_floating_point():
            continue
        expected = (0.25 * tensor.double() + 0.75 * b.state_dict()[name].double()).float()
        assert torch.equal(loaded.state_dict()[name], expected), name
    record = json.loads((out / "averaged.json").read_text(encoding="utf-8"))
    assert record["weights"] == [0.25, 0.75]
    assert record["averaged"] == [str(tmp_path / "general"), str(adapted[0])]
    # weight 1 on one model is that model
    one = average_models([small_model(1), small_model(2)], weights=[1.0, 0.0])
    assert_weights_equal(one, small_model(1))


def assert_weights_equal(model: Seq2Seq, expected: Seq2Seq) -> None:
    for name, tensor in expected.state_dict().items():
        assert torch.equal(model.state_dict()[name], tensor), name


def test_interpolation_refuses_runs_whose_vocabularies_differ(tmp_path: Path) -> None:
    small_model(1).save_pretrained(tmp_path / "general")
    other = Vocab(list("0123456789+"))  # the size of helpers.TGT, another symbol
    small_model(2, tgt=other).save_pretrained(tmp_path / "adapted")
    with pytest.raises(ValueError) as caught:
        average_checkpoints(
            [tmp_path / "general", tmp_path / "adapted"], tmp_path / "mixed", weights=[0.5, 0.5]
        )
    assert str(caught.value).startswith(
        f"{tmp_path / 'general'} and {tmp_path / 'adapted'}: not one architecture ("
    )
    assert "the target vocabulary" in str(caught.value)
    assert str(caught.value).endswith(
        "only models of one architecture and one vocabulary can be interpolated"
    )
    assert not (tmp_path / "mixed").exists()


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ([0.5], r"weights: expected one per model \(2\), got 1"),
        ([1.5, -0.5], r"weights: expected each in \[0, 1\], got \[1.5, -0.5\]"),
        ([0.5, 0.4], r"weights: expected a sum of 1, got 0.9 \(\[0.5, 0.4\]\)"),
    ],
)
def test_interpolation_weights_are_checked_before_any_model_loads(
    tmp_path: Path, weights: list[float], message: str
) -> None:
    with pytest.raises(ValueError, match=message):  # the folders do not even exist
        average_checkpoints([tmp_path / "a", tmp_path / "b"], tmp_path / "out", weights=weights)
    with pytest.raises(TypeError, match="weights\\[1\\]: expected a number, got str"):
        average_models([small_model(1), small_model(2)], weights=[0.5, "0.5"])  # type: ignore[list-item]


def test_luong_average_weights_interpolates_two_runs_and_says_so(tmp_path: Path) -> None:
    [general] = checkpoints(tmp_path / "general", [1])
    [adapted] = checkpoints(tmp_path / "adapted", [2])
    out = tmp_path / "mixed"
    result = run_luong("average", str(general), str(adapted), "--weights", "0.25", "0.75",
                       "--out", str(out))  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode() == (
        f"interpolated 2 models ({general} 0.25, {adapted} 0.75) into {out}\n"
    )
    expected = average_models([small_model(1), small_model(2)], weights=[0.25, 0.75])
    assert_weights(out, expected)
    wrong = run_luong("average", str(general), str(adapted), "--weights", "1",
                      "--out", str(tmp_path / "other"))  # fmt: skip
    assert_one_line_error(wrong, "luong: error: --weights: expected one per PATH (2), got 1")
    assert not (tmp_path / "other").exists()
