"""A model as ONNX graphs: the encoder and one decoder step, with the vocabulary files and the
runtime beside them (``luong export``; the runtime is ``luong.export.runtime``).

Shapes: ``B`` sentences, ``S`` source length (EOS included), ``R`` decoder rows, ``L`` decoder
layers, ``d`` decoder width, ``K`` key width, ``V`` target vocabulary.

The graphs are traced from the model's own code, so they compute what luong computes:

- the encoder graph is ``Seq2Seq.encode`` on the packed-sequence path (``Encoder`` with
  ``max_groups = 0``), which ONNX's LSTM and GRU operators take with ``sequence_lens``: a
  sentence's keys and final state do not depend on the padding after it;
- the step graph is ``Decoder.step`` on the rows' sentences (``rows`` gathers each row's
  keys, projection and mask, so beams share one encoding), with the target position ``step``
  an input for local-m, followed by the log-softmax;
- a model with a lexical shortlist (``luong.data.shortlist``, ``luong shortlist``) is exported for
  the runtime to search over each call's candidates as ``luong.search`` does: its step graph
  takes the output layer's rows as inputs (``Decoder.step`` with ``OutputRows``), which the
  runtime cuts once per search call, and the folder holds the shortlist's table and the
  output layer beside the graphs.

Inputs and outputs, by model (``graph_names``): the encoder takes src ``[B, S]`` and
src_lengths ``[B]`` and gives keys ``[B, S, K]``, proj ``[B, S, d]`` (the attention's key
projection; not for dot, whose projection is the keys, nor location, which reads none),
hidden ``[L, B, d]`` and, for an LSTM, cell. The step takes tokens ``[R]``, hidden, cell
(LSTM), feed ``[R, d]`` (input feeding), keys, proj, mask ``[B, S]``, rows ``[R]`` and step
``[]`` (local-m) and gives log_probs ``[R, V]``, new_hidden, new_cell, new_feed (the state
after the step) and weights ``[R, S]``. With a shortlist the step also takes out_weight
``[C, d]`` and out_bias ``[C]`` (the output layer's rows of C target ids, the full layer for
the full vocabulary) and its log_probs are ``[R, C]``, over those ids.

The graphs are written with torch's TorchScript-based exporter (``dynamo=False``): the
torch.export-based one cannot trace a packed sequence (torch 2.13). Every export is checked:
the runtime's encoder and step are run against the model on a batch of other shapes than
the traced one, and an export that differs by more than ``TOLERANCE`` is refused.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import shutil
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from luong.common.errors import LuongError, LuongTypeError
from luong.common.files import shown_names, write_folder, write_text
from luong.common.folder_files import SHORTLIST, SRC_VOCAB, TGT_VOCAB
from luong.common.tensor_files import write_tensors
from luong.data.vocab import Vocab
from luong.export import runtime
from luong.model.decoder import DecoderState, Memory, OutputRows
from luong.model.folder import is_int8_folder
from luong.model.seq2seq import Seq2Seq, evaluating
from luong.version import __version__, install_extra

__all__ = [
    "OPSET",
    "TOLERANCE",
    "EncoderGraph",
    "StepGraph",
    "check_export",
    "check_out",
    "export_folder",
    "export_onnx",
    "graph_names",
]

OPSET = 17
"""The ONNX opset the graphs are written in (onnxruntime 1.12 and later run it)."""

TOLERANCE = 1e-4
"""The largest difference between an export and its model that ``export_onnx`` accepts (the
tests hold the graphs to 1e-5)."""

# Scores whose key projection the step computes itself, at no cost: dot's is the keys,
# location's is empty (it scores from the query alone).
_FREE_PROJ = ("dot", "location")


def graph_names(model: Seq2Seq, shortlist: bool = False) -> dict[str, dict[str, list[str]]]:
    """The inputs and outputs of the two graphs of ``model`` (the module docstring):
    ``{"encoder": {"inputs": [...], "outputs": [...]}, "step": {...}}``; ``shortlist``: the
    step takes the output layer's rows (out_weight, out_bias)."""
    config = model.config
    lstm = config.cell == "lstm"
    proj = model.decoder.attention.score not in _FREE_PROJ
    cell = ["cell"] if lstm else []
    feed = ["feed"] if config.input_feed else []
    return {
        "encoder": {
            "inputs": ["src", "src_lengths"],
            "outputs": ["keys", *(["proj"] if proj else []), "hidden", *cell],
        },
        "step": {
            "inputs": [
                "tokens",
                "hidden",
                *cell,
                *feed,
                "keys",
                *(["proj"] if proj else []),
                "mask",
                "rows",
                *(["step"] if config.local == "monotonic" else []),
                *(["out_weight", "out_bias"] if shortlist else []),
            ],
            # ONNX names each value once: the state out is new_hidden, new_cell, new_feed.
            "outputs": [
                "log_probs",
                *(f"new_{name}" for name in ["hidden", *cell, *feed]),
                "weights",
            ],
        },
    }


class EncoderGraph(nn.Module):
    """``Seq2Seq.encode`` as the encoder graph: src ``[B, S]``, src_lengths ``[B]`` -> the
    outputs ``graph_names`` lists. ``model`` must encode through packed sequences
    (``max_groups = 0``): the per-length path reads the lengths on the host, which a trace
    would freeze."""

    def __init__(self, model: Seq2Seq) -> None:
        super().__init__()
        self.model = model
        self.outputs = graph_names(model)["encoder"]["outputs"]

    def forward(self, src: Tensor, src_lengths: Tensor) -> tuple[Tensor, ...]:
        # Seq2Seq.encode without the mask (the runtime makes it from the lengths; its check
        # of the lengths reads sizes that a trace holds as tensors).
        keys, final = self.model.encoder(src, src_lengths)
        hidden, cell = self.model.bridge(final)
        values = {
            "keys": keys,
            "proj": self.model.decoder.attention.project_keys_unchecked(keys),
            "hidden": hidden,
            "cell": cell,
        }
        return tuple(values[name] for name in self.outputs)


class StepGraph(nn.Module):
    """``model.decoder.step`` as the step graph: the inputs ``graph_names`` lists, in that
    order -> its outputs (log_probs is the log-softmax of the step's logits; ``shortlist``:
    of the logits of the output layer's rows given as out_weight and out_bias)."""

    def __init__(self, model: Seq2Seq, shortlist: bool = False) -> None:
        super().__init__()
        self.decoder = model.decoder
        names = graph_names(model, shortlist)["step"]
        self.inputs, self.outputs = names["inputs"], names["outputs"]

    def forward(self, *values: Tensor) -> tuple[Tensor, ...]:
        given = dict(zip(self.inputs, values, strict=True))
        rows = given["rows"]
        keys = given["keys"].index_select(0, rows)  # [R, S, K]
        mask = given["mask"].index_select(0, rows)
        attention = self.decoder.attention
        proj = (
            given["proj"].index_select(0, rows)
            if "proj" in given
            else attention.project_keys_unchecked(keys)
        )
        hidden = given["hidden"]
        # Without input feeding the step reads no feed; the state still holds one.
        feed = given.get("feed", hidden.new_zeros(hidden.shape[1:]))
        # A tensor where the state counts steps with an int: the trace then keeps local-m's
        # window a function of the input, not of the position it was traced at.
        step: Any = given.get("step", 0)
        state = DecoderState(hidden, given.get("cell"), feed, None, step)
        out = OutputRows(given["out_weight"], given["out_bias"]) if "out_weight" in given else None
        logits, new, weights = self.decoder.step(
            given["tokens"], state, Memory(keys, mask, proj), out
        )
        results = {
            "log_probs": torch.log_softmax(logits.float(), dim=-1),
            "new_hidden": new.hidden,
            "new_cell": new.cell,
            "new_feed": new.feed,
            "weights": weights,
        }
        return tuple(results[name] for name in self.outputs)  # type: ignore[misc]


def check_out(out: str | Path) -> Path:
    """``out`` as a path, when it is a new or an empty folder.

    Raises:
        ValueError: ``out`` is a file, or a folder that holds something.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise LuongError(f"{out}: a file, not a folder; --out names a new or empty folder")
    held = sorted(path.name for path in out.iterdir()) if out.is_dir() else []
    if held:
        shown = shown_names(held)
        raise LuongError(
            f"{out}: not empty (it holds {shown}); choose a new or empty folder for --out"
        )
    return out


def export_folder(directory: str | Path, out: str | Path) -> Path:
    """Export the model folder (or run folder) ``directory`` into ``out`` (``export_onnx``).

    Raises:
        FileNotFoundError: ``directory`` is not a model folder (``Seq2Seq.from_pretrained``).
        ValueError: as ``export_onnx``, checked before the model is read; an int8 model
            (``luong quantize``).
        ModuleNotFoundError: onnx or onnxruntime is not installed.
    """
    check_out(out)
    if is_int8_folder(directory):
        raise LuongError(
            f"{directory}: an int8 model (luong quantize); export the float model it was made "
            "from (the ONNX graphs are float32)"
        )
    return export_onnx(Seq2Seq.from_pretrained(directory), out)


def export_onnx(model: Seq2Seq, out: str | Path) -> Path:
    """Write ``model`` as an export folder, all or nothing: ``encoder.onnx``, ``step.onnx``,
    the vocabulary files (and sentencepiece models) as the model folder holds them,
    ``export.json`` (the format, the config, each graph's inputs and outputs, the vocabulary
    files' SHA-256, which the runtime checks) and the runtime
    ``luong_onnx.py``; returns its path. A model with a lexical shortlist (``model.shortlist``)
    is exported with it: the step graph takes the output layer's rows as inputs, and the
    folder also holds the table (``SHORTLIST``, as the model folder's) and the output layer
    (``runtime.OUTPUT_LAYER``), each with its SHA-256 in ``export.json`` (format version 2;
    an export without a shortlist is version 1, as before). The export is checked against
    the model (``check_export``) before the folder appears.

    Raises:
        TypeError: ``model`` is not a ``Seq2Seq``.
        ValueError: ``model`` is an int8 model (``Seq2Seq.to_int8``); ``out`` is a file or a
            folder that holds something; an export that differs from the model by more than
            ``TOLERANCE``.
        ModuleNotFoundError: onnx or onnxruntime is not installed.
    """
    if not isinstance(model, Seq2Seq):
        raise LuongTypeError(f"model: expected a Seq2Seq, got {type(model).__name__}")
    if model.int8_parts:
        raise LuongError(
            "model: an int8 model (luong quantize); export the float model it was made from "
            "(the ONNX graphs are float32)"
        )
    out = check_out(out)
    missing = [name for name in ("onnx", "onnxruntime") if importlib.util.find_spec(name) is None]
    if missing:
        raise ModuleNotFoundError(
            f"luong export needs the packages onnx and onnxruntime, missing: "
            f"{', '.join(missing)} ({install_extra('export')})"
        )
    # A copy on the CPU in float32 and eval mode: the caller's model stays as it is.
    model = copy.deepcopy(model).float().cpu().eval()
    model.encoder.max_groups = 0  # packed sequences (EncoderGraph)
    shortlist = model.shortlist is not None
    names = graph_names(model, shortlist)

    def fill(tmp: Path) -> None:
        _trace(model, tmp, names)
        model.src_vocab.save(tmp / SRC_VOCAB)
        model.tgt_vocab.save(tmp / TGT_VOCAB)
        shutil.copyfile(runtime.__file__, tmp / runtime.RUNTIME)
        manifest: dict[str, Any] = {
            "format": runtime.FORMAT,
            "version": runtime.SHORTLIST_VERSION if shortlist else runtime.FORMAT_VERSION,
            "luong_version": __version__,
            "opset": OPSET,
            "model": model.config.to_json(),
            "max_src_len": model.config.max_src_len,
            "encoder": {"file": runtime.ENCODER, **names["encoder"]},
            "step": {"file": runtime.STEP, **names["step"]},
            "src_vocab": SRC_VOCAB,
            "tgt_vocab": TGT_VOCAB,
            # What the runtime checks the vocabulary files against: a symbol edited in one
            # would decode other text, silently.
            runtime.VOCAB_SHA256: {
                name: runtime.file_sha256(tmp / name) for name in (SRC_VOCAB, TGT_VOCAB)
            },
            "runtime": runtime.RUNTIME,
        }
        if model.shortlist is not None:
            # What the runtime cuts once per search call: the table, and the output layer
            # the step graph takes as inputs. A changed file would decode other text.
            model.shortlist.save(tmp, model.src_vocab, model.tgt_vocab)
            layer = model.decoder.out
            assert isinstance(layer, nn.Linear) and layer.bias is not None  # float, not int8
            write_tensors(
                tmp / runtime.OUTPUT_LAYER,
                {"weight": layer.weight.detach(), "bias": layer.bias.detach()},
                {"format": runtime.OUTPUT_LAYER_FORMAT},
            )
            for key, file in (("shortlist", SHORTLIST), ("output_layer", runtime.OUTPUT_LAYER)):
                manifest[key] = {"file": file, "sha256": runtime.file_sha256(tmp / file)}
        # The language pair, under config.json's keys, where the model records one.
        for key, code in (("src_lang", model.src_lang), ("tgt_lang", model.tgt_lang)):
            if code is not None:
                manifest[key] = code
        write_text(tmp / runtime.MANIFEST, json.dumps(manifest, indent=2) + "\n")
        difference = check_export(tmp, model)
        if not difference <= TOLERANCE:
            raise LuongError(
                f"the exported graphs differ from the model by {difference:.3g} (more than "
                f"{TOLERANCE:g}); nothing was written"
            )

    return write_folder(out, fill)


def _trace(model: Seq2Seq, folder: Path, names: dict[str, dict[str, list[str]]]) -> None:
    """Write the two graphs, traced on a batch of B = 2 sentences of S = 5 (fewer for a model
    that takes shorter sources) and R = 3 rows (with a shortlist, over the whole output
    layer: ``check_export`` runs it over fewer rows)."""
    width = min(5, model.config.max_src_len + 1)
    src = torch.full((2, width), Vocab.unk_id, dtype=torch.long)
    src[:, -1] = Vocab.eos_id
    src_lengths = torch.tensor([width, 1])
    src[1, 0], src[1, 1:] = Vocab.eos_id, Vocab.pad_id
    rows = torch.tensor([0, 1, 1])
    with torch.inference_mode():
        memory, state = model.encode(src, src_lengths)
    example = {
        "tokens": torch.full((3,), Vocab.bos_id, dtype=torch.long),
        "hidden": state.hidden[:, rows],
        "cell": None if state.cell is None else state.cell[:, rows],
        "feed": state.feed[rows],
        "keys": memory.keys,
        "proj": memory.proj,
        "mask": memory.mask,
        "rows": rows,
        "step": torch.tensor(0),
        "out_weight": model.decoder.out.weight,
        "out_bias": model.decoder.out.bias,
    }
    axes = {
        "src": {0: "B", 1: "S"},
        "src_lengths": {0: "B"},
        "keys": {0: "B", 1: "S"},
        "proj": {0: "B", 1: "S"},
        "mask": {0: "B", 1: "S"},
        "tokens": {0: "R"},
        "rows": {0: "R"},
        "feed": {0: "R"},
        "log_probs": {0: "R", 1: "C"} if "out_weight" in names["step"]["inputs"] else {0: "R"},
        "out_weight": {0: "C"},
        "out_bias": {0: "C"},
        "new_feed": {0: "R"},
        "weights": {0: "R", 1: "S"},
    }
    encoder_axes = {**axes, "hidden": {1: "B"}, "cell": {1: "B"}}
    step_axes = {
        **axes,
        **{f"{new}{name}": {1: "R"} for new in ("", "new_") for name in ("hidden", "cell")},
    }
    # In eval mode: torch.onnx.export puts a module back in its mode afterwards, and a new
    # module's is training (with dropout), which would reach the model inside.
    for graph, inputs, file, graph_axes, kind in (
        (EncoderGraph(model).eval(), (src, src_lengths), runtime.ENCODER, encoder_axes, "encoder"),
        (
            StepGraph(model, "out_weight" in names["step"]["inputs"]).eval(),
            tuple(example[name] for name in names["step"]["inputs"]),
            runtime.STEP,
            step_axes,
            "step",
        ),
    ):
        used = names[kind]["inputs"] + names[kind]["outputs"]
        with torch.no_grad(), warnings.catch_warnings():
            # The TorchScript exporter's deprecation and the tracer's warnings about values
            # read on the host (the checks of the model's own code) are not the user's.
            warnings.simplefilter("ignore")
            torch.onnx.export(
                graph,
                inputs,
                str(folder / file),
                dynamo=False,
                input_names=names[kind]["inputs"],
                output_names=names[kind]["outputs"],
                dynamic_axes={name: graph_axes[name] for name in used if name in graph_axes},
                opset_version=OPSET,
            )


def check_export(folder: str | Path, model: Seq2Seq, seed: int = 0) -> float:
    """The largest absolute difference between an export folder's graphs, run by the runtime,
    and ``model`` (in eval mode) on a random batch of B = 3 sentences of S = 7 (fewer for a
    model that takes shorter sources) and one decoder step of R = 4 rows at target position
    3: the encoder's outputs, then the step's log-probabilities (where finite), state and
    attention weights; with a shortlist, the step's log-probabilities over a cut of the
    output layer too (every other target id, the specials and the step's tokens)."""
    translator = runtime.OnnxTranslator(folder, threads=1)
    generator = torch.Generator().manual_seed(seed)
    low = min(len(Vocab.SPECIALS), len(model.src_vocab) - 1)
    width = min(7, model.config.max_src_len + 1)
    ids = [
        [*torch.randint(low, len(model.src_vocab), (n - 1,), generator=generator).tolist(), 2]
        for n in (width, max(1, width - 3), 1)
    ]
    encoded = translator.encode(ids)
    src = torch.zeros(3, width, dtype=torch.long)
    for b, row in enumerate(ids):
        src[b, : len(row)] = torch.tensor(row)
    rows = np.array([0, 2, 2, 1])
    tokens = torch.randint(0, len(model.tgt_vocab), (4,), generator=generator)
    index = torch.from_numpy(rows)
    with torch.inference_mode(), evaluating(model):
        memory, state = model.encode(src, torch.tensor([len(row) for row in ids]))
        wanted = {"keys": memory.keys, "proj": memory.proj, "hidden": state.hidden}
        if state.cell is not None:
            wanted["cell"] = state.cell
        start = DecoderState(
            state.hidden[:, index],
            None if state.cell is None else state.cell[:, index],
            state.feed[index],
            None,
            3,
        )
        logits, after, weights = model.decoder.step(tokens, start, memory.select(index))
    got: dict[str, Any] = {"keys": encoded.keys, "proj": encoded.proj, **encoded.state}
    if encoded.proj is None:  # dot's projection is the keys, location's empty
        del wanted["proj"]
    differences = [_difference(got[name], wanted[name]) for name in wanted]
    step_state = {
        name: value[:, rows] if name in ("hidden", "cell") else value[rows]
        for name, value in encoded.state.items()
    }
    log_probs, new_state, new_weights = translator.run_step(
        tokens.numpy(), step_state, encoded, rows, 3
    )
    wanted_log_probs = torch.log_softmax(logits, dim=-1)
    finite = np.isfinite(log_probs)
    differences.append(_difference(log_probs[finite], wanted_log_probs.numpy()[finite]))
    differences.append(_difference(new_weights, weights))
    for name, value in new_state.items():
        differences.append(_difference(value, getattr(after, name)))
    if translator.output_layer is not None:
        keep = torch.zeros(len(model.tgt_vocab), dtype=torch.bool)
        keep[::2] = True
        keep[: len(Vocab.SPECIALS)] = True
        keep[tokens] = True
        cut_ids = keep.nonzero().squeeze(1)
        with torch.inference_mode(), evaluating(model):
            cut, _, _ = model.decoder.step(
                tokens, start, memory.select(index), model.decoder.output_rows(cut_ids)
            )
        weight, bias = translator.output_layer
        columns = runtime.Columns(cut_ids.numpy(), weight[cut_ids.numpy()], bias[cut_ids.numpy()])
        column_tokens = np.searchsorted(columns.ids, tokens.numpy())
        cut_log_probs, _, _ = translator.run_step(
            column_tokens, step_state, encoded, rows, 3, columns
        )
        wanted_cut = torch.log_softmax(cut, dim=-1).numpy()
        finite = np.isfinite(cut_log_probs)
        differences.append(_difference(cut_log_probs[finite], wanted_cut[finite]))
    return max(differences)


def _difference(got: np.ndarray, wanted: Tensor | np.ndarray) -> float:
    wanted = wanted.numpy() if isinstance(wanted, Tensor) else wanted
    if got.shape != wanted.shape:
        return float("inf")
    return float(np.abs(got - wanted).max()) if got.size else 0.0
