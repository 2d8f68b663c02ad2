"""Tests of ``luong.config``: the architecture, training and vocabulary dataclasses, checked on
construction, and their JSON and TOML forms.

Oracles: the exact error messages (each names the field, what it expected and what it got);
round trips through JSON (``to_json`` / ``from_json``, ``config_from_dict``) and through a
run's TOML (``run_toml`` / ``read_toml_tables``) that give back equal configs; the bounds of
the test decoding, checked as ``SearchOptions`` (at the limit accepted, one above refused).
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest
from helpers import small_config, small_model

import luong.config
from luong.common.checks import check_positive_int, check_strings
from luong.common.errors import LuongError, LuongTypeError
from luong.common.files import MAX_TEXT_BYTES
from luong.config.choices import ATTENTIONS
from luong.config.fields import config_from_dict
from luong.config.model import MAX_LAYERS, MAX_SRC_LEN, MAX_WIDTH, Seq2SeqConfig
from luong.config.run import RunConfig, read_toml_tables, run_toml
from luong.config.search import MAX_ALPHA, MAX_BEAM, MAX_OUTPUT_LEN, SearchOptions
from luong.config.train import TrainConfig
from luong.config.vocab import VocabConfig
from luong.evaluation.metrics import exact_match
from luong.model.recurrence import Recurrence
from luong.search.text import decode
from luong.service.batcher import Batcher
from luong.translation.admission import admit

# --- Seq2SeqConfig -------------------------------------------------------------------------------


def test_config_defaults_are_the_demo_model() -> None:
    cfg = Seq2SeqConfig()
    assert (cfg.cell, cfg.bidirectional, cfg.enc_layers, cfg.enc_hidden) == ("gru", True, 2, 64)
    assert (cfg.dec_hidden, cfg.attention, cfg.input_feed) == (128, "dot", True)
    assert cfg.key_dim == 128


@pytest.mark.parametrize(
    ("field", "value", "choices"),
    [
        ("attention", "luong", "dot, general, concat, location, scaled_dot, bahdanau"),
        ("local", "global", "none, monotonic, predictive"),
        ("cell", "rnn", "lstm, gru"),
        ("bridge", "mean", "bridge, last, zero"),
    ],
)
def test_config_unknown_choice_lists_the_choices(field: str, value: str, choices: str) -> None:
    with pytest.raises(ValueError, match=f"{field}: expected one of {choices}, got '{value}'"):
        small_config(**{field: value})


def test_config_attention_choices() -> None:
    assert set(ATTENTIONS) == {"dot", "general", "concat", "location", "scaled_dot", "bahdanau"}


def test_config_dot_needs_keys_as_wide_as_decoder() -> None:
    with pytest.raises(ValueError, match=r"key width 6 .*!= dec_hidden 8"):
        small_config(attention="dot", dec_hidden=8)
    with pytest.raises(ValueError, match=r"key width 3 .*!= dec_hidden 6"):
        small_config(attention="dot", bidirectional=False)
    assert small_config(attention="dot").key_dim == 6
    small_config(attention="general", dec_hidden=8)  # other scores take any key width


def test_config_last_bridge_needs_matching_widths() -> None:
    with pytest.raises(ValueError, match=r"bridge 'last'.*key width 6 != dec_hidden 5"):
        small_config(bridge="last", dec_hidden=5)
    small_config(bridge="zero", dec_hidden=5)
    small_config(bridge="bridge", dec_hidden=5)


@pytest.mark.parametrize(
    "field", ["emb_dim", "enc_hidden", "enc_layers", "dec_hidden", "dec_layers"]
)
@pytest.mark.parametrize("value", [0, -1, 2.0, True, "4"])
def test_config_sizes_must_be_positive_ints(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=f"{field}: expected an int >= 1, got {value!r}"):
        small_config(**{field: value})


@pytest.mark.parametrize("value", [-0.1, 1.0, 1.5, "0.1", None])
def test_config_bad_dropout(value: object) -> None:
    with pytest.raises(ValueError, match=r"dropout: expected a number in \[0, 1\)"):
        small_config(dropout=value)


@pytest.mark.parametrize("field", ["bidirectional", "input_feed"])
def test_config_flags_must_be_bools(field: str) -> None:
    with pytest.raises(TypeError, match=f"{field}: expected a bool, got 1"):
        small_config(**{field: 1})


def test_config_json_round_trip_and_unknown_fields() -> None:
    cfg = small_config(cell="lstm", attention="concat", input_feed=False, dropout=0.25)
    assert Seq2SeqConfig.from_json(json.loads(json.dumps(cfg.to_json()))) == cfg
    with pytest.raises(ValueError, match=r"unknown fields \['heads', 'layers'\]"):
        Seq2SeqConfig.from_json({**cfg.to_json(), "layers": 2, "heads": 4})
    with pytest.raises(ValueError, match="expected a JSON object, got list"):
        Seq2SeqConfig.from_json([1, 2])


def test_config_from_json_missing_fields_raise() -> None:
    data = small_config().to_json()
    del data["dropout"]
    with pytest.raises(ValueError, match="dropout"):
        Seq2SeqConfig.from_json(data)


@pytest.mark.parametrize(
    ("fields", "error", "message"),
    [
        ({"window": 0}, ValueError, "window: expected an int >= 1, got 0"),
        ({"max_src_len": -3}, ValueError, "max_src_len: expected an int >= 1, got -3"),
        ({"tie_embeddings": 1}, TypeError, "tie_embeddings: expected a bool, got 1"),
        (
            {"local": "monotonic", "attention": "location"},
            ValueError,
            "local 'monotonic': expected attention one of dot, general, concat, scaled_dot "
            "inside the window, got 'location' (use local 'none' for it)",
        ),
        (
            {"local": "predictive", "attention": "bahdanau"},
            ValueError,
            "local 'predictive': expected attention one of dot, general, concat, scaled_dot "
            "inside the window, got 'bahdanau' (use local 'none' for it)",
        ),
    ],
)
def test_config_window_lengths_and_local_scores_are_checked(
    fields: dict[str, object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as raised:
        small_config(**fields)
    assert str(raised.value) == message


def test_config_from_json_reads_a_config_written_before_tie_embeddings() -> None:
    # A config.json of 0.1.0 has no tie_embeddings: it loads with the field's default; any
    # other missing field is named, with every field expected.
    data = small_config(local="monotonic", window=3).to_json()
    del data["tie_embeddings"]
    assert Seq2SeqConfig.from_json(data) == small_config(local="monotonic", window=3)
    del data["window"], data["cell"]
    with pytest.raises(ValueError) as raised:
        Seq2SeqConfig.from_json(data)
    names = sorted(f.name for f in dataclasses.fields(Seq2SeqConfig))
    assert str(raised.value) == f"missing fields ['cell', 'window']; expected {names}"


def test_configs_are_frozen() -> None:
    for config in (Seq2SeqConfig(), TrainConfig(), VocabConfig(), RunConfig()):
        name = dataclasses.fields(config)[0].name
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(config, name, getattr(config, name))


# --- TrainConfig ---------------------------------------------------------------------------------

POSITIVE = (
    "epochs",
    "batch_size",
    "eval_every",
    "log_every",
    "eval_batch_size",
    "max_bad_steps",
    "accumulate",
    "test_beam",
)
NOT_NEGATIVE = (
    "warmup_steps",
    "patience",
    "max_decode_len",
    "checkpoint_every",
    "keep_checkpoints",
    "seed",
    "batch_tokens",
)


@pytest.mark.parametrize("field", POSITIVE)
@pytest.mark.parametrize("value", [0, -1, 1.0, True, "2"])
def test_train_counts_must_be_positive_ints(field: str, value: object) -> None:
    with pytest.raises(ValueError) as raised:
        TrainConfig(**{field: value})  # type: ignore[arg-type]
    assert str(raised.value) == f"{field}: expected an int >= 1, got {value!r}"


@pytest.mark.parametrize("field", NOT_NEGATIVE)
@pytest.mark.parametrize("value", [-1, 0.0, False, None])
def test_train_counts_must_be_ints_of_at_least_zero(field: str, value: object) -> None:
    with pytest.raises(ValueError) as raised:
        TrainConfig(**{field: value})  # type: ignore[arg-type]
    assert str(raised.value) == f"{field}: expected an int >= 0, got {value!r}"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"schedule": "step"},
            "schedule: expected one of constant, linear, cosine, halving, got 'step'",
        ),
        ({"lr": 0}, "lr: expected a finite number > 0, got 0"),
        ({"lr": math.inf}, "lr: expected a finite number > 0, got inf"),
        ({"lr": math.nan}, "lr: expected a finite number > 0, got nan"),
        ({"lr": "3e-3"}, "lr: expected a finite number > 0, got '3e-3'"),
        ({"clip_norm": -1}, "clip_norm: expected a finite number >= 0, got -1"),
        ({"label_smoothing": 1.0}, "label_smoothing: expected a number in [0, 1), got 1.0"),
        ({"label_smoothing": True}, "label_smoothing: expected a number in [0, 1), got True"),
        ({"patience": -1}, "patience: expected an int >= 0, got -1"),
        (
            {"device": "tpu"},
            "device: expected auto, cpu, cuda, cuda:N (N a device index, from 0) or mps, got 'tpu'",
        ),
        (
            {"device": "cuda:"},
            "device: expected auto, cpu, cuda, cuda:N (N a device index, "
            "from 0) or mps, got 'cuda:'",
        ),
        ({"precision": "fp8"}, "precision: expected one of fp32, bf16, fp16, got 'fp8'"),
        ({"select": "wer"}, "select: expected one of auto, exact, bleu, chrf, loss, got 'wer'"),
        ({"seed": 2**64}, "seed: expected an int below 2**64, got 18446744073709551616"),
        ({"subword_sampling": 1}, "subword_sampling: expected a number in [0, 1), got 1"),
        ({"subword_sampling": "0.1"}, "subword_sampling: expected a number in [0, 1), got '0.1'"),
        ({"progress": 1}, "progress: expected a bool, got 1"),
        ({"tensorboard": "no"}, "tensorboard: expected a bool, got 'no'"),
    ],
)
def test_train_config_names_the_field_what_it_expected_and_what_it_got(
    fields: dict[str, object], message: str
) -> None:
    with pytest.raises((ValueError, TypeError)) as raised:
        TrainConfig(**fields)  # type: ignore[arg-type]
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"test_alpha": 7}, "test_alpha: expected at most 5, got 7"),
        ({"test_alpha": 5.000001}, "test_alpha: expected at most 5, got 5.000001"),
        ({"test_alpha": -1}, "test_alpha: expected a finite number >= 0, got -1"),
        ({"test_alpha": math.nan}, "test_alpha: expected a finite number >= 0, got nan"),
        ({"test_alpha": math.inf}, "test_alpha: expected a finite number >= 0, got inf"),
        ({"test_alpha": True}, "test_alpha: expected a finite number >= 0, got True"),
        ({"test_alpha": "0.6"}, "test_alpha: expected a finite number >= 0, got '0.6'"),
        ({"max_decode_len": 10_001}, "max_decode_len: expected at most 10000, got 10001"),
        ({"test_beam": 1001}, "test_beam: expected at most 1000, got 1001"),
    ],
)
def test_test_decoding_is_checked_as_search_options_under_the_train_names(
    fields: dict[str, object], message: str
) -> None:
    # The bounds are SearchOptions' (beam search's length penalty, the longest output), the
    # message names the TrainConfig field, and the error is a ValueError whatever the cause.
    with pytest.raises(ValueError) as raised:
        TrainConfig(**fields)  # type: ignore[arg-type]
    assert str(raised.value) == message


def test_test_decoding_at_its_limits_is_accepted_and_makes_search_options() -> None:
    at_limits = TrainConfig(test_beam=MAX_BEAM, test_alpha=MAX_ALPHA, max_decode_len=MAX_OUTPUT_LEN)
    assert (MAX_BEAM, MAX_ALPHA, MAX_OUTPUT_LEN) == (1000, 5.0, 10_000)
    assert at_limits.test_search == SearchOptions(beam=1000, alpha=5.0, max_len=10_000)
    assert at_limits.dev_search == SearchOptions(max_len=10_000)  # dev: greedy
    # 0: each source's own limit (None); an int alpha becomes the float SearchOptions holds.
    default = TrainConfig(test_beam=4, test_alpha=1)
    assert default.test_search == SearchOptions(beam=4, alpha=1.0, max_len=None)
    assert type(default.test_search.alpha) is float
    assert default.dev_search == SearchOptions()


def test_train_config_json_round_trip() -> None:
    cfg = TrainConfig(
        epochs=7,
        batch_tokens=900,
        accumulate=3,
        lr=1e-3,
        schedule="cosine",
        select="loss",
        seed=2**64 - 1,
        max_decode_len=40,
        test_beam=5,
        test_alpha=0.6,
        subword_sampling=0.1,
        device="cpu",
        precision="bf16",
        progress=False,
        tensorboard=True,
    )
    data = json.loads(json.dumps(cfg.to_json()))
    assert config_from_dict(TrainConfig, data, "train_config") == cfg
    assert data["seed"] == 2**64 - 1 and data["test_alpha"] == 0.6


# --- VocabConfig ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "error", "message"),
    [
        (
            {"subword": "wordpiece"},
            ValueError,
            "subword: expected one of none, unigram, bpe, got 'wordpiece'",
        ),
        ({"vocab_size": -1}, ValueError, "vocab_size: expected an int >= 0, got -1"),
        ({"vocab_size": 8000.0}, ValueError, "vocab_size: expected an int >= 0, got 8000.0"),
        ({"min_count": 0}, ValueError, "min_count: expected an int >= 1, got 0"),
        ({"joint_vocab": 1}, TypeError, "joint_vocab: expected a bool, got 1"),
        (
            {"subword": "bpe", "min_count": 2},
            ValueError,
            "min_count: sentencepiece picks its pieces by vocab_size, got min_count 2 with "
            "subword 'bpe'",
        ),
    ],
)
def test_vocab_config_names_the_field(
    fields: dict[str, object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as raised:
        VocabConfig(**fields)  # type: ignore[arg-type]
    assert str(raised.value) == message


def test_vocab_size_is_8000_pieces_for_a_subword_vocabulary_left_at_0() -> None:
    assert VocabConfig().size == 0  # every symbol of the data
    assert VocabConfig(min_count=3).size == 0
    assert VocabConfig("unigram").size == VocabConfig("bpe").size == 8000
    assert VocabConfig("bpe", 500).size == 500 and VocabConfig(vocab_size=40).size == 40


# --- RunConfig, config_from_dict -----------------------------------------------------------------


def test_run_config_defaults_are_the_dates_run_and_share_no_dict() -> None:
    a, b = RunConfig(), RunConfig()
    assert (a.task, a.data, a.model, a.train, a.vocab) == (
        "dates",
        {},
        Seq2SeqConfig(),
        TrainConfig(),
        VocabConfig(),
    )
    a.data["seed"] = 3
    assert b.data == {} and RunConfig().data == {}


def test_config_from_dict_names_the_unknown_keys_and_the_valid_ones() -> None:
    assert config_from_dict(VocabConfig, {"subword": "bpe"}, "[vocab]") == VocabConfig("bpe")
    assert config_from_dict(Seq2SeqConfig, {}, "[model]") == Seq2SeqConfig()
    with pytest.raises(ValueError) as raised:
        config_from_dict(VocabConfig, {"subword": "bpe", "size": 8, "merges": 2}, "c.toml [vocab]")
    assert str(raised.value) == (
        "c.toml [vocab]: unknown options ['merges', 'size']; valid options: ['joint_vocab', "
        "'min_count', 'src_lang', 'subword', 'tgt_lang', 'vocab_size']"
    )
    # Known keys with bad values: the dataclass' own check.
    with pytest.raises(ValueError, match="^epochs: expected an int >= 1, got 0$"):
        config_from_dict(TrainConfig, {"epochs": 0}, "[train]")


# --- a run's TOML --------------------------------------------------------------------------------


def test_run_toml_round_trips_every_field(tmp_path: Path) -> None:
    config = RunConfig(
        task="tsv",
        data={"train": "a b/tr.tsv", "splits": ("tr", "dev"), "seed": 4, "lowercase": True},
        model=Seq2SeqConfig(
            cell="lstm",
            emb_dim=12,
            enc_hidden=6,
            dec_hidden=10,
            attention="general",
            local="predictive",
            window=4,
            bridge="zero",
            dropout=0.125,
            input_feed=False,
        ),
        train=TrainConfig(lr=0.1, test_alpha=0.6, test_beam=4, select="chrf", progress=False),
        vocab=VocabConfig("unigram", 300, joint_vocab=True),
    )
    path = tmp_path / "config.toml"
    path.write_text(run_toml(config), encoding="utf-8")
    tables = read_toml_tables(path)
    assert tables["task"] == "tsv"
    # TOML has arrays, not tuples: the data options come back as lists.
    assert tables["data"] == {
        "train": "a b/tr.tsv",
        "splits": ["tr", "dev"],
        "seed": 4,
        "lowercase": True,
    }
    assert tables["model"] == config.model.to_json()
    assert tables["train"] == config.train.to_json()
    again = RunConfig(
        tables["task"],
        tables["data"],
        config_from_dict(Seq2SeqConfig, tables["model"], "[model]"),
        config_from_dict(TrainConfig, tables["train"], "[train]"),
        config_from_dict(VocabConfig, tables["vocab"], "[vocab]"),
    )
    assert (again.model, again.train, again.vocab) == (config.model, config.train, config.vocab)
    assert type(again.train.lr) is float and type(again.train.test_alpha) is float


def test_read_toml_tables_takes_any_subset_of_the_tables(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[data]\nseed = 3\nanything = ["a", 1]\n[vocab]\nsubword = "bpe"\n')
    # [data] holds the task's options, which the task checks: any key goes.
    assert read_toml_tables(path) == {
        "data": {"seed": 3, "anything": ["a", 1]},
        "vocab": {"subword": "bpe"},
    }
    path.write_text("")
    assert read_toml_tables(path) == {}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"task = 5\n", "{p}: task = 5 is not a string"),
        (
            b"model = [1, 2]\n",
            "{p}: model = [1, 2] is not a table; expected [model] with options under it",
        ),
        (
            b"[optim]\nlr = 1\n",
            "{p}: unknown key 'optim'; expected task = \"NAME\" and the tables "
            "[data], [model], [train], [vocab]",
        ),
        (
            b"[train]\nlr = 1\nlearning_rate = 2\n",
            "{p}: unknown key 'learning_rate' in [train]; "
            "valid keys: " + ", ".join(sorted(TrainConfig().to_json())),
        ),
        (
            b"[model]\nheads = 4\n",
            "{p}: unknown key 'heads' in [model]; valid keys: "
            + ", ".join(sorted(Seq2SeqConfig().to_json())),
        ),
        (
            b"[vocab]\nsize = 4\n",
            "{p}: unknown key 'size' in [vocab]; valid keys: joint_vocab, "
            "min_count, src_lang, subword, tgt_lang, vocab_size",
        ),
        (
            b'task = "dates"\n[train\n',
            "{p}: not valid TOML: Expected ']' at the end of a table "
            "declaration (at line 2, column 7)",
        ),
        (
            b'task = "\xff"\n',
            "{p}: not valid TOML: 'utf-8' codec can't decode byte 0xff in "
            "position 8: invalid start byte",
        ),
        (
            b"#" * MAX_TEXT_BYTES + b"\n",
            "{p}: 1048577 bytes, above the limit of 1048576 bytes for such a file",
        ),
    ],
    ids=[
        "task-5",
        "model-array",
        "unknown-table",
        "train-key",
        "model-key",
        "vocab-key",
        "bad-toml",
        "not-utf8",
        "too-large",
    ],
)
def test_read_toml_tables_names_the_file_and_the_key(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "c.toml"
    path.write_bytes(content)
    with pytest.raises(ValueError) as raised:
        read_toml_tables(path)
    assert str(raised.value) == message.format(p=path)


def test_read_toml_tables_of_no_file_or_a_folder(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as missing:
        read_toml_tables(tmp_path / "nowhere.toml")
    assert str(missing.value) == f"{tmp_path}/nowhere.toml: no such file"
    with pytest.raises(ValueError) as folder:
        read_toml_tables(tmp_path)
    assert str(folder.value) == f"{tmp_path}: is a directory, expected a file"


@pytest.mark.parametrize(
    ("field", "most"),
    [
        ("emb_dim", 16_384),
        ("enc_hidden", 16_384),
        ("dec_hidden", 16_384),
        ("enc_layers", 64),
        ("dec_layers", 64),
        ("window", 1_048_576),
        ("max_src_len", 1_048_576),
    ],
)
def test_config_sizes_are_bounded(field: str, most: int) -> None:
    # Exactly at the bound is a config (nothing is allocated to make one); one above is not.
    assert getattr(small_config(**{field: most}), field) == most
    with pytest.raises(ValueError, match=f"^{field}: expected at most {most}, got {most + 1}$"):
        small_config(**{field: most + 1})
    assert (MAX_WIDTH, MAX_LAYERS, MAX_SRC_LEN) == (16_384, 64, 1_048_576)


def test_the_package_shows_the_four_configs_of_their_modules() -> None:
    # ``from luong.config import TrainConfig`` (the package's face) is the class of its module.
    assert (luong.config.Seq2SeqConfig, luong.config.TrainConfig) == (Seq2SeqConfig, TrainConfig)
    assert (luong.config.VocabConfig, luong.config.RunConfig) == (VocabConfig, RunConfig)
    assert sorted(luong.config.__all__) == [
        "RunConfig",
        "Seq2SeqConfig",
        "TrainConfig",
        "VocabConfig",
    ]


@pytest.mark.parametrize("value", [1, 7, 10**12])
def test_a_count_is_returned_as_given(value: int) -> None:
    assert check_positive_int("beam", value) == value


@pytest.mark.parametrize(
    ("value", "error", "shown"),
    [
        (0, LuongError, "0"),
        (-3, LuongError, "-3"),
        (True, LuongTypeError, "True"),
        (2.0, LuongTypeError, "2.0"),
        ("5", LuongTypeError, "'5'"),
        (None, LuongTypeError, "None"),
    ],
)
def test_a_count_that_is_not_one_is_refused_naming_it(
    value: object, error: type[Exception], shown: str
) -> None:
    with pytest.raises(error) as raised:
        check_positive_int("beam", value)
    assert str(raised.value) == f"beam: expected an int >= 1, got {shown}"
    # A wrong type is a TypeError and, as every LuongError, a ValueError too.
    assert isinstance(raised.value, ValueError)
    assert isinstance(raised.value, TypeError) == (error is LuongTypeError)


def test_a_count_is_named_by_its_first_60_characters() -> None:
    """A long value passed as a count (a list of lines for a batch size) is named by the start
    of its repr, so the one line on stderr stays one line."""
    with pytest.raises(LuongTypeError) as raised:
        check_positive_int("batch_size", list(range(10_000)))
    assert (
        str(raised.value)
        == "batch_size: expected an int >= 1, got " + repr(list(range(10_000)))[:60]
    )
    with pytest.raises(LuongError) as raised:
        check_positive_int("beam", -(10**100))
    assert str(raised.value).endswith("got " + repr(-(10**100))[:60])


def test_the_public_functions_refuse_a_bool_count_as_a_type_error() -> None:
    """The same check behind the configs, the batcher and a search option: a bool is no
    count, and it is refused as a TypeError naming it."""
    refusals = [
        lambda: Batcher(lambda key, items: items, max_batch=True),
        lambda: Recurrence(lstm=True, layers=True),
        lambda: SearchOptions(beam=True),
    ]
    for refuse in refusals:
        with pytest.raises(LuongTypeError, match=r"expected an int >= 1, got True$"):
            refuse()


def test_a_sequence_of_strings_is_returned_as_given() -> None:
    texts = ["a", "b c"]
    assert check_strings("texts", texts) is texts
    assert check_strings("texts", ()) == ()


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ("abc", "texts: expected a sequence of strings, got a single str"),
        (b"abc", "texts: expected a sequence of strings, got bytes"),
        ({"a"}, "texts: expected a sequence of strings, got set"),
        (None, "texts: expected a sequence of strings, got NoneType"),
        (["a", b"b"], r"texts\[1\]: expected a str, got bytes"),
        (("a", "b", None), r"texts\[2\]: expected a str, got NoneType"),
    ],
)
def test_what_is_not_a_sequence_of_strings_is_refused_naming_it(
    values: object, message: str
) -> None:
    with pytest.raises(LuongTypeError, match=f"^{message}$"):
        check_strings("texts", values)


def test_the_faces_refuse_a_source_that_is_not_a_str_in_the_same_words() -> None:
    """Admission (the translator's every face), the search over texts and the metrics name
    the first item that is not a str by its place."""
    model = small_model()
    refusals = [
        lambda: admit(model, ["a b", 3]),
        lambda: decode(model, ["a b", 3]),
    ]
    for refuse in refusals:
        with pytest.raises(LuongTypeError, match=r"^texts\[1\]: expected a str, got int$"):
            refuse()
    with pytest.raises(LuongTypeError, match=r"^refs\[0\]: expected a str, got bytes$"):
        exact_match(["a"], [b"a"])
