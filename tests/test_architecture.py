"""The package's layers, read from its source with ``ast``: imports only go down the floors of
``docs/architecture.md``, there is no import cycle, every import of luong sits at the top of
its module, and no name starting with ``_`` crosses from one file to another. The plain floors
that ``import luong`` and the command line's grammar load import no torch; the two tables
that import modules by name (the package's public names, the commands' handlers) name real
modules on the right floors, and nothing else imports by name."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

import pytest

from luong.cli import COMMANDS, EXTRAS, build_parser

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "luong"

# The floors, lowest first. A module imports modules of lower floors only (never its own
# floor, never a higher one). docs/architecture.md says what each floor is for; a new module
# goes onto a floor here and there.
FLOORS: list[tuple[str, set[str]]] = [
    ("the parts' packages, whose __init__ imports nothing", {
        "luong.catalogs", "luong.common", "luong.data", "luong.evaluation", "luong.memory",
        "luong.model", "luong.server", "luong.service", "luong.translation",
    }),
    ("the ONNX runtime", {"luong.export", "luong.export.runtime"}),
    ("folder files, line breaks", {"luong.common.folder_files", "luong.common.lines"}),
    ("errors", {"luong.common.errors"}),
    ("the checks of counts and texts", {"luong.common.checks"}),
    ("files", {
        "luong.common.files", "luong.common.languages", "luong.common.progress",
        "luong.service.batcher", "luong.version",
    }),
    ("a prepared corpus's manifest", {"luong.data.manifest"}),
    ("msgfmt's grammar of PO files", {"luong.catalogs.po_grammar"}),
    ("format directives, PO and MO files", {
        "luong.catalogs.directives", "luong.catalogs.mo_file", "luong.catalogs.plural_table",
        "luong.catalogs.po_file",
    }),
    ("a catalog's header", {"luong.catalogs.header"}),
    ("search options", {"luong.config.search"}),
    ("vocabulary", {"luong.data.vocab"}),
    ("configs: choices, faces' settings, fields", {
        "luong.config.choices", "luong.config.faces", "luong.config.fields",
    }),
    ("configs: model, training, vocabularies", {
        "luong.config.model", "luong.config.train", "luong.config.vocab",
    }),
    ("configs: a run and its TOML", {"luong.config.run"}),
    ("configs", {"luong.config"}),
    ("request options, decoding defaults", {"luong.config.decoding", "luong.config.request"}),
    ("one translation request", {"luong.config.translation_request"}),
    ("presets", {"luong.config.presets"}),
    ("a model folder's config.json", {"luong.model.folder"}),
    ("int8 weights", {"luong.model.int8"}),
    ("attention, encoder, tensor files", {
        "luong.common.tensor_files", "luong.model.attention", "luong.model.encoder",
    }),
    ("local attention", {"luong.model.local_attention"}),
    ("the decoder's fused recurrence, the fused loss", {
        "luong.model.recurrence", "luong.training.loss",
    }),
    ("decoder, metrics, subwords, shortlists", {
        "luong.data.shortlist", "luong.data.subword", "luong.evaluation.metrics",
        "luong.model.decoder",
    }),
    ("devices", {"luong.common.devices"}),
    ("batching, processes", {"luong.data.batching", "luong.training.distributed"}),
    ("model", {"luong.model.seq2seq"}),
    ("ensemble", {"luong.model.ensemble"}),
    ("ONNX export", {"luong.export.exporter"}),
    ("search: hypotheses, checkpoints, task data", {
        "luong.search.hypothesis", "luong.tasks.data", "luong.training.checkpoint",
    }),
    ("search: penalties, step rules, greedy search, prefixes", {
        "luong.search.greedy", "luong.search.penalties", "luong.search.prefix",
        "luong.search.rules",
    }),
    ("search: beam search, sampling, symbols", {
        "luong.search.beam", "luong.search.sampling", "luong.search.symbols",
    }),
    ("search: constraints", {"luong.search.constrained"}),
    ("search: text in", {"luong.search.text"}),
    ("search", {"luong.search"}),
    ("word alignments, confidence, lexical tables", {
        "luong.translation.alignment", "luong.translation.confidence", "luong.translation.lexicon",
    }),
    ("placeholders: the text", {"luong.translation.placeholders"}),
    ("placeholders kept through the search, which sources a model takes", {
        "luong.translation.admission", "luong.translation.placeholder_search",
    }),
    ("the translation memory's index", {"luong.memory.index"}),
    ("glossaries, translation memory", {
        "luong.memory.glossary", "luong.memory.translation_memory",
    }),
    ("glossary files", {"luong.memory.glossary_files"}),
    ("a catalog's entries, filled one at a time", {"luong.catalogs.entries"}),
    ("a call's translations, built a window at a time", {"luong.translation.translations"}),
    ("translation of strings, the tasks, averaging, int8", {
        "luong.model.averaging", "luong.model.quantize", "luong.tasks.dates", "luong.tasks.g2p",
        "luong.tasks.translation", "luong.tasks.tsv", "luong.translation.translator",
    }),
    ("a translation's records, the lines luong translate writes", {
        "luong.translation.records",
    }),
    ("evaluation, task dispatch, catalogs, a request's limits, the served models", {
        "luong.catalogs.fill", "luong.evaluation.evaluate", "luong.service.answers",
        "luong.service.limits", "luong.service.registry", "luong.service.request_glossary",
        "luong.service.texts", "luong.tasks",
    }),
    ("prepared corpora, corpora from catalogs, Debian's catalogs", {
        "luong.catalogs.corpus", "luong.catalogs.debian", "luong.data.prepare",
        "luong.data.prepared",
    }),
    ("training: the loss and the schedule, signals, records, data", {
        "luong.training", "luong.training.data", "luong.training.objective",
        "luong.training.records", "luong.training.signals",
    }),
    ("training: checkpoints and resume, dev evaluation", {
        "luong.training.dev", "luong.training.state",
    }),
    ("trainer, the model a fine-tuning run starts from", {
        "luong.training.fine_tuning", "luong.training.trainer",
    }),
    ("a run's settings", {"luong.training.settings"}),
    ("run", {"luong.training.run"}),
    ("plot, zoo, run folders, catalog adaptation", {
        "luong.catalogs.adapt", "luong.evaluation.plot", "luong.server.libretranslate",
        "luong.training.run_folders", "luong.training.zoo",
    }),
    ("the server's requests, its ASGI middlewares", {
        "luong.server.api_requests", "luong.server.middleware",
    }),
    ("server", {"luong.server.app"}),
    ("command line: shared", {"luong.cli.common"}),
    ("command line: grammar", {
        "luong.cli.decode_parsers", "luong.cli.folder_parsers", "luong.cli.parsers",
    }),
    ("command line: the language pair's flags", {"luong.cli.language_flags"}),
    ("command line: commands", {
        "luong.cli.average", "luong.cli.corpus", "luong.cli.evaluate", "luong.cli.export",
        "luong.cli.pair", "luong.cli.plot", "luong.cli.po", "luong.cli.prepare",
        "luong.cli.quantize", "luong.cli.runs", "luong.cli.serve", "luong.cli.shortlist",
        "luong.cli.train", "luong.cli.translate", "luong.cli.zoo",
    }),
    ("command line", {"luong.cli"}),
    ("the package", {"luong", "luong.__main__"}),
]  # fmt: skip
FLOOR = {module: level for level, (_, modules) in enumerate(FLOORS) for module in modules}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}
TREES = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in MODULES.items()}


def imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The luong modules an import statement reads (``from luong.cli import train`` reads the
    module ``luong.cli.train``; ``from luong.model.seq2seq import Seq2Seq`` reads
    ``luong.model.seq2seq``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name.split(".")[0] == "luong"]
    if node.level or not node.module or node.module.split(".")[0] != "luong":
        return []
    names = [f"{node.module}.{alias.name}" for alias in node.names]
    modules = [name for name in names if name in MODULES]
    return modules if len(modules) == len(names) else [node.module, *modules]


def type_checking_block(tree: ast.Module) -> list[ast.stmt]:
    """The statements of a module-level ``if TYPE_CHECKING:`` (read by type checkers only)."""
    return [
        statement
        for node in tree.body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
        for statement in node.body
    ]


def imports(module: str) -> list[tuple[int, str, bool]]:
    """(line, imported luong module, at module level) for every import in ``module``,
    those inside functions and under ``if TYPE_CHECKING`` included. The package's own
    ``if TYPE_CHECKING`` imports count as module level: they name its public names for type
    checkers (``PUBLIC``, checked below), imported by name when first used."""
    tree = TREES[module]
    top = {id(node) for node in tree.body}
    if module == "luong":
        top |= {id(node) for node in type_checking_block(tree)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            for target in imported(node):
                found.append((node.lineno, target, id(node) in top))
    return found


def test_every_module_has_a_floor() -> None:
    assert sorted(set(MODULES) - set(FLOOR)) == [], "add the new modules to FLOORS"
    assert sorted(set(FLOOR) - set(MODULES)) == [], "FLOORS names modules that do not exist"


def test_imports_only_go_down() -> None:
    wrong = [
        f"{module}:{line} imports {target} ({FLOORS[FLOOR[target]][0]}), not below "
        f"{FLOORS[FLOOR[module]][0]}"
        for module in MODULES
        for line, target in ((line, target) for line, target, _ in imports(module))
        if FLOOR[target] >= FLOOR[module]
    ]
    assert wrong == []


def test_no_import_cycle() -> None:
    graph = {module: {target for _, target, _ in imports(module)} for module in MODULES}
    state: dict[str, str] = {}
    cycles: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = "open"
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                cycles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target, [*path, target])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert cycles == []


def test_imports_of_luong_are_at_module_level() -> None:
    late = [
        f"{module}:{line} imports {target} inside a function or a block"
        for module in MODULES
        for line, target, at_top in imports(module)
        if not at_top
    ]
    assert late == []


def private_names(tree: ast.Module) -> set[str]:
    """The names starting with one underscore that a file defines: functions, classes,
    methods, module and class variables, and attributes assigned through ``self``."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {name for name in names if name.startswith("_") and not name.startswith("__")}


def test_no_private_name_crosses_files() -> None:
    defined = {module: private_names(tree) for module, tree in TREES.items()}
    everywhere = set().union(*defined.values())
    crossing = []
    for module, tree in TREES.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("luong"):
                crossing += [
                    f"{module}:{node.lineno} imports {alias.name} from {node.module}"
                    for alias in node.names
                    if alias.name.startswith("_") and not alias.name.startswith("__")
                ]
            elif isinstance(node, ast.Attribute):
                name = node.attr
                if name in everywhere and name not in defined[module]:
                    crossing.append(f"{module}:{node.lineno} uses {name}, defined elsewhere")
    assert crossing == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from luong.model.seq2seq import Seq2Seq", ["luong.model.seq2seq"]),
        ("from luong.cli import train, zoo", ["luong.cli.train", "luong.cli.zoo"]),
        ("from luong import Seq2Seq", ["luong"]),
        ("import luong.search", ["luong.search"]),
        ("from torch import nn", []),
    ],
)
def test_imports_are_read_as_the_modules_they_load(source: str, expected: list[str]) -> None:
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.Import | ast.ImportFrom)
    assert imported(node) == expected


def test_the_checks_catch_what_they_are_for() -> None:
    # An upward import, a late import and a private name, in a module that has none.
    tree = ast.parse(
        "from luong.training.run import train\n"
        "def f():\n"
        "    from luong.search import _hypotheses\n"
        "    return x._advance()\n"
    )
    statements = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    found = [(node.lineno, target) for node in statements for target in imported(node)]
    assert found == [(1, "luong.training.run"), (3, "luong.search")]
    assert FLOOR["luong.training.run"] > FLOOR["luong.model.attention"]
    assert "_advance" in private_names(TREES["luong.model.decoder"])
    assert "_advance" not in private_names(TREES["luong.search"])


# -- what `import luong` and the command line's grammar load: no torch ---------------------

# The packages besides the standard library that the plain floors may import (TOML writing).
PLAIN_DEPENDENCIES = {"tomli_w"}


def loaded_by(roots: set[str]) -> set[str]:
    """The luong modules that importing ``roots`` runs: their module-level imports of luong,
    followed, each with the packages above it (``luong.cli.parsers`` runs ``luong/cli/
    __init__.py`` and ``luong/__init__.py`` first); ``if TYPE_CHECKING`` blocks do not run."""
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        parts = module.split(".")
        todo += [".".join(parts[:n]) for n in range(1, len(parts))]
        for node in TREES[module].body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                todo += imported(node)
    return seen


def outside_imports(module: str) -> set[str]:
    """The top-level packages other than luong that ``module`` imports when it is imported."""
    names = set()
    for node in TREES[module].body:
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module.split(".")[0])
    return names - {"luong", "__future__"}


def test_import_luong_and_the_command_lines_grammar_load_only_plain_modules() -> None:
    loaded = loaded_by({"luong", "luong.cli"})
    assert {"luong.config", "luong.config.presets", "luong.cli.parsers"} <= loaded
    heavy = {
        module: sorted(outside_imports(module) - set(sys.stdlib_module_names) - PLAIN_DEPENDENCIES)
        for module in sorted(loaded)
    }
    assert {module: names for module, names in heavy.items() if names} == {}
    # No command's handler is among them: each is imported when its command runs.
    assert loaded.isdisjoint(FLOORS[FLOOR["luong.cli.train"]][1])


def test_the_plain_check_sees_torch() -> None:
    assert "torch" in outside_imports("luong.model.attention")
    assert "luong.model.attention" in loaded_by({"luong.model.seq2seq"})
    assert "luong" in loaded_by({"luong.cli.train"})  # the packages above a module run first


def assigned(module: str, name: str) -> object:
    """The literal value a module assigns to ``name`` at its top level, read from its source."""
    for node in TREES[module].body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(ast.unparse(target) == name for target in targets):
                return ast.literal_eval(node.value)
    return None


def test_the_packages_public_names_come_from_real_modules_below_it() -> None:
    public = assigned("luong", "PUBLIC")
    assert isinstance(public, dict) and public, "luong/__init__.py: no PUBLIC table"
    wrong = [
        f"{module}.{name}"
        for module, names in public.items()
        for name in names
        if module not in MODULES
        or name not in (assigned(module, "__all__") or ())
        or FLOOR[module] >= FLOOR["luong"]
    ]
    assert wrong == []
    names = sorted(name for names in public.values() for name in names)
    assert sorted(assigned("luong", "__all__")) == sorted([*names, "__version__"])  # type: ignore[arg-type]
    # The names type checkers see are the same names from the same modules.
    checked = {
        (node.module, alias.asname or alias.name)
        for node in type_checking_block(TREES["luong"])
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert checked == {(module, name) for module, names in public.items() for name in names}


def test_only_the_two_tables_import_by_name() -> None:
    # luong.PUBLIC (importlib.import_module), luong.cli.COMMANDS' handlers and the thread
    # setter the computing commands share, luong.cli.USE_THREADS (pkgutil.resolve_name, in
    # main); nothing else imports a module by name, so every other import is an import
    # statement that the checks above read.
    by_name = ("import_module", "resolve_name", "__import__", "spec_from_file_location")
    found = sorted(
        (module, ast.unparse(node.func))
        for module, tree in TREES.items()
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith(by_name)
    )
    assert found == [
        ("luong", "importlib.import_module"),
        ("luong.cli", "pkgutil.resolve_name"),
        ("luong.cli", "pkgutil.resolve_name"),
    ]


def test_each_command_runs_a_function_of_the_commands_floor() -> None:
    commands = FLOORS[FLOOR["luong.cli.train"]][1]
    grammars = FLOORS[FLOOR["luong.cli.parsers"]][1]
    wrong = []
    for name, command in COMMANDS.items():
        module, _, function = command.handler.partition(":")
        body = TREES[module].body if module in TREES else []
        defined = {node.name for node in body if isinstance(node, ast.FunctionDef)}
        if module not in commands or function not in defined:
            wrong.append(f"{name}: {command.handler}")
        grammar = sys.modules[command.grammar.__module__]
        if command.grammar.__module__ not in grammars or (
            getattr(grammar, command.grammar.__name__, None) is not command.grammar
        ):
            wrong.append(f"{name}: {command.grammar} is not the grammar floor's")
        if command.extra and command.extra not in EXTRAS:
            wrong.append(f"{name}: extra {command.extra!r}")
    assert wrong == []
    # Every command of the parser has its entry, and the other way round.
    subparsers = [a for a in build_parser()._actions if a.choices and a.dest == "command"]
    assert list(subparsers[0].choices) == list(COMMANDS)
    # Every module of the commands' floor runs some command.
    assert {c.handler.partition(":")[0] for c in COMMANDS.values()} == commands


def test_the_extras_are_the_packages_extras() -> None:
    pyproject = tomllib.loads((SRC.parent / "pyproject.toml").read_text(encoding="utf-8"))
    extras = pyproject["project"]["optional-dependencies"]
    for extra, modules in EXTRAS.items():
        names = {re.match(r"[A-Za-z0-9_.-]+", r)[0].lower() for r in extras[extra]}  # type: ignore[index]
        assert set(modules) <= names, extra


# -- one path from a request to its outputs (docs/architecture.md) ------------------------------

# What the faces may read of the search and the placeholders: the options types alone. All
# decoding goes through luong.translation.translator.Translator (translations: mask, constrain,
# restore, align, autocast), so a request field added to RequestOptions reaches every face there.
FACES = ("luong.server.app", "luong.catalogs.fill")


def imported_names(module: str) -> set[tuple[str, str]]:
    """(module, name) of every ``from luong.X import name`` in ``module``."""
    return {
        (node.module, alias.name)
        for node in ast.walk(TREES[module])
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("luong")
        for alias in node.names
    }


@pytest.mark.parametrize("face", FACES)
def test_the_faces_decode_through_the_translator_alone(face: str) -> None:
    reached = sorted(
        f"{name} from {source}"
        for source, name in imported_names(face)
        if source.startswith(
            (
                "luong.search",
                "luong.translation.placeholders",
                "luong.translation.placeholder_search",
            )
        )
        and source != "luong.config.search"
    )
    assert reached == []


def test_every_face_hands_one_request_to_the_translator() -> None:
    """Issue 52: a request is one value. The faces build a ``TranslationRequest`` and call
    ``Translator.answer`` with it; none calls ``translations``, whose loose arguments (the
    constraints, ``exact``, the batch size, the window, a memory) are for a caller in
    Python, so no part of a request travels beside it."""
    faces = (
        "luong.cli.translate", "luong.cli.po", "luong.catalogs.fill", "luong.evaluation.plot",
        "luong.server.app", "luong.server.libretranslate", "luong.service.registry",
        "luong.translation.records",
    )  # fmt: skip
    loose = [
        f"{module}:{node.lineno}"
        for module in faces
        for node in ast.walk(TREES[module])
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        and node.func.attr == "translations"
    ]  # fmt: skip
    assert loose == []
    answering = [
        module for module in faces if ".answer(" in MODULES[module].read_text()
    ]  # fmt: skip
    assert answering == [
        "luong.catalogs.fill", "luong.evaluation.plot", "luong.service.registry",
        "luong.translation.records",
    ]  # fmt: skip
    building = sorted(
        module for module in faces if "TranslationRequest(" in MODULES[module].read_text()
    )
    assert building == [
        "luong.cli.po", "luong.cli.translate", "luong.evaluation.plot", "luong.service.registry",
        "luong.translation.records",  # the default request, for a caller in Python
    ]  # fmt: skip


def test_no_command_resolves_a_device_or_enters_autocast_itself() -> None:
    handlers = sorted(module for module in MODULES if module.startswith("luong.cli."))
    calls = [
        f"{module}:{node.lineno} calls {name}"
        for module in handlers
        for node in ast.walk(TREES[module])
        if isinstance(node, ast.Call)
        and (name := ast.unparse(node.func).split(".")[-1])
        in {"resolve_device", "autocast", "check_precision", "load_models"}
    ]
    devices = [
        f"{m} imports {name}"
        for m in handlers
        for s, name in imported_names(m)
        if s == "luong.common.devices"
    ]
    assert calls == [] and devices == []


def shared_blocks(first: Path, second: Path, size: int = 6) -> list[str]:
    """The runs of ``size`` lines of code (stripped; blank lines, comments, lone brackets and
    functions' signatures left out) that appear in both files. Signatures are left out: two
    functions that take the same positional interface (``search_beams`` and
    ``constrained_search``: a model, its encoding, the limits, the options, the prefix) list
    the same parameters without repeating any code."""

    def windows(path: Path) -> dict[tuple[str, ...], int]:
        text = path.read_text(encoding="utf-8")
        signature = {
            line
            for node in ast.walk(ast.parse(text))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            for line in range(node.lineno, node.body[0].lineno)
        }
        kept = [
            (number, line.strip())
            for number, line in enumerate(text.splitlines(), 1)
            if number not in signature
            and line.strip()
            and not line.strip().startswith("#")
            and line.strip() not in ")]}"
        ]
        return {
            tuple(t for _, t in kept[i : i + size]): kept[i][0] for i in range(len(kept) - size + 1)
        }

    theirs = windows(second)
    return [
        f"{first.name}:{line} and {second.name}:{theirs[block]}"
        for block, line in windows(first).items()
        if block in theirs
    ]


def test_one_beam_loop() -> None:
    search = PACKAGE / "search"
    assert shared_blocks(search / "beam.py", search / "constrained.py") == []
    # the check sees a block that is there
    assert shared_blocks(search / "beam.py", search / "beam.py") != []


ADMITTING = [
    "luong.server.app", "luong.service.limits", "luong.server.libretranslate",
    "luong.catalogs.fill", "luong.evaluation.plot", "luong.cli.translate", "luong.cli.po",
    "luong.cli.serve",
]  # fmt: skip


def test_the_placeholders_text_imports_no_search() -> None:
    """``luong.translation.placeholders`` is text in, text out (find, mask, restore, check); the
    searches that keep placeholders are ``luong.translation.placeholder_search``'s."""
    reached = [
        t for _, t, _ in imports("luong.translation.placeholders") if t.startswith("luong.search")
    ]
    assert reached == []
    assert {t for _, t, _ in imports("luong.translation.placeholders")} <= {
        "luong.catalogs.directives",
        "luong.common.errors",
    }
    assert "luong.search" in {t for _, t, _ in imports("luong.translation.placeholder_search")}


def test_one_admission_rule() -> None:
    """Whether a model takes a source is decided in ``luong.translation.admission`` alone: no face
    measures a source against a model's ``max_src_len`` itself, and the faces that refuse
    sources ask ``Translator.admit`` (or ``fit_sources``, built on it)."""
    measuring = [
        f"{module}:{node.lineno}"
        for module in ADMITTING
        for node in ast.walk(TREES[module])
        if isinstance(node, ast.Attribute) and node.attr == "max_src_len"
        and isinstance(node.value, ast.Attribute) and node.value.attr == "config"
    ]  # fmt: skip
    assert measuring == []
    lengths = sorted(
        module for module, tree in TREES.items()
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.name in ("read_length", "admit")
    )  # fmt: skip
    assert lengths == [
        "luong.translation.admission",
        "luong.translation.admission",
        "luong.translation.translator",
    ]
    for module in ("luong.service.limits", "luong.catalogs.fill", "luong.evaluation.plot"):
        assert ".admit(" in MODULES[module].read_text(), module
    assert "check_request(" in MODULES["luong.server.app"].read_text()  # the server's limits
    assert "fit_sources(" in MODULES["luong.cli.translate"].read_text()


def test_the_faces_pass_file_names_and_the_translator_reads_them() -> None:
    """A face's memory and glossary are the translator's (``Translator.with_resources``,
    given the files' names): no face reads a memory or a glossary file itself, and the
    HTTP modules import no memory, glossary, confidence or records code at all."""
    readers = [
        f"{module}:{line}"
        for module in ("luong.cli.translate", "luong.cli.po", "luong.cli.serve", "luong.server.app")
        for line, target, _ in imports(module)
        if target
        in (
            "luong.memory.translation_memory",
            "luong.memory.glossary",
            "luong.memory.glossary_files",
        )
    ]
    assert readers == []
    # the HTTP modules import no memory, glossary or confidence: the service layer's
    # (luong.service: a request's glossary, the texts' lines and confidence, the answers)
    http = [m for m in MODULES if m.startswith("luong.server.")]
    assert "luong.server.libretranslate" in http and "luong.server.app" in http
    assert [
        f"{module}:{line} imports {target}"
        for module in http
        for line, target, _ in imports(module)
        if target.startswith("luong.memory.")
        or target in ("luong.translation.confidence", "luong.translation.records")
    ] == []
    for module in ("luong.cli.translate", "luong.cli.po", "luong.cli.serve"):
        assert ".with_resources(" in MODULES[module].read_text(), module


def test_a_step_rule_is_an_option_and_a_rule_module() -> None:
    """A search option that changes each step's log-probabilities is named where it is
    declared (``luong.config.search``) and where its rule is (``luong.search.rules``),
    nowhere else: every loop applies the rules through ``StepRules``, and the faces' flags,
    schema and controls come from the options' fields."""
    naming = sorted(
        module for module, path in MODULES.items() if "no_repeat_ngram" in path.read_text()
    )
    assert naming == ["luong.config.search", "luong.search.rules"]
    loops = [PACKAGE / "search" / name for name in ("beam.py", "sampling.py")]
    assert all("StepRules" in path.read_text() for path in loops)


# -- rules that the floors alone would allow -------------------------------------------------

# (module, module it must not import): what each reads lives on a floor below them both.
NOT_IMPORTED = [
    ("luong.data.vocab", "luong.config.search"),  # LINE_BREAKS: luong.common.lines
    (
        "luong.data.prepared",
        "luong.model.seq2seq",
    ),  # the vocabularies' file names: luong.common.folder_files
    ("luong.data.prepare", "luong.model.seq2seq"),  # the same
    (
        "luong.training.run_folders",
        "luong.training.trainer",
    ),  # log.jsonl's name: luong.common.folder_files
]


@pytest.mark.parametrize(("module", "target"), NOT_IMPORTED)
def test_a_module_imports_nothing_of_another_for_a_name(module: str, target: str) -> None:
    assert [line for line, imported_, _ in imports(module) if imported_ == target] == []


def strings(tree: ast.Module) -> list[ast.Constant]:
    """The string constants of a module that are not docstrings (an f-string's pieces
    included)."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        and id(node) not in docstrings
    ]  # fmt: skip


# The file names of luong.common.folder_files that have a dot (the others, "checkpoints",
# "tensorboard", "latest", are words other strings mean too: a setting, a package).
FILE_NAMES = {
    value
    for name in assigned("luong.common.folder_files", "__all__")  # type: ignore[union-attr]
    if isinstance(value := assigned("luong.common.folder_files", name), str) and "." in value
}


def test_the_names_of_folder_files_are_spelled_in_luong_folder_files_alone() -> None:
    assert {"metrics.json", "config.json", "config.toml", "log.jsonl", ".lock"} <= FILE_NAMES
    spelled = [
        f"{module}:{node.lineno} spells {node.value!r}"
        for module, tree in TREES.items()
        if module != "luong.common.folder_files"
        for node in strings(tree)
        if node.value in FILE_NAMES
    ]
    assert spelled == []


def test_the_spelling_check_sees_a_file_name_and_skips_docstrings() -> None:
    tree = ast.parse('"""metrics.json"""\ndef f():\n    """log.jsonl"""\n    return "log.jsonl"\n')
    assert [node.value for node in strings(tree)] == ["log.jsonl"]
