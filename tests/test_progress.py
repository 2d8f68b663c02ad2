"""The progress of work a person waits for (``luong.common.progress.WorkProgress``): lines every
interval where stderr is not a terminal, in ``luong corpus``, ``luong po`` and ``luong eval``,
and training's first lines before its first step (issue 53 item 4)."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import polib
import pytest
from helpers import SRC_SPACE, TINY_DATES_FLAGS, TINY_MODEL_FLAGS, luong, small_model, with_pair

from luong.common import progress as progress_module
from luong.common.progress import WorkProgress, stage


class Clock:
    """A clock that gives the times it was made with, one a call."""

    def __init__(self, *times: float) -> None:
        self.times = list(times)

    def __call__(self) -> float:
        return self.times.pop(0)


def messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records]


def test_lines_come_every_interval_and_at_the_last_item(caplog: pytest.LogCaptureFixture) -> None:
    # construction reads the clock once; each advance once, and a line once more
    clock = Clock(0.0, 10.0, 31.0, 31.0, 40.0, 62.0, 62.0)
    work = WorkProgress(1360, "translated", "messages", every=30.0, clock=clock, terminal=False)
    with caplog.at_level(logging.INFO, logger="luong"):
        for count in (100, 210, 50, 1000):
            work.advance(count)
    work.close()
    assert messages(caplog) == [
        # 310 in 31 s: 10 a second, 1,050 left
        "translated 310/1,360 messages (22%), 10.0 messages/s, ETA 0:01:45",
        "translated 1,360/1,360 messages (100%), 21.9 messages/s, ETA 0:00:00",
    ]
    assert clock.times == []


def test_work_within_the_interval_logs_nothing_and_a_terminal_gets_the_bar_alone(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="luong"):
        quick = WorkProgress(
            3, "read", "catalogs", every=30.0, clock=Clock(0, 1, 2, 3), terminal=False
        )
        for _ in range(3):
            quick.advance()
        for shown, terminal in ((True, True), (False, False)):
            with WorkProgress(2, "read", "catalogs", shown, every=0.0, terminal=terminal) as bar:
                bar.advance(2)
        with WorkProgress(0, "read", "catalogs", every=0.0, terminal=False) as empty:
            empty.advance(0)
    assert messages(caplog) == []


def test_each_counts_an_item_done_when_the_next_is_asked_for(
    caplog: pytest.LogCaptureFixture,
) -> None:
    work = WorkProgress(3, "read", "catalogs", every=0.0, clock=lambda: 1.0, terminal=False)
    seen = []
    with caplog.at_level(logging.INFO, logger="luong"):
        for item in work.each("abc"):
            seen.append((item, work.done))
    assert seen == [("a", 0), ("b", 1), ("c", 2)]
    assert work.done == 3
    assert [m.split(" (")[0] for m in messages(caplog)] == [
        "read 1/3 catalogs",
        "read 2/3 catalogs",
        "read 3/3 catalogs",
    ]


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(TypeError, match=r"^total: expected an int, got str$"):
        WorkProgress("3", "read", "catalogs")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^total: expected >= 0, got -1$"):
        WorkProgress(-1, "read", "catalogs")
    with pytest.raises(ValueError, match=r"^noun: expected a word, got ' '$"):
        WorkProgress(1, "read", " ")
    with pytest.raises(TypeError, match=r"^verb: expected a string, got int$"):
        WorkProgress(1, 3, "catalogs")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^every: expected seconds >= 0, got -1.0$"):
        WorkProgress(1, "read", "catalogs", every=-1.0)
    work = WorkProgress(1, "read", "catalogs", terminal=False)
    with pytest.raises(ValueError, match=r"^count: expected an int >= 0, got -1$"):
        work.advance(-1)


def progress_lines(stderr: bytes, verb: str) -> list[str]:
    return [line for line in stderr.decode().splitlines() if line.startswith(f"luong: {verb} ")]


def test_luong_corpus_logs_the_catalogs_it_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(progress_module, "PROGRESS_EVERY", 0.0)  # a line every catalog
    for name in ("app", "tool", "viewer"):
        catalog = polib.POFile()
        catalog.metadata = {"Language": "de", "Content-Type": "text/plain; charset=UTF-8"}
        for source, target in (("Open", "Öffnen"), (f"Quit {name}", f"{name} beenden")):
            catalog.append(polib.POEntry(msgid=source, msgstr=target))
        folder = tmp_path / "catalogs" / "de" / "LC_MESSAGES"
        folder.mkdir(parents=True, exist_ok=True)
        catalog.save(str(folder / f"{name}.po"))
    result = luong(
        "corpus", str(tmp_path / "catalogs"), "--tgt-lang", "de", "--out", str(tmp_path / "c")
    )
    assert result.returncode == 0, result.stderr.decode()
    lines = progress_lines(result.stderr, "read")
    assert [line.split(" (")[0] for line in lines] == [
        f"luong: read {n}/3 catalogs" for n in (1, 2, 3)
    ]
    assert lines[-1].startswith("luong: read 3/3 catalogs (100%), ")
    assert lines[-1].endswith(", ETA 0:00:00")


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny untrained model folder recording en-de (sources of a-j and spaces)."""
    path = tmp_path_factory.mktemp("progress") / "tiny"
    with_pair(small_model(seed=4, src=SRC_SPACE)).save_pretrained(path)
    return path


def test_luong_po_logs_the_messages_it_translates(
    model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(progress_module, "PROGRESS_EVERY", 0.0)
    template = polib.POFile()
    template.metadata = {"Content-Type": "text/plain; charset=UTF-8"}
    for source in ("abc", "bad cab", "ace", "dig a bed\nhead"):  # the last: two lines
        template.append(polib.POEntry(msgid=source, msgstr=""))
    template.save(str(tmp_path / "app.pot"))
    out = tmp_path / "app.de.po"
    args = [str(model), str(tmp_path / "app.pot"), "--out", str(out), "--tgt-lang", "de"]
    result = luong("po", *args, "--min-len", "2", "--batch-size", "2")
    assert result.returncode == 0, result.stderr.decode()
    lines = progress_lines(result.stderr, "translated")
    # the messages' lines, a search call (two) at a time
    assert [line.split(" (")[0] for line in lines] == [
        "luong: translated 2/5 messages",
        "luong: translated 4/5 messages",
        "luong: translated 5/5 messages",
    ]
    assert len(polib.pofile(str(out))) == 4
    # in the interval (the default's 30 s): nothing but the summary
    monkeypatch.setattr(progress_module, "PROGRESS_EVERY", 30.0)
    args[args.index(str(out))] = str(tmp_path / "again.de.po")
    quiet = luong("po", *args, "--min-len", "2")
    assert quiet.returncode == 0, quiet.stderr.decode()
    assert progress_lines(quiet.stderr, "translated") == []


def test_luong_eval_logs_the_sources_it_decodes(
    model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(progress_module, "PROGRESS_EVERY", 0.0)
    data = tmp_path / "pairs.tsv"
    # "abc" twice with two references: scored as one source
    data.write_text("abc\t123\nabc\t124\nbad\t42\nfig\t7\n", encoding="utf-8")
    result = luong("eval", str(model), "--data", str(data), "--batch-size", "1", "--json")
    assert result.returncode == 0, result.stderr.decode()
    assert [line.split(" (")[0] for line in progress_lines(result.stderr, "decoded")] == [
        f"luong: decoded {n}/3 sources" for n in (1, 2, 3)
    ]


def test_a_slow_stage_says_what_it_does_and_a_quick_one_says_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="luong"):
        with stage("learning the vocabularies", after=60.0):
            pass  # done long before its line was due: none
        with stage("encoding 9 pairs", after=0.01):
            deadline = time.monotonic() + 10.0  # the timer's thread logs; wait for it
            while not caplog.records and time.monotonic() < deadline:
                time.sleep(0.01)
        with stage("batching", after=0.0, shown=False):
            pass
    assert messages(caplog) == ["encoding 9 pairs"]
    with (
        pytest.raises(TypeError, match=r"^message: expected a string, got int$"),
        stage(3),  # type: ignore[arg-type]
    ):
        pass


def test_training_says_what_it_does_before_its_first_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(progress_module, "STAGE_AFTER", 0.0)  # each stage's line at once
    flags = [f for f in TINY_DATES_FLAGS if f != "--no-progress"]
    result = luong("train", "dates", "--out", str(tmp_path / "run"), *flags)
    assert result.returncode == 0, result.stderr.decode()
    lines = result.stderr.decode().splitlines()
    first = [
        "luong: reading the dates task's data",
        "luong: learning the vocabularies from 400 training pairs",
        "luong: encoding 400 training pairs",
        "luong: batching the first epoch",
    ]
    assert lines[: len(first)] == first  # before any step, warning or evaluation
    # by default a stage says nothing within its first seconds: a tiny run's first line is
    # its first step's
    monkeypatch.undo()
    quick = luong("train", "dates", "--out", str(tmp_path / "quick"), *flags)
    assert quick.returncode == 0 and quick.stderr.decode().startswith("luong: step ")


def test_a_run_of_parallel_files_names_each_file_it_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(progress_module, "STAGE_AFTER", 0.0)
    files = {}
    for name, lines in (("t.en", "abc\nbca\n" * 20), ("t.de", "cab\nacb\n" * 20)):
        files[name] = tmp_path / name
        files[name].write_text(lines, encoding="utf-8")
    args = ["--train-src", str(files["t.en"]), "--train-tgt", str(files["t.de"])]
    args += ["--dev-src", str(files["t.en"]), "--dev-tgt", str(files["t.de"])]
    flags = [f for f in TINY_MODEL_FLAGS if f != "--no-progress"]
    result = luong("train", *args, "--out", str(tmp_path / "run"), *flags)
    assert result.returncode == 0, result.stderr.decode()
    t_en, t_de = files["t.en"], files["t.de"]
    first = result.stderr.decode().splitlines()[0]
    assert first == f"luong: reading {t_en}, {t_de}, {t_en}, {t_de}"
