"""The package's shape (issue 15, docs/architecture.md): layers, no import cycles, no hidden state.

Read from the source with ``ast``, so a rule holds for code no test happens to run:

* no import cycle among flatten's modules, counting imports inside functions (only imports under
  ``if TYPE_CHECKING:`` are left out, as they never run);
* the layers: ``lang`` imports only ``lang``; ``gate`` (the file system's one door) only
  ``lang``; ``syntax`` only ``lang`` and ``syntax``; ``stages`` only ``lang``, ``gate``,
  ``syntax``, ``stages``, ``sources`` and ``providers``; nothing but ``shell``,
  ``cli.py`` and ``__main__.py`` imports ``flatten.shell`` (here every import counts, type-only
  ones too: a type from a higher layer is a dependency on it);
* no mutable module-level state outside ``flatten/shell/``: no module (or class body) binds a
  list, dict or set display, comprehension or constructor call, unless wrapped in
  ``MappingProxyType``/``frozenset``/``tuple``; and no ``global`` statement.

Each failure names the module and line of every offence.

The test suite's own shape: no test module imports another test module or ``conftest``; shared
helpers live in tests/support.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from support.paths import REPO, TESTS

PACKAGE = REPO / "flatten"


@dataclass(frozen=True)
class Module:
    name: str  # dotted, packages without ".__init__"
    path: Path
    tree: ast.Module

    @property
    def is_package(self) -> bool:
        return self.path.name == "__init__.py"

    @property
    def where(self) -> str:
        return self.path.relative_to(REPO).as_posix()


@dataclass(frozen=True)
class Import:
    source: Module
    target: str  # a flatten module
    line: int
    type_only: bool  # under ``if TYPE_CHECKING:``


def _modules() -> dict[str, Module]:
    out: dict[str, Module] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(REPO).with_suffix("").as_posix().replace("/", ".")
        name = name.removesuffix(".__init__")
        out[name] = Module(name, path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
    return out


MODULES = _modules()


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _targets(module: Module, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The flatten modules an import statement names: ``from a import b`` is ``a.b`` when that is a
    module, else ``a`` (the rule of ../shared/tools/import_cycles.py)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name in MODULES]
    if node.level:
        base = module.name.split(".") if module.is_package else module.name.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        parent = ".".join([*base, *([node.module] if node.module else [])])
    else:
        parent = node.module or ""
    out = []
    for alias in node.names:
        child = f"{parent}.{alias.name}"
        if child in MODULES:
            out.append(child)
        elif parent in MODULES:
            out.append(parent)
    return out


def _imports(module: Module) -> Iterator[Import]:
    def visit(node: ast.AST, type_only: bool) -> Iterator[Import]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for stmt in child.body:
                    yield from visit_stmt(stmt, True)
                for stmt in child.orelse:
                    yield from visit_stmt(stmt, type_only)
            else:
                yield from visit_stmt(child, type_only)

    def visit_stmt(node: ast.AST, type_only: bool) -> Iterator[Import]:
        if isinstance(node, ast.Import | ast.ImportFrom):
            for target in _targets(module, node):
                if target != module.name:
                    yield Import(module, target, node.lineno, type_only)
        else:
            yield from visit(node, type_only)

    yield from visit(module.tree, False)


IMPORTS = [imp for module in MODULES.values() for imp in _imports(module)]


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def _shortest_cycle(start: str, edges: dict[str, set[str]], within: set[str]) -> list[str]:
    """The shortest path start -> ... -> start inside one component (breadth first)."""
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(edges[node] & within):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if child not in came_from:
                    came_from[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"{start} is in no cycle")


def test_no_import_cycles() -> None:
    edges: dict[str, set[str]] = {name: set() for name in MODULES}
    first: dict[tuple[str, str], Import] = {}
    for imp in IMPORTS:
        if not imp.type_only:
            edges[imp.source.name].add(imp.target)
            first.setdefault((imp.source.name, imp.target), imp)
    lines = []
    for component in _cycles(edges):
        lines.append(f"{len(component)} modules in a cycle: " + " ".join(component))
        covered: set[str] = set()
        for start in component:
            if start in covered:
                continue
            path = _shortest_cycle(start, edges, set(component))
            covered.update(path)
            lines.append("  " + " -> ".join(path))
            for a, b in itertools.pairwise(path):
                imp = first[a, b]
                lines.append(f"    {imp.source.where}:{imp.line} imports {b}")
    assert not lines, "import cycles (imports inside functions count):\n" + "\n".join(lines)


def _layer(name: str) -> str:
    """``lang``, ``syntax``, ``stages``, ``shell``, ``sources``, ... or the top-level module's name."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else "flatten"


# Which layers each layer may import (itself included); layers not listed are limited only by the
# rule on flatten.shell below.
MAY_IMPORT = {
    "lang": frozenset({"lang"}),
    "gate": frozenset({"lang", "gate"}),
    "syntax": frozenset({"lang", "syntax"}),
    "stages": frozenset({"lang", "gate", "syntax", "stages", "sources", "providers"}),
}
# The only importers of flatten.shell: the shell itself and the process entry points.
SHELL_USERS = frozenset({"shell", "cli", "__main__"})


def test_layers() -> None:
    offences: list[str] = []
    for imp in IMPORTS:
        source, target = _layer(imp.source.name), _layer(imp.target)
        allowed = MAY_IMPORT.get(source)
        if allowed is not None and target not in allowed:
            offences.append(f"{imp.source.where}:{imp.line}: {source} imports {imp.target}")
        elif target == "shell" and source not in SHELL_USERS:
            offences.append(
                f"{imp.source.where}:{imp.line}: {imp.target} imported outside shell, cli.py, __main__.py"
            )
    assert not offences, "layering rules broken:\n" + "\n".join(dict.fromkeys(offences))


# Calls that make a mutable container, and the wrappers that make a read-only one of anything.
_MUTABLE_CALLS = frozenset(
    {
        "list",
        "dict",
        "set",
        "sorted",  # a new list
        "bytearray",
        "defaultdict",
        "OrderedDict",
        "Counter",
        "deque",
        "ChainMap",
        "WeakKeyDictionary",
        "WeakValueDictionary",
        "WeakSet",
        "local",  # threading.local
    }
)
_READ_ONLY = frozenset({"MappingProxyType", "frozenset", "tuple"})


def _call_name(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _mutable(value: ast.expr) -> bool:
    if isinstance(value, ast.List | ast.Dict | ast.Set | ast.ListComp | ast.DictComp | ast.SetComp):
        return True
    return isinstance(value, ast.Call) and _call_name(value) in _MUTABLE_CALLS


def _bindings(body: list[ast.stmt], scope: str) -> Iterator[tuple[ast.stmt, str, ast.expr]]:
    """Module-level (and class-level) assignments with a value, through if/try/with blocks."""
    for stmt in body:
        if isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            yield stmt, scope + ", ".join(ast.unparse(t) for t in targets), stmt.value
        elif isinstance(stmt, ast.ClassDef):
            yield from _bindings(stmt.body, f"{scope}{stmt.name}.")
        elif isinstance(stmt, ast.If | ast.While | ast.For | ast.With):
            yield from _bindings(stmt.body, scope)
            yield from _bindings(stmt.orelse if not isinstance(stmt, ast.With) else [], scope)
        elif isinstance(stmt, ast.Try):
            for block in (stmt.body, *(h.body for h in stmt.handlers), stmt.orelse, stmt.finalbody):
                yield from _bindings(block, scope)


def _state_offences(module: Module) -> Iterator[str]:
    for stmt, names, value in _bindings(module.tree.body, ""):
        # ``__all__`` is read by the import system and linters, never state (a list by convention).
        if names != "__all__" and _mutable(value):
            yield f"{module.where}:{stmt.lineno}: {names} = {ast.unparse(value)[:60]}"
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Global):
            yield f"{module.where}:{node.lineno}: global {', '.join(node.names)}"


def test_no_mutable_module_state_outside_the_shell() -> None:
    offences = [
        line
        for module in MODULES.values()
        if _layer(module.name) != "shell"
        for line in _state_offences(module)
    ]
    assert not offences, (
        "mutable module-level state outside flatten/shell/ (wrap constants in MappingProxyType, "
        "frozenset or tuple; keep caches in the shell):\n" + "\n".join(offences)
    )


def test_the_state_rule_sees_what_it_forbids() -> None:
    """The rule itself: displays, comprehensions and constructors count; read-only wrappers do not."""
    source = (
        "import collections\n"
        "A = []\n"
        "B: dict[str, int] = {}\n"
        "C = {x for x in 'ab'}\n"
        "D = collections.defaultdict(list)\n"
        "E = MappingProxyType({'a': []})\n"
        "F = frozenset({1})\n"
        "G = (1, [2])\n"
        "if True:\n"
        "    H = dict(a=1)\n"
        "class K:\n"
        "    I = [1]\n"
        "def f():\n"
        "    global J\n"
        "    local = []\n"
        "__all__ = ['f']\n"
    )
    module = Module("flatten.example", PACKAGE / "example.py", ast.parse(source))
    found = [line.split(": ", 1)[1].split(" ")[0] for line in _state_offences(module)]
    assert found == ["A", "B", "C", "D", "H", "K.I", "global"]


def _test_modules() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if "data" not in p.relative_to(TESTS).parts)


def test_tests_import_only_support() -> None:
    """A test module imports no other test module and not conftest: shared code is tests/support."""
    test_names = {p.stem for p in _test_modules() if p.stem.startswith("test_")} | {"conftest"}
    offences: list[str] = []
    for path in _test_modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names: list[str] = []
            if not isinstance(node, ast.stmt | ast.expr):
                continue
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            elif isinstance(node, ast.Call) and _call_name(node) in ("__import__", "import_module"):
                names = [
                    a.value for a in node.args[:1] if isinstance(a, ast.Constant) and isinstance(a.value, str)
                ]
            for name in names:
                if name.split(".")[-1] in test_names or name.split(".")[0] in test_names:
                    offences.append(f"{path.relative_to(REPO).as_posix()}:{node.lineno}: imports {name}")
    assert not offences, "test modules import one another (move shared code to tests/support):\n" + "\n".join(
        offences
    )
