"""An export of a model with a lexical shortlist (``luong export``, ``luong.export.runtime``):
the runtime searches over each call's candidates as luong's search does. A shortlist of every
piece is the full vocabulary; a smaller one gives PyTorch's shortlisted outputs, greedy and
beam; a changed or missing shortlist file is one clear error; an export without a shortlist
is what it was."""

from __future__ import annotations

import io
import json
import random
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import SRC_SPACE, output_lines, small_model
from safetensors.numpy import load_file
from test_export import minimal_site, without_torch
from test_shortlist import every_piece, narrow, with_shortlist

from luong import Seq2Seq, Vocab
from luong.cli import main
from luong.common.folder_files import SHORTLIST
from luong.common.tensor_files import read_tensor_metadata, read_tensors, save_tensors
from luong.config.search import SearchOptions
from luong.export import runtime
from luong.export.exporter import check_export, export_onnx, graph_names
from luong.model.ensemble import shortlist_columns
from luong.search import decode

RANDOM = random.Random(4)
TEXTS = [
    " ".join(
        "".join(RANDOM.choices("abcdefghij", k=RANDOM.randint(1, 4)))
        for _ in range(RANDOM.randint(1, 4))
    )
    for _ in range(40)
]
SEARCHES = [
    SearchOptions(),
    SearchOptions(beam=3, alpha=0.6),
    SearchOptions(beam=5, nbest=3, beta=0.2),
    SearchOptions(beam=4, min_len=3, max_len=12),
    SearchOptions(beam=3, shortlist=1),
]
FIELDS = ("beam", "nbest", "alpha", "beta", "min_len", "max_len", "shortlist")


def runtime_options(options: SearchOptions) -> runtime.SearchOptions:
    return runtime.SearchOptions(**{name: getattr(options, name) for name in FIELDS})


def peaked(seed: int) -> Seq2Seq:
    """A float32 model with peaked distributions (``test_search_reference.lively``'s): beams
    differ and some end early."""
    model = small_model(seed, SRC_SPACE)
    with torch.no_grad():
        for param in model.parameters():
            param.mul_(2.5)
        model.decoder.out.bias[Vocab.eos_id] += 1.0
    return model


def assert_same(got: list, expected: list) -> None:
    """The same n-best lists bit for bit: tokens, scores, log-probabilities, attention."""
    for hyps, others in zip(got, expected, strict=True):
        assert len(hyps) == len(others)
        for h, o in zip(hyps, others, strict=True):
            assert (h.tokens, h.score, h.log_probs) == (o.tokens, o.score, o.log_probs)
            np.testing.assert_array_equal(h.attention, o.attention)


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> tuple[Seq2Seq, runtime.OnnxTranslator]:
    """A model of a shortlist of every piece and its export."""
    model = with_shortlist(peaked(5), every_piece(peaked(5)))
    return model, runtime.load(export_onnx(model, tmp_path_factory.mktemp("full") / "x"), 1)


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> tuple[Seq2Seq, Path]:
    """The same model without a shortlist and its export."""
    model = peaked(5)
    return model, export_onnx(model, tmp_path_factory.mktemp("plain") / "x")


@pytest.fixture(scope="module")
def listed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Seq2Seq, Path]:
    """A model of a random shortlist (2 target pieces a source piece) and its export."""
    model = with_shortlist(peaked(7), narrow(peaked(7), seed=1))
    return model, export_onnx(model, tmp_path_factory.mktemp("listed") / "x")


@pytest.mark.parametrize("options", SEARCHES[:4], ids=lambda o: f"beam{o.beam}-n{o.nbest}")
def test_a_shortlist_of_every_piece_decodes_as_the_full_vocabulary(
    full: tuple[Seq2Seq, runtime.OnnxTranslator],
    plain: tuple[Seq2Seq, Path],
    options: SearchOptions,
) -> None:
    _, onnx = full
    given = runtime_options(options)
    assert onnx.shortlist is not None and onnx.shortlist[0].shape[1] == 13  # PAD, BOS aside
    whole = onnx.decode(TEXTS, replace(given, shortlist=0), batch_size=16)
    # The same graph over the same rows in the same order: bit for bit, by default and as K.
    assert_same(onnx.decode(TEXTS, given, batch_size=16), whole)
    assert_same(onnx.decode(TEXTS, replace(given, shortlist=13), batch_size=16), whole)
    # And the export of the model without a shortlist (its output layer inside the graph).
    alone = runtime.load(plain[1], threads=1).decode(TEXTS, given, batch_size=16)
    assert [[h.tokens for h in hyps] for hyps in whole] == [
        [h.tokens for h in hyps] for hyps in alone
    ]


@pytest.mark.parametrize(
    "options", SEARCHES, ids=lambda o: f"beam{o.beam}-n{o.nbest}-k{o.shortlist}"
)
def test_a_shortlisted_export_gives_pytorchs_shortlisted_outputs(
    listed: tuple[Seq2Seq, Path], options: SearchOptions
) -> None:
    model, folder = listed
    onnx = runtime.load(folder, threads=1)
    expected = decode(model, TEXTS, options, batch_size=16)
    got = onnx.decode(TEXTS, runtime_options(options), batch_size=16)
    assert [[h.tokens for h in hyps] for hyps in got] == [
        [h.tokens for h in hyps] for hyps in expected
    ]
    for hyps, wanted in zip(got, expected, strict=True):
        assert [h.score for h in hyps] == pytest.approx([h.score for h in wanted], abs=1e-4)
    # It restricts: the full vocabulary gives other outputs, on both sides alike.
    full_options = replace(options, shortlist=0)
    whole = onnx.decode(TEXTS, runtime_options(full_options), batch_size=16)
    assert [h[0].tokens for h in whole] == [
        h[0].tokens for h in decode(model, TEXTS, full_options, batch_size=16)
    ]
    assert [h[0].tokens for h in whole] != [h[0].tokens for h in got]


def test_a_calls_candidates_are_luongs(listed: tuple[Seq2Seq, Path]) -> None:
    model, folder = listed
    onnx = runtime.load(folder, threads=1)
    for texts in (TEXTS[:9], ["abc", "abc"], ["j"], ["hij a", "b"]):  # PAD's row: when padded
        ids = [onnx.src_vocab.encode(text) for text in texts]
        for k in (1, 2):
            columns = shortlist_columns(model, texts, k)
            assert columns is not None
            ours = onnx.columns(ids, k)
            np.testing.assert_array_equal(ours.ids, columns.ids.numpy())
            weight, bias = model.decoder.out.weight.detach(), model.decoder.out.bias.detach()
            np.testing.assert_array_equal(ours.weight, weight[columns.ids].numpy())
            np.testing.assert_array_equal(ours.bias, bias[columns.ids].numpy())
    with pytest.raises(ValueError, match=r"per_source: expected 1 to 2, got 3"):
        onnx.columns([[4, 2]], 3)
    for bad in ([], [[4, 15]], [[-1, 2]]):
        with pytest.raises(ValueError, match=r"sources: expected one or more sources of ids in"):
            onnx.columns(bad, 1)


# The kinds whose step graphs differ in their inputs (no projection, local-m's step) or in
# how the attention reads the state (Bahdanau's previous state, local-p's position).
KINDS = [
    {"attention": "dot", "cell": "lstm", "input_feed": False, "dec_layers": 2},
    {"attention": "location", "max_src_len": 20},
    {"attention": "general", "local": "monotonic", "window": 2},
    {"attention": "concat", "local": "predictive", "window": 2, "cell": "lstm"},
    {"attention": "bahdanau"},
]


@pytest.mark.parametrize("fields", KINDS, ids=lambda f: f"{f['attention']}-{f.get('local', '')}")
def test_every_kind_of_step_takes_its_output_layer(fields: dict, tmp_path: Path) -> None:
    model = small_model(3, SRC_SPACE, **fields)
    model = with_shortlist(model, narrow(model, seed=4, k=3))
    folder = export_onnx(model, tmp_path / "x")  # checked: over the full layer and a cut
    assert check_export(folder, model) < 1e-5
    onnx = runtime.load(folder, threads=1)
    for options in (SearchOptions(), SearchOptions(beam=3, nbest=2)):
        got = onnx.decode(TEXTS, runtime_options(options), batch_size=16)
        expected = decode(model, TEXTS, options, batch_size=16)
        assert [h[0].tokens for h in got] == [h[0].tokens for h in expected]


def test_the_runtime_reads_the_shortlist_without_torch(
    listed: tuple[Seq2Seq, Path], tmp_path: Path
) -> None:
    model, folder = listed
    # A shortlisted export's deployment: numpy, onnxruntime, sentencepiece and safetensors.
    site = minimal_site(tmp_path / "site", extra=("safetensors",))
    code = (
        "import importlib.util, json, sys\n"
        "assert importlib.util.find_spec('torch') is None\n"
        f"sys.path.insert(0, {str(folder)!r})\n"
        "import luong_onnx\n"
        f"model = luong_onnx.load({str(folder)!r}, threads=1)\n"
        "texts = json.loads(sys.stdin.read())\n"
        "out = [model.translate(texts), model.translate(texts, luong_onnx.SearchOptions(beam=3))]\n"
        "assert not [m for m in sys.modules if m.split('.')[0] in ('torch', 'luong')]\n"
        "assert 'safetensors.numpy' in sys.modules\n"
        "print(json.dumps(out))\n"
    )
    result = without_torch(site, "-c", code, stdin=json.dumps(TEXTS[:12]).encode())
    assert result.returncode == 0, result.stderr.decode()
    expected = [
        [model.tgt_vocab.decode(h[0].tokens) for h in decode(model, TEXTS[:12], options)]
        for options in (SearchOptions(), SearchOptions(beam=3))
    ]
    assert json.loads(result.stdout) == expected
    # What the runtime reads is what safetensors' own loader reads.
    onnx = runtime.load(folder, threads=1)
    assert onnx.shortlist is not None and onnx.output_layer is not None
    table, layer = (
        load_file(str(folder / SHORTLIST)),
        load_file(str(folder / "output_layer.safetensors")),
    )
    np.testing.assert_array_equal(onnx.shortlist[0], table["targets"])
    np.testing.assert_array_equal(onnx.shortlist[1], table["frequent"])
    np.testing.assert_array_equal(onnx.output_layer[0], layer["weight"])
    np.testing.assert_array_equal(onnx.output_layer[1], layer["bias"])


def damaged(folder: Path, target: Path, change: str) -> Path:
    """A copy of the export ``folder`` at ``target`` with ``change`` made."""
    shutil.copytree(folder, target)
    manifest = json.loads((target / "export.json").read_text())
    if change == "changed shortlist":
        raw = bytearray((target / SHORTLIST).read_bytes())
        raw[-1] ^= 1  # the last id of the table
        (target / SHORTLIST).write_bytes(bytes(raw))
    elif change == "missing shortlist":
        (target / SHORTLIST).unlink()
    elif change == "changed output layer":
        raw = bytearray((target / "output_layer.safetensors").read_bytes())
        raw[-2] ^= 1
        (target / "output_layer.safetensors").write_bytes(bytes(raw))
    elif change == "another table":  # a table of other shapes, its SHA-256 recorded
        targets = torch.zeros(3, 2, dtype=torch.int32)
        save_tensors(target / SHORTLIST, {"targets": targets, "frequent": targets[0].clone()}, {})
        manifest["shortlist"]["sha256"] = runtime.file_sha256(target / SHORTLIST)
    elif change == "shortlist entry":
        manifest["shortlist"] = SHORTLIST
    elif change == "no output layer":
        del manifest["output_layer"]
    (target / "export.json").write_text(json.dumps(manifest))
    return target


DAMAGES = {
    "changed shortlist": (
        ValueError,
        "{folder}/shortlist.safetensors: changed since the model was exported (its SHA-256 is "
        "not the one export.json records); restore the file, or export the model again",
    ),
    "missing shortlist": (
        FileNotFoundError,
        "{folder}/shortlist.safetensors: missing (the export lists it in export.json); "
        "restore it, or export the model again",
    ),
    "changed output layer": (
        ValueError,
        "{folder}/output_layer.safetensors: changed since the model was exported",
    ),
    "another table": (
        ValueError,
        "{folder}/shortlist.safetensors: not a shortlist of this model (targets: shape [3, 2], "
        "expected [15, K]); the export is damaged: export the model again (luong export)",
    ),
    "shortlist entry": (
        ValueError,
        '{folder}/export.json: shortlist: expected {{"file": ..., "sha256": ...}} (a file of '
        "the folder and its SHA-256), got 'shortlist.safetensors'; the export is damaged",
    ),
    "no output layer": (
        ValueError,
        '{folder}/export.json: output_layer: expected {{"file": ..., "sha256": ...}} (a file '
        "of the folder and its SHA-256), got nothing; the export is damaged",
    ),
}


@pytest.mark.parametrize("change", list(DAMAGES))
def test_a_changed_or_missing_shortlist_is_one_clear_error(
    listed: tuple[Seq2Seq, Path],
    tmp_path: Path,
    change: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    folder = damaged(listed[1], tmp_path / "x", change)
    kind, message = DAMAGES[change]
    with pytest.raises(kind) as error:
        runtime.load(folder)
    assert str(error.value).startswith(message.format(folder=folder))
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"abc\n")))
    assert runtime.main([str(folder)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("luong_onnx: error: " + message.format(folder=folder))
    assert err.count("\n") == 1


def with_table(folder: Path, target: Path, targets: torch.Tensor, frequent: torch.Tensor) -> Path:
    """A copy of the export ``folder`` at ``target`` whose shortlist file holds ``targets``
    and ``frequent`` (its metadata kept), its SHA-256 recorded in ``export.json``: only the
    runtime's checks of the table itself stand between it and a search."""
    shutil.copytree(folder, target)
    metadata = read_tensor_metadata(folder / SHORTLIST)
    save_tensors(target / SHORTLIST, {"targets": targets, "frequent": frequent}, metadata)
    manifest = json.loads((target / "export.json").read_text())
    manifest["shortlist"]["sha256"] = runtime.file_sha256(target / SHORTLIST)
    (target / "export.json").write_text(json.dumps(manifest))
    return target / SHORTLIST


def test_a_shortlist_with_k_above_the_target_vocabulary_is_refused_unread(
    listed: tuple[Seq2Seq, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model, folder = listed
    rows, size = len(model.src_vocab), len(model.tgt_vocab)
    assert (rows, size) == (15, 15)
    # every id a shortlist may list (EOS and up), repeated to fill K columns
    listable = torch.arange(2, size, dtype=torch.int32)

    def table(k: int) -> torch.Tensor:
        return listable.repeat(rows, k // len(listable) + 1)[:, :k].contiguous()

    path = with_table(folder, tmp_path / "big", table(size + 1), listable[:3].clone())

    read = runtime._read_tensors

    def not_the_table(file: Path, expected: str) -> dict[str, np.ndarray]:
        assert file.name != SHORTLIST, "the table was read"
        return read(file, expected)  # the output layer's, read first

    monkeypatch.setattr(runtime, "_read_tensors", not_the_table)  # K from the header alone
    with pytest.raises(ValueError) as error:
        runtime.load(path.parent, threads=1)
    assert str(error.value) == (
        f"{path}: not a shortlist of this model (targets: K = 16 pieces per source piece, above "
        "the 15 of the target vocabulary); the export is damaged: export the model again "
        "(luong export)"
    )
    monkeypatch.undo()
    # K = V, the most there is, loads: only the table read tells it apart
    fits = with_table(folder, tmp_path / "fits", table(size), listable[:3].clone())
    onnx = runtime.load(fits.parent, threads=1)
    assert onnx.shortlist is not None and onnx.shortlist[0].shape == (rows, size)


@pytest.mark.parametrize(
    ("key", "special"), [("targets", 0), ("targets", 1), ("frequent", 0), ("frequent", 1)]
)
def test_a_shortlist_holding_pad_or_bos_is_refused(
    listed: tuple[Seq2Seq, Path], tmp_path: Path, key: str, special: int
) -> None:
    folder = listed[1]
    table = load_file(str(folder / SHORTLIST))
    tensors = {name: torch.from_numpy(ids.copy()) for name, ids in table.items()}
    assert not any(torch.isin(ids, torch.tensor([0, 1])).any() for ids in tensors.values())
    tensors[key].view(-1)[-1] = special  # one id of the table: PAD (0) or BOS (1)
    path = with_table(folder, tmp_path / "x", tensors["targets"], tensors["frequent"])
    with pytest.raises(ValueError) as error:
        runtime.load(path.parent, threads=1)
    assert str(error.value) == (
        f"{path}: not a shortlist of this model ({key}: holds PAD or BOS, which no shortlist "
        "lists); the export is damaged: export the model again (luong export)"
    )


def test_a_shortlist_asked_of_an_export_is_checked(
    listed: tuple[Seq2Seq, Path], plain: tuple[Seq2Seq, Path]
) -> None:
    without = runtime.load(plain[1], threads=1)
    with pytest.raises(
        ValueError, match=r"^shortlist: the export has no lexical shortlist .*got 3"
    ):
        without.translate(["abc"], runtime.SearchOptions(shortlist=3))
    with pytest.raises(ValueError, match=r"^shortlist: expected at most 2 .*got 3$"):
        runtime.load(listed[1], threads=1).translate(["abc"], runtime.SearchOptions(shortlist=3))
    with pytest.raises(ValueError, match=r"^shortlist: expected an int >= 0, got -1$"):
        runtime.SearchOptions(shortlist=-1)
    with pytest.raises(TypeError, match=r"^shortlist: expected an int >= 0, got True$"):
        runtime.SearchOptions(shortlist=True)  # type: ignore[arg-type]


def test_an_export_without_a_shortlist_is_as_it_was(plain: tuple[Seq2Seq, Path]) -> None:
    model, folder = plain
    manifest = json.loads((folder / "export.json").read_text())
    assert manifest["version"] == runtime.FORMAT_VERSION == 1
    assert "shortlist" not in manifest and "output_layer" not in manifest
    assert manifest["step"]["inputs"] == graph_names(model)["step"]["inputs"]
    assert "out_weight" not in manifest["step"]["inputs"]
    assert sorted(p.name for p in folder.iterdir()) == [
        "encoder.onnx",
        "export.json",
        "luong_onnx.py",
        "src_vocab.json",
        "step.onnx",
        "tgt_vocab.json",
    ]
    onnx = runtime.load(folder, threads=1)
    assert onnx.shortlist is None and onnx.output_layer is None
    for options in (SearchOptions(), SearchOptions(beam=3, nbest=2)):
        got = onnx.decode(TEXTS, runtime_options(options))
        assert_same(onnx.decode(TEXTS, replace(runtime_options(options), shortlist=0)), got)
        assert [h[0].tokens for h in got] == [h[0].tokens for h in decode(model, TEXTS, options)]


def test_luong_export_carries_the_folders_shortlist(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    model = with_shortlist(peaked(7), narrow(peaked(7), seed=2))
    model_dir = model.save_pretrained(tmp_path / "model")
    assert main(["export", str(model_dir), "--out", str(tmp_path / "onnx")]) == 0
    out, err = capfd.readouterr()
    assert "its lexical shortlist" in out and not err
    folder = tmp_path / "onnx"
    assert {SHORTLIST, "output_layer.safetensors"} <= {p.name for p in folder.iterdir()}
    manifest = json.loads((folder / "export.json").read_text())
    assert manifest["version"] == runtime.SHORTLIST_VERSION == 2
    assert manifest["step"]["inputs"][-2:] == ["out_weight", "out_bias"]
    # The model folder's table, as luong reads it.
    assert read_tensor_metadata(folder / SHORTLIST) == read_tensor_metadata(model_dir / SHORTLIST)
    ours, theirs = read_tensors(folder / SHORTLIST), read_tensors(model_dir / SHORTLIST)
    assert ours.keys() == theirs.keys() and all(torch.equal(ours[k], theirs[k]) for k in ours)
    onnx = runtime.load(folder, threads=1)
    for options in (SearchOptions(beam=3), SearchOptions(beam=3, shortlist=0)):
        assert onnx.translate(TEXTS, runtime_options(options)) == [
            model.tgt_vocab.decode(h[0].tokens) for h in decode(model, TEXTS, options)
        ]
    # The runtime's command: --shortlist K as luong translate's.
    lines = "".join(f"{text}\n" for text in TEXTS[:6]).encode()
    for flags, k in (([], None), (["--shortlist", "0"], 0), (["--shortlist", "1"], 1)):
        command = without_torch(
            minimal_site(tmp_path / f"site{k}", extra=("safetensors",)),
            str(folder / "luong_onnx.py"),
            str(folder),
            "--beam",
            "2",
            *flags,
            stdin=lines,
        )
        expected = onnx.translate(TEXTS[:6], runtime.SearchOptions(beam=2, shortlist=k))
        assert output_lines(command) == expected
    # Deployed without safetensors: one line naming the file and the package.
    bare = without_torch(
        minimal_site(tmp_path / "bare"), str(folder / "luong_onnx.py"), str(folder), stdin=lines
    )
    assert bare.returncode != 0 and bare.stdout == b""
    assert bare.stderr.decode().splitlines() == [
        f"luong_onnx: error: {folder / 'output_layer.safetensors'}: an export with a lexical "
        "shortlist needs the safetensors package to read it: pip install safetensors"
    ]
