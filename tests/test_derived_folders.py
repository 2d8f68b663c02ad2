"""Folders that luong writes, derives and replaces: atomic writes through links and never over
what is not a regular file, output folders replaced only when they hold nothing but luong's
own files, what killed writers leave cleared, derived folders (int8, averages) that keep
their run's task, ``luong pair``'s edit of config.json, and an export folder that checks its
own files and input (its vocabularies' hashes, its manifest, its graphs, a 1 MiB line).

Oracles: the bytes of every file a refusal must leave alone, read before and after; exact
one-line messages; the rows a search step runs; luong's own tokenizer and config reader.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import SRC_SPACE, TGT, TINY_MODEL_FLAGS, assert_one_line_error, luong, small_model
from helpers import toy_pairs as pairs_of

from luong import Vocab
from luong.common.files import (
    MAX_LINE_BYTES,
    atomic_write,
    clear_stale_partials,
    write_folder,
    write_text,
)
from luong.config.run import RunConfig, read_toml_tables, run_toml
from luong.data.prepare import prepare_corpus
from luong.data.prepared import PreparedData
from luong.data.subword import train_subword
from luong.export import runtime
from luong.export.exporter import export_onnx
from luong.model.folder import record_language_pair
from luong.training.settings import configure
from luong.training.state import clear_leftovers


def folder_bytes(folder: Path) -> dict[str, bytes | None]:
    """Every entry under ``folder`` by its relative path: a file's bytes, None for a folder."""
    return {
        str(path.relative_to(folder)): None if path.is_dir() else path.read_bytes()
        for path in sorted(folder.rglob("*"))
    }


def write_tsv(path: Path, pairs: list[tuple[str, str]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{s}\t{t}\n" for s, t in pairs), encoding="utf-8")
    return path


# -- atomic writes: links, devices, FIFOs (red team 1) ------------------------------------------


def test_a_link_is_written_through_and_stays_a_link(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "out.po"
    target.write_text("old\n")
    link = tmp_path / "out.po"
    link.symlink_to(Path("real") / "out.po")
    write_text(link, "new\n")
    assert link.is_symlink() and os.readlink(link) == str(Path("real") / "out.po")
    assert target.read_text() == "new\n"
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == ["out.po"]  # no temp
    # A dangling link: the file it names is created, the link kept.
    dangling = tmp_path / "new.po"
    dangling.symlink_to(tmp_path / "real" / "made.po")
    write_text(dangling, "made\n")
    assert dangling.is_symlink() and (tmp_path / "real" / "made.po").read_text() == "made\n"


def test_what_is_not_a_regular_file_is_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    folder = tmp_path / "folder"
    folder.mkdir()
    to_fifo = tmp_path / "to-pipe"
    to_fifo.symlink_to(fifo)
    written: list[Path] = []
    for path, message in (
        (fifo, f"{fifo}: a FIFO (named pipe), not a regular file; name a regular file to write"),
        (folder, f"{folder}: a folder, not a regular file"),
        (to_fifo, f"{to_fifo} (a link to {fifo}): a FIFO (named pipe), not a regular file"),
    ):
        with pytest.raises(ValueError, match="^" + re.escape(message)):
            atomic_write(path, written.append)
    assert written == []  # refused before the temporary file was made
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and to_fifo.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder", "pipe", "to-pipe"]
    # /dev/null is only looked at (stat): the refusal comes before any write.
    before = os.stat("/dev/null")
    with pytest.raises(ValueError, match="^/dev/null: a character device, not a regular file"):
        write_text("/dev/null", "x")
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (
        before.st_ino,
        before.st_rdev,
    )


def test_luong_pair_writes_through_a_linked_config_json(tmp_path: Path) -> None:
    model = small_model().save_pretrained(tmp_path / "model")
    shared = tmp_path / "shared.json"
    (model / "config.json").rename(shared)
    (model / "config.json").symlink_to(shared)
    result = luong("pair", str(model), "--src-lang", "en", "--tgt-lang", "de")
    assert result.returncode == 0, result.stderr.decode()
    assert (model / "config.json").is_symlink()
    assert json.loads(shared.read_text())["tgt_lang"] == "de"


# -- prepare --out (red team 2) -----------------------------------------------------------------


def test_prepare_replaces_only_a_corpus_that_holds_nothing_else(tmp_path: Path) -> None:
    dataset = tmp_path / "mydataset"
    write_tsv(dataset / "train.tsv", pairs_of(20))
    (dataset / "manifest.json").write_text('{"name": "my dataset", "splits": ["train"]}\n')
    (dataset / "labels.txt").write_text("a\nb\n")
    before = folder_bytes(dataset)
    result = luong("prepare", "--train", str(dataset / "train.tsv"), "--out", str(dataset))
    assert_one_line_error(
        result,
        f"luong: error: {dataset}: not a luong prepared corpus (no luong manifest.json); choose "
        "a new or empty folder for --out (an earlier corpus is replaced only when it holds "
        "nothing else)",
    )
    assert folder_bytes(dataset) == before
    # An earlier corpus is replaced; the same corpus with a file of yours beside it is not.
    out = tmp_path / "prep"
    assert (
        luong("prepare", "--train", str(dataset / "train.tsv"), "--out", str(out)).returncode == 0
    )
    assert (
        luong("prepare", "--train", str(dataset / "train.tsv"), "--out", str(out)).returncode == 0
    )
    (out / "NOTES.txt").write_text("mine\n")
    (out / "extra").mkdir()
    before = folder_bytes(out)
    assert_one_line_error(
        luong("prepare", "--train", str(dataset / "train.tsv"), "--out", str(out)),
        f"luong: error: {out}: a prepared corpus that also holds other files (NOTES.txt, "
        "extra); choose a new or empty folder for --out",
    )
    assert folder_bytes(out) == before


# -- quantize --out --force (red team 3, audit) ---------------------------------------------------


@pytest.fixture(scope="module")
def fake_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder as a dates run leaves it for what derived folders read of it: a model, its
    config.toml, and two checkpoints (model folders of the same architecture)."""
    run = tmp_path_factory.mktemp("runs") / "dates"
    small_model(1, src=SRC_SPACE).save_pretrained(run)
    write_text(run / "config.toml", run_toml(RunConfig("dates", {"seed": 0})))
    for seed in (2, 3):
        small_model(seed, src=SRC_SPACE).save_pretrained(run / "checkpoints" / f"step-000000{seed}")
    return run


@pytest.mark.parametrize(
    "yours",
    ["NOTES.txt", "notes/", "run.json", "log.jsonl", "checkpoints/", "metrics.json"],
)
def test_quantize_force_replaces_only_an_int8_folder_that_holds_nothing_else(
    fake_run: Path, tmp_path: Path, yours: str
) -> None:
    out = tmp_path / "int8"
    assert luong("quantize", str(fake_run), "--out", str(out)).returncode == 0
    # An earlier int8 folder, the run's config.toml included, is replaced with --force.
    forced = luong("quantize", str(fake_run), "--out", str(out), "--parts", "output", "--force")
    assert forced.returncode == 0, forced.stderr.decode()
    if yours.endswith("/"):
        (out / yours / "kept.txt").parent.mkdir()
        (out / yours / "kept.txt").write_text("mine\n")
    else:
        (out / yours).write_text("{}\n")
    before = folder_bytes(out)
    name = yours.rstrip("/")
    assert_one_line_error(
        luong("quantize", str(fake_run), "--out", str(out), "--force"),
        f"luong: error: {out}: holds an int8 model and other files ({name}); choose a new or "
        "empty folder for --out (--force replaces only an earlier int8 model that holds "
        "nothing else)",
    )
    assert folder_bytes(out) == before


# -- derived folders keep their run's task (walk 6) -----------------------------------------------


def test_eval_reads_the_task_of_an_int8_folder_and_an_average_as_of_the_run(
    fake_run: Path, tmp_path: Path
) -> None:
    on_run = luong("eval", str(fake_run), "--n", "30", "--json")
    assert on_run.returncode == 0, on_run.stderr.decode()
    assert json.loads(on_run.stdout)["task"] == "dates"
    int8, average = tmp_path / "int8", tmp_path / "avg"
    assert luong("quantize", str(fake_run), "--out", str(int8)).returncode == 0
    steps = sorted(str(p) for p in (fake_run / "checkpoints").iterdir())
    assert luong("average", *steps, "--out", str(average)).returncode == 0
    for folder in (int8, average):
        derived = luong("eval", str(folder), "--n", "30", "--json")
        assert derived.returncode == 0, derived.stderr.decode()
        assert (folder / "config.toml").read_bytes() == (fake_run / "config.toml").read_bytes()
        given = luong("eval", str(folder), "--task", "dates", "--n", "30", "--json")
        assert json.loads(derived.stdout) == json.loads(given.stdout)
    # The int8 form of the average carries it on.
    again = tmp_path / "avg-int8"
    assert luong("quantize", str(average), "--out", str(again)).returncode == 0
    assert (again / "config.toml").read_bytes() == (fake_run / "config.toml").read_bytes()


def test_a_carried_config_names_your_own_files_from_its_new_folder(tmp_path: Path) -> None:
    data = tmp_path / "data"
    write_tsv(data / "train.tsv", pairs_of(8))
    write_tsv(data / "dev.tsv", pairs_of(4, seed=1))
    run = tmp_path / "runs" / "own"
    small_model(4).save_pretrained(run)
    own = RunConfig("tsv", {"train": "../../data/train.tsv", "dev": "../../data/dev.tsv"})
    write_text(run / "config.toml", run_toml(own))
    out = tmp_path / "deploy" / "models" / "int8"
    assert luong("quantize", str(run), "--out", str(out)).returncode == 0
    carried = read_toml_tables(out / "config.toml")
    assert carried["data"] == {"train": "../../../data/train.tsv", "dev": "../../../data/dev.tsv"}
    assert {k: v for k, v in carried.items() if k != "data"} == {
        k: v for k, v in read_toml_tables(run / "config.toml").items() if k != "data"
    }
    # luong train --config reads the same files from either folder.
    files = [configure(config_file=folder / "config.toml").data for folder in (out, run)]
    assert files[0] == files[1]
    assert Path(files[0]["train"]).resolve() == (data / "train.tsv").resolve()
    assert_one_line_error(
        luong("eval", str(out)),
        f"{out} was trained on your own files (task 'tsv' in {out / 'config.toml'}): pass --data",
    )


# -- what a killed writer leaves (red team 14) ----------------------------------------------------


KILLED_WRITER = """
import os, sys, time
from luong.common.files import write_folder

def fill(tmp):
    (tmp / "half").write_text("x")
    print(tmp, flush=True)
    time.sleep(600)

write_folder(sys.argv[1], fill)
"""


def writer(folder: Path) -> tuple[subprocess.Popen[str], Path]:
    """A process inside ``write_folder(folder)``, and the partial folder it is filling."""
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(folder)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert child.stdout is not None
    return child, Path(child.stdout.readline().strip())


def test_a_killed_writers_partial_folder_is_cleared_and_a_live_ones_kept(tmp_path: Path) -> None:
    out = tmp_path / "prep"
    live, busy = writer(out)
    killed, stale = writer(out)
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait()
    try:
        lock = Path(f"{stale}.lock")
        assert stale.is_dir() and lock.is_file() and busy.is_dir()
        # A partial folder of luong's from before the locks, its process gone; one whose
        # process runs (this one); another folder's, and a name that is not luong's.
        legacy = tmp_path / f".partial-prep.{killed.pid}.{'a' * 32}"
        running = tmp_path / f".partial-prep.{os.getpid()}.{'b' * 32}"
        other = tmp_path / f".partial-prep.v2.{killed.pid}.{'c' * 32}"
        mine = tmp_path / ".partial-prep.backup"
        for folder in (legacy, running, other, mine):
            folder.mkdir()
        write_tsv(tmp_path / "train.tsv", pairs_of(20))
        result = luong("prepare", "--train", str(tmp_path / "train.tsv"), "--out", str(out))
        assert result.returncode == 0, result.stderr.decode()
        assert not stale.exists() and not lock.exists() and not legacy.exists()
        assert busy.is_dir() and Path(f"{busy}.lock").is_file()
        assert running.is_dir() and other.is_dir() and mine.is_dir()
        assert clear_stale_partials(out) == []  # the live writer's is still its own
    finally:
        live.kill()
        live.wait()
    assert clear_stale_partials(out) == [busy]
    left = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".partial-prep."))
    assert left == sorted([other.name, running.name, mine.name])


def test_a_resumed_run_clears_what_a_killed_checkpoint_write_left(tmp_path: Path) -> None:
    checkpoints = tmp_path / "checkpoints"
    partial = checkpoints / f".partial-step-0000008.123.{'d' * 32}"
    partial.mkdir(parents=True)
    Path(f"{partial}.lock").write_text("")
    (checkpoints / "step-0000004").mkdir()
    clear_leftovers(checkpoints)
    assert sorted(p.name for p in checkpoints.iterdir()) == ["step-0000004"]


def test_write_folder_writes_through_a_linked_folder(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    link = tmp_path / "out"
    link.symlink_to(tmp_path / "real")
    assert write_folder(link, lambda tmp: (tmp / "a").write_text("1")) == tmp_path / "real"
    assert link.is_symlink() and (link / "a").read_text() == "1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "real"]


# -- luong pair (red team 14) ---------------------------------------------------------------------


def test_pair_changes_only_its_fields_and_keeps_the_rest_as_written(tmp_path: Path) -> None:
    folder = small_model().save_pretrained(tmp_path / "m")
    raw = json.loads((folder / "config.json").read_text())
    raw = {"author": "Jürgen Müller", **raw, "tgt_lang": "fr", "notes": {"ü": [1, 2]}}
    text = json.dumps(raw, ensure_ascii=False, indent=4) + "\n"
    (folder / "config.json").write_text(text, encoding="utf-8")
    result = luong("pair", str(folder), "--src-lang", "en", "--tgt-lang", "de")
    assert result.returncode == 0, result.stderr.decode()
    expected = text.replace('"tgt_lang": "fr"', '"tgt_lang": "de"')
    expected = expected[: -len("\n}\n")] + ',\n    "src_lang": "en"\n}\n'
    got = (folder / "config.json").read_text(encoding="utf-8")
    assert got == expected
    assert "Jürgen Müller" in got and "\\u00fc" not in got
    # The file saved by luong (two spaces, one object) takes the two keys at its end.
    plain = small_model().save_pretrained(tmp_path / "plain")
    before = (plain / "config.json").read_text()
    record_language_pair(plain, "en", "de")
    assert (plain / "config.json").read_text() == before[: -len("\n}\n")] + (
        ',\n  "src_lang": "en",\n  "tgt_lang": "de"\n}\n'
    )


def test_pair_refuses_a_folder_that_is_no_model_and_one_language_twice(tmp_path: Path) -> None:
    other = tmp_path / "webapp"
    other.mkdir()
    (other / "config.json").write_text('{\n    "name": "app",\n    "author": "Müller"\n}\n')
    before = folder_bytes(other)
    assert_one_line_error(
        luong("pair", str(other), "--src-lang", "en", "--tgt-lang", "de"),
        f"luong: error: {other}: not a luong model folder (config.json is not a luong model's "
        "config:",
    )
    assert_one_line_error(luong("pair", str(other)), f"{other}: not a luong model folder")
    # A model's config.json without the weights beside it is no model folder either.
    folder = small_model().save_pretrained(tmp_path / "m")
    shutil.copy(folder / "config.json", other / "config.json")
    before = folder_bytes(other)
    assert_one_line_error(
        luong("pair", str(other), "--src-lang", "en", "--tgt-lang", "de"),
        f"luong: error: {other}: not a luong model folder (no model.safetensors beside "
        "config.json)",
    )
    assert folder_bytes(other) == before
    model_before = folder_bytes(folder)
    assert_one_line_error(
        luong("pair", str(folder), "--src-lang", "en", "--tgt-lang", "en"),
        "--src-lang and --tgt-lang: expected two languages, got 'en' for both",
    )
    with pytest.raises(ValueError, match="src_lang and tgt_lang: expected two languages"):
        record_language_pair(folder, "de", "de")
    assert folder_bytes(folder) == model_before


# -- a prepared shard edited at the same size (red team 13) --------------------------------------


def test_train_on_a_shard_with_an_id_past_the_vocabulary_is_one_line(tmp_path: Path) -> None:
    prep = tmp_path / "prep"
    prepare_corpus(write_tsv(tmp_path / "train.tsv", pairs_of(40)), prep)
    ids = prep / "00000.tgt.ids"
    data = bytearray(ids.read_bytes())
    data[6:8] = (60_000).to_bytes(2, "little")  # the first pair's third target id
    ids.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"00000.tgt.ids: id 60000 in pair 1, outside the 14"):
        PreparedData(prep).batch([3, 0])
    write_tsv(tmp_path / "dev.tsv", pairs_of(4, seed=2))
    result = luong(
        "train", "--data", str(prep), "--dev", str(tmp_path / "dev.tsv"),
        "--out", str(tmp_path / "run"), *TINY_MODEL_FLAGS,
    )  # fmt: skip
    assert_one_line_error(
        result,
        f"luong: error: {ids}: id 60000 in pair 1, outside the 14 ids of its vocabulary; the "
        "corpus is damaged: prepare it again",
    )


# -- the export folder checks its files and its input (red team 7, 12, 13) -------------------------


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    model = small_model(3, src=SRC_SPACE, tgt=TGT)
    return export_onnx(model, tmp_path_factory.mktemp("onnx") / "model")


def damaged(exported: Path, tmp_path: Path) -> Path:
    """A copy of the export folder, to damage."""
    return Path(shutil.copytree(exported, tmp_path / "copy"))


def run_runtime(
    folder: Path, stdin: bytes, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[int, str, str]:
    """``python luong_onnx.py FOLDER < stdin``, in this process."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    status = runtime.main([str(folder)])
    out, err = capsys.readouterr()
    return status, out, err


def test_an_edited_vocabulary_is_refused_by_the_runtime(
    exported: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    manifest = json.loads((exported / "export.json").read_text())
    assert manifest["vocab_sha256"] == {
        name: __import__("hashlib").sha256((exported / name).read_bytes()).hexdigest()
        for name in ("src_vocab.json", "tgt_vocab.json")
    }
    folder = damaged(exported, tmp_path)
    vocab = json.loads((folder / "tgt_vocab.json").read_text())
    symbols = vocab["symbols"]
    symbols[0], symbols[1] = symbols[1], symbols[0]  # "0" and "1" swapped: other dates
    (folder / "tgt_vocab.json").write_text(json.dumps(vocab))
    status, out, err = run_runtime(folder, b"abc\n", capsys, monkeypatch)
    assert (status, out) == (1, "")
    assert err == (
        f"luong_onnx: error: {folder / 'tgt_vocab.json'}: changed since the model was exported "
        "(its SHA-256 is not the one export.json records); the graphs were exported with the "
        "vocabulary as written: restore the file, or export the model again\n"
    )


def test_a_line_of_dev_zero_is_one_line_at_the_bound(
    exported: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert runtime.MAX_LINE_BYTES == MAX_LINE_BYTES
    with open("/dev/zero", "rb") as zeros:
        with pytest.raises(ValueError, match=r"^<stdin>:1: line longer than 1048576 bytes"):
            next(runtime._lines(zeros, "<stdin>"))
        assert zeros.tell() <= MAX_LINE_BYTES + 2  # nothing read past the bound
    at_bound = b"a" * MAX_LINE_BYTES
    assert list(runtime._lines(io.BytesIO(at_bound + b"\r\nb"), "x")) == [at_bound.decode(), "b"]
    status, out, err = run_runtime(exported, b"ab\n" + b"\0" * (2 << 20), capsys, monkeypatch)
    assert (status, out) == (1, "")
    assert err == (
        "luong_onnx: error: <stdin>:2: line longer than 1048576 bytes; expected a text file of "
        "one sentence a line\n"
    )


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (
            "truncated step.onnx",
            "{folder}/step.onnx: not a graph onnxruntime can load (",
        ),
        (
            "no max_src_len",
            "{folder}/export.json: max_src_len: expected an int >= 1, got nothing; the export "
            "is damaged: export the model again (luong export)",
        ),
        (
            "encoder x",
            '{folder}/export.json: encoder: expected {{"file": ..., "inputs": [...], '
            "\"outputs\": [...]}}, got 'x'; the export is damaged",
        ),
        (
            "graph file outside",
            "{folder}/export.json: step.file: expected the name of a graph file of the folder, "
            "got '../step.onnx'",
        ),
        (
            "hashes not an object",
            "{folder}/export.json: vocab_sha256: expected the SHA-256 (64 hex digits) of "
            "src_vocab.json and tgt_vocab.json, got [1]",
        ),
    ],
)
def test_a_damaged_export_is_one_line(
    exported: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    damage: str,
    message: str,
) -> None:
    folder = damaged(exported, tmp_path)
    manifest = json.loads((folder / "export.json").read_text())
    if damage == "truncated step.onnx":
        step = (folder / "step.onnx").read_bytes()
        (folder / "step.onnx").write_bytes(step[: len(step) // 2])
    elif damage == "no max_src_len":
        del manifest["max_src_len"]
    elif damage == "encoder x":
        manifest["encoder"] = "x"
    elif damage == "graph file outside":
        manifest["step"]["file"] = "../step.onnx"
    else:
        manifest["vocab_sha256"] = [1]
    (folder / "export.json").write_text(json.dumps(manifest))
    status, out, err = run_runtime(folder, b"abc\n", capsys, monkeypatch)
    assert (status, out) == (1, "")
    assert err.startswith("luong_onnx: error: " + message.format(folder=folder)), err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_an_export_from_before_the_hashes_still_loads(exported: Path, tmp_path: Path) -> None:
    folder = damaged(exported, tmp_path)
    manifest = json.loads((folder / "export.json").read_text())
    del manifest["vocab_sha256"]
    (folder / "export.json").write_text(json.dumps(manifest))
    texts = ["abc", "j ih"]
    assert runtime.load(folder).translate(texts) == runtime.load(exported).translate(texts)


# -- the runtime's beam ties and tokenizer (hidden fault audit) ----------------------------------

A, B, C = 4, 5, 6  # two target tokens that tie, and one that follows them with probability 1


def test_a_beam_that_ties_greedy_search_is_kept(
    exported: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Greedy search's A C C C and the beam B C C C score the same (alpha 2, log P -0.7, where
    s(G) * lp(limit) rounds one float32 step above log P): B is kept beside A to the end. The
    runtime once pruned beams below greedy search's score, with a tolerance for this rounding;
    it now runs no greedy search for a bound, as luong's decoding (docs/performance.md,
    "Lexical shortlists"), and no step but the beams' own."""
    onnx = runtime.load(exported, threads=1)
    lp = np.float32(((5 + 4) / 6) ** 2)
    assert np.float32(-0.7) / lp * lp > np.float32(-0.7)  # the rounding this case needed
    rows: list[int] = []

    def run_step(tokens, state, encoded, at, t, out=None):  # type: ignore[no-untyped-def]
        rows.append(len(tokens))
        log_probs = np.full((len(tokens), len(onnx.tgt_vocab)), -np.inf, dtype=np.float32)
        if t == 0:
            log_probs[:, [A, B]] = -0.7
        else:
            log_probs[:, C] = 0.0
        return log_probs, state, np.zeros((len(tokens), encoded.mask.shape[1]), np.float32)

    monkeypatch.setattr(onnx, "run_step", run_step)
    encoded = onnx.encode([[4, 5, 2]])
    limits = np.array([4])
    options = runtime.SearchOptions(beam=2, alpha=2.0, max_len=4)
    (best,) = onnx.beam(encoded, limits, options)
    # The beams alone, no greedy search first: B C C C ran beside A C C C to the end.
    assert rows == [1, 2, 2, 2]
    assert best[0].tokens in ([A, C, C, C], [B, C, C, C])
    both = onnx.beam(encoded, limits, runtime.SearchOptions(beam=2, nbest=2, alpha=2.0, max_len=4))
    assert sorted(h.tokens for h in both[0]) == [[A, C, C, C], [B, C, C, C]]
    assert both[0][0].score == both[0][1].score == best[0].score


# Composed and decomposed umlauts, full-width letters, digits and punctuation.
UNICODE = {
    "Grüße aus Köln": "Gru\u0308ße aus Ko\u0308ln",
    "GRÜSSE 123!": "ＧＲＵ\u0308ＳＳＥ　１２３！",
}


@pytest.mark.parametrize(
    "build",
    [
        lambda corpus: Vocab.build(corpus, "char"),
        lambda corpus: Vocab.build(corpus, "char", normalization="NFC"),
        lambda corpus: Vocab.build(corpus, "space", lowercase=True),
        lambda corpus: train_subword(corpus * 20, "unigram", 305),
    ],
    ids=["char-nfkc", "char-nfc", "space-lowercase", "subword-nfc"],
)
def test_the_runtimes_tokenizer_normalises_unicode_as_luong(build, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    corpus = [*UNICODE, "Zwölf Boxkämpfer jagen Viktor", "über den großen Deich 42."]
    vocab = build(corpus)
    vocab.save(tmp_path / "vocab.json")
    ours = runtime.Vocabulary(tmp_path / "vocab.json")
    for composed, other in UNICODE.items():
        for text in (composed, other):
            assert ours.tokenize(text) == vocab.tokenize(text), text
            assert ours.encode(text) == vocab.encode(text, eos=True), text
    # Decomposed umlauts are luong's composed ones, known symbols, under NFC and NFKC alike.
    decomposed = UNICODE["Grüße aus Köln"]
    assert ours.encode(decomposed) == ours.encode("Grüße aus Köln")
    assert runtime.UNK not in ours.encode(decomposed)
    # Full-width forms are ASCII under NFKC (sources), kept under NFC (targets).
    full_width = ours.encode(UNICODE["GRÜSSE 123!"])
    assert (full_width == ours.encode("GRÜSSE 123!")) == (ours.normalization == "NFKC")
