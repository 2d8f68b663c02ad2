"""The package's layers, read from its source with ``ast``: imports only go down the floors of
``docs/architecture.md``, there is no import cycle, every import of luong sits at the top of
its module, and no name starting with ``_`` crosses from one file to another."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "luong"

# The floors, lowest first. A module imports modules of lower floors only (never its own
# floor, never a higher one). docs/architecture.md says what each floor is for; a new module
# goes onto a floor here and there.
FLOORS: list[tuple[str, set[str]]] = [
    ("files", {"luong.version", "luong.files", "luong.request_batcher"}),
    ("search options", {"luong.search_options"}),
    ("int8 weights", {"luong.int8"}),
    ("attention, encoder, vocabulary", {
        "luong.attention", "luong.encoder", "luong.vocab",
    }),
    ("the decoder's fused recurrence", {"luong.recurrence"}),
    ("decoder, configs, metrics, subwords", {
        "luong.decoder", "luong.config", "luong.metrics", "luong.subword",
    }),
    ("batching, processes", {"luong.batching", "luong.distributed"}),
    ("model", {"luong.model"}),
    ("ensemble", {"luong.ensemble"}),
    ("search: hypotheses, checkpoints, task data", {
        "luong.search.hypothesis", "luong.checkpoint", "luong.tasks.data",
    }),
    ("search: penalties, greedy search, prefixes", {
        "luong.search.penalties", "luong.search.greedy", "luong.search.prefix",
    }),
    ("search: beam search, sampling, symbols", {
        "luong.search.beam", "luong.search.sampling", "luong.search.symbols",
    }),
    ("search: text in", {"luong.search.text"}),
    ("search", {"luong.search"}),
    ("translation of strings, the tasks, averaging, int8", {
        "luong.translator", "luong.tasks.dates", "luong.tasks.g2p", "luong.tasks.tsv",
        "luong.tasks.translation", "luong.averaging", "luong.quantize",
    }),
    ("evaluation, task dispatch", {"luong.evaluation", "luong.tasks"}),
    ("trainer", {"luong.trainer"}),
    ("run", {"luong.run"}),
    ("plot, zoo, run folders", {"luong.plot", "luong.zoo", "luong.run_folders"}),
    ("server", {"luong.server"}),
    ("command line: shared", {"luong.cli.common"}),
    ("command line: commands", {
        "luong.cli.train", "luong.cli.evaluate", "luong.cli.translate", "luong.cli.plot",
        "luong.cli.zoo", "luong.cli.runs", "luong.cli.average", "luong.cli.serve",
        "luong.cli.quantize",
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
    module ``luong.cli.train``; ``from luong.model import Seq2Seq`` reads ``luong.model``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name.split(".")[0] == "luong"]
    if node.level or not node.module or node.module.split(".")[0] != "luong":
        return []
    names = [f"{node.module}.{alias.name}" for alias in node.names]
    modules = [name for name in names if name in MODULES]
    return modules if len(modules) == len(names) else [node.module, *modules]


def imports(module: str) -> list[tuple[int, str, bool]]:
    """(line, imported luong module, at module level) for every import in ``module``,
    those inside functions and under ``if TYPE_CHECKING`` included."""
    tree = TREES[module]
    top = {id(node) for node in tree.body}
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
        ("from luong.model import Seq2Seq", ["luong.model"]),
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
        "from luong.run import train\n"
        "def f():\n"
        "    from luong.search import _hypotheses\n"
        "    return x._advance()\n"
    )
    statements = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    found = [(node.lineno, target) for node in statements for target in imported(node)]
    assert found == [(1, "luong.run"), (3, "luong.search")]
    assert FLOOR["luong.run"] > FLOOR["luong.attention"]
    assert "_advance" in private_names(TREES["luong.decoder"])
    assert "_advance" not in private_names(TREES["luong.search"])
