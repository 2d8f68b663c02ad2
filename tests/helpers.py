"""What the tests share: tiny vocabularies, a small model, a random batch, and the helpers
for the tests that run the ``luong`` command (in this process, or in a subprocess)."""

from __future__ import annotations

import atexit
import io
import json
import logging
import os
import random
import select
import subprocess
import sys
import tempfile
from collections.abc import Sequence

import torch
from torch import Tensor

from luong import Seq2Seq, Seq2SeqConfig, Vocab
from luong.cli import main

# -- tiny vocabularies, a small model, a random batch ----------------------------------------

SRC = Vocab(list("abcdefghij"))
SRC_SPACE = Vocab(list("abcdefghij "))  # with a space, for sources typed as text
TGT = Vocab(list("0123456789-"))
# The smallest pair, for tests that need some vocabulary and nothing more.
TINY_SRC = Vocab(list("abc"))
TINY_TGT = Vocab(list("xy"))

# A GRU model small enough to check by hand: a bidirectional encoder of 3 per direction, so
# the keys are K = 6 wide, as wide as the decoder (the dot score fits).
SMALL = {
    "cell": "gru",
    "emb_dim": 4,
    "enc_hidden": 3,
    "enc_layers": 1,
    "bidirectional": True,
    "dec_hidden": 6,
    "dec_layers": 1,
    "attention": "general",
}


def small_config(**fields: object) -> Seq2SeqConfig:
    """``SMALL`` with ``fields`` changed."""
    return Seq2SeqConfig(**{**SMALL, **fields})  # type: ignore[arg-type]


def small_model(seed: int = 0, src: Vocab = SRC, tgt: Vocab = TGT, **fields: object) -> Seq2Seq:
    """A ``small_config(**fields)`` model in eval mode, its weights drawn from ``seed``
    (float32; ``.double()`` it for the float64 oracles)."""
    return Seq2Seq(small_config(**fields), src, tgt, seed=seed).eval()


def with_pair(model: Seq2Seq, src: str = "en", tgt: str = "de") -> Seq2Seq:
    """``model`` recording the language pair ``src``-``tgt`` (what ``luong po`` warns about
    when a model records none), returned."""
    model.src_lang, model.tgt_lang = src, tgt
    return model


def source_batch(
    lengths: Sequence[int],
    seed: int = 0,
    *,
    vocab: Vocab = SRC,
    eos: bool = False,
    width: int | None = None,
    junk: bool = False,
) -> tuple[Tensor, Tensor]:
    """Random sources: src ``[B, width]`` (width: the longest length by default) of real ids
    and lengths ``[B]``. After each row's length comes padding, or (``junk``) more real ids;
    ``eos`` makes each row's last real id EOS."""
    return _sources(torch.Generator().manual_seed(seed), lengths, vocab, eos, width, junk)


def small_batch(
    lengths: Sequence[int],
    t: int,
    seed: int = 0,
    *,
    src: Vocab = SRC,
    tgt: Vocab = TGT,
    eos: bool = False,
) -> tuple[Tensor, Tensor, Tensor]:
    """``source_batch(lengths, seed)`` and, drawn after it from the same generator, tgt_in
    ``[B, t]`` of real ids with BOS first."""
    g = torch.Generator().manual_seed(seed)
    ids, src_lengths = _sources(g, lengths, src, eos, None, False)
    tgt_in = torch.randint(4, len(tgt), (len(lengths), t), generator=g)
    tgt_in[:, 0] = Vocab.bos_id
    return ids, src_lengths, tgt_in


def toy_pairs(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """``n`` pairs of a toy task over ``SRC`` and ``TGT``: a word of 1 to 8 letters -> the
    letters' places in the alphabet as digits, reversed (``"abd"`` -> ``"310"``)."""
    rng = random.Random(seed)
    letters = "abcdefghij"
    words = ["".join(rng.choices(letters, k=rng.randint(1, 8))) for _ in range(n)]
    return [(w, "".join(str(letters.index(c)) for c in reversed(w))) for w in words]


def _sources(
    g: torch.Generator,
    lengths: Sequence[int],
    vocab: Vocab,
    eos: bool,
    width: int | None,
    junk: bool,
) -> tuple[Tensor, Tensor]:
    ids = torch.randint(4, len(vocab), (len(lengths), width or max(lengths)), generator=g)
    for b, n in enumerate(lengths):
        if eos:
            ids[b, n - 1] = Vocab.eos_id
        if not junk:
            ids[b, n:] = Vocab.pad_id
    return ids, torch.tensor(lengths)


# -- the command line ----------------------------------------------------------------------

# A model small enough to train in a second or two (in a few steps: no warm-up, whose 100
# steps would outlast the run and make it warn).
TINY_MODEL_FLAGS = [
    "--epochs",
    "1",
    "--warmup-steps",
    "0",
    "--emb-dim",
    "8",
    "--enc-hidden",
    "8",
    "--enc-layers",
    "1",
    "--dec-hidden",
    "16",
    "--no-progress",
]
TINY_DATES_FLAGS = ["--n-train", "400", "--n-dev", "40", "--n-test", "60", *TINY_MODEL_FLAGS]


def luong(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run ``luong ARGS`` in this process, as ``python -m luong ARGS`` runs it: the exit
    status (``main``'s, or its ``SystemExit``'s: argparse's 2), and stdout and stderr as the
    bytes a subprocess would write to pipes. No torch import to wait for (two to three
    seconds a command); what stays with the process is put back: the "luong" logger that
    ``luong train`` configures, the random number generators' states and torch's thread
    count (``--threads``)."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    err = io.TextIOWrapper(
        io.BytesIO(), encoding="utf-8", errors="backslashreplace", write_through=True
    )
    given = io.TextIOWrapper(io.BytesIO(stdin or b""), encoding="utf-8")
    logger = logging.getLogger("luong")
    kept = (logger.handlers[:], logger.level, logger.propagate)
    states = (random.getstate(), torch.get_rng_state())
    threads = torch.get_num_threads()  # --threads N sets the process's threads
    streams = (sys.stdin, sys.stdout, sys.stderr)
    sys.stdin, sys.stdout, sys.stderr = given, out, err
    try:
        status = main(list(args))
    except SystemExit as exit_:
        status = exit_.code if isinstance(exit_.code, int) else 0 if exit_.code is None else 1
    finally:
        sys.stdin, sys.stdout, sys.stderr = streams
        logger.handlers[:], logger.level, logger.propagate = kept
        random.setstate(states[0])
        torch.set_rng_state(states[1])
        torch.set_num_threads(threads)
    out.flush()
    err.flush()
    return subprocess.CompletedProcess(
        ["luong", *args], status, out.buffer.getvalue(), err.buffer.getvalue()
    )


def luong_process(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run ``python -m luong ARGS`` in a subprocess (one thread; PYTHONPATH, when set, is
    kept): the command as a person runs it, interpreter and exit included."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "luong", *args],
        input=stdin,
        capture_output=True,
        env=env,
        timeout=300,
    )


def assert_one_line_error(result: subprocess.CompletedProcess[bytes], *needles: str) -> None:
    """A non-zero exit, no traceback, one line on stderr (argparse's usage lines aside)
    holding every needle."""
    err = result.stderr.decode()
    assert result.returncode != 0
    assert "Traceback" not in err
    lines = [line for line in err.strip().splitlines() if not line.startswith(("usage:", " "))]
    assert len(lines) == 1, err
    for needle in needles:
        assert needle in err, err


def output_lines(result: subprocess.CompletedProcess[bytes]) -> list[str]:
    """stdout's lines, after checking the run succeeded and every line ended with a newline."""
    assert result.returncode == 0, result.stderr.decode()
    text = result.stdout.decode()
    assert text.endswith("\n") or text == ""
    return text.split("\n")[:-1]


# Runs code in a child whose address space may grow by at most ``budget`` bytes past what it
# holds once luong (and torch) are imported: a case that needs more fails with MemoryError.
_LIMIT = """
import resource, sys
import luong.cli, luong.evaluation.plot
size = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status")
            if line.startswith("VmSize"))
limit = size + int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
"""
_LIMITED = _LIMIT + "sys.exit(luong.cli.main(sys.argv[2:]))\n"

# The children of forked_python (luong_limited, python_limited, ...) come from one process
# per test process that has imported what _LIMIT imports: for each request (a line of JSON
# on its stdin) it forks a child that runs the script as ``python -c SCRIPT ARGS`` would, its
# stdin, stdout and stderr on the files named, in the working directory and environment
# given, and answers the child's exit status. A fork starts where a fresh interpreter stands
# once those imports end, in milliseconds instead of the two to three seconds of torch's
# import. The server imports torch._dynamo too, which the first optimizer of a training
# run imports (seconds more, where bytecode is not cached) and no command run under a
# memory limit here reaches: a limit's room above the child's size stays the budget.
_FORK_SERVER = """
import json, os, sys, traceback
import luong.cli, luong.evaluation.plot
import torch._dynamo

def run(request):
    pid = os.fork()
    if pid:
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    status = 1
    try:
        for fd, name, flags in ((0, "stdin", os.O_RDONLY), (1, "stdout", os.O_WRONLY),
                                (2, "stderr", os.O_WRONLY)):
            os.dup2(os.open(request[name], flags), fd)
            old = getattr(sys, "__" + name + "__")
            setattr(sys, name, open(fd, "w" if fd else "r", encoding=old.encoding,
                                    errors=old.errors, closefd=False))
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = ["-c", *request["args"]]
        try:
            exec(compile(request["script"], "<string>", "exec"), {"__name__": "__main__"})
            status = 0
        except SystemExit as done:
            status = done.code if isinstance(done.code, int) else int(done.code is not None)
            if isinstance(done.code, str):
                print(done.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(status)

for line in sys.stdin:
    print(run(json.loads(line)), flush=True)
"""
_server: list[subprocess.Popen[str]] = []


def forked_python(
    script: str, *args: str, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """What ``python -c SCRIPT ARGS`` (one thread) does, its stdin ``stdin`` (or nothing):
    run in a child forked from a process that has imported luong and torch already."""
    if not _server or _server[0].poll() is not None:
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        server = subprocess.Popen(
            [sys.executable, "-c", _FORK_SERVER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        atexit.register(server.communicate, "", 60)
        _server[:] = [server]
    server = _server[0]
    assert server.stdin is not None and server.stdout is not None
    with tempfile.TemporaryDirectory() as folder:
        files = {name: os.path.join(folder, name) for name in ("stdin", "stdout", "stderr")}
        for name, path in files.items():
            with open(path, "wb") as file:
                file.write((stdin or b"") if name == "stdin" else b"")
        request = {"script": script, "args": list(args), "cwd": os.getcwd(), **files}
        server.stdin.write(json.dumps({**request, "env": dict(os.environ)}) + "\n")
        server.stdin.flush()
        if not select.select([server.stdout], [], [], 300)[0]:
            server.kill()
            raise subprocess.TimeoutExpired(["python", "-c", script, *args], 300)
        status = int(server.stdout.readline())
        with open(files["stdout"], "rb") as out, open(files["stderr"], "rb") as err:
            return subprocess.CompletedProcess(
                ["python", "-c", script, *args], status, out.read(), err.read()
            )


def luong_limited(
    budget: int, *args: str, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """``luong ARGS`` with at most ``budget`` more bytes of memory than luong takes to start."""
    return forked_python(_LIMITED, str(budget), *args, stdin=stdin)


def python_limited(budget: int, code: str) -> subprocess.CompletedProcess[bytes]:
    """Run Python ``code`` with at most ``budget`` more bytes of memory than luong takes."""
    return forked_python(_LIMIT + code, str(budget))
