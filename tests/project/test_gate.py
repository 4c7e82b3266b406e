"""Every file-system call goes through flatten/gate.py (issue 38, "One gate").

Read from the source with ``ast``, so the rule holds for code no test happens to run: outside
``flatten/gate.py``, no call to the builtin ``open``, to ``os.open``/``remove``/``unlink``/
``rename``/``replace``/``rmdir``/``mkdir``/``makedirs``/``scandir``/``listdir``/``walk``/
``fwalk``/``symlink``/``link``/``truncate``/``mkfifo``/``chmod``/``utime``, to ``shutil``'s
tree and copy functions, or to ``Path``'s ``read_*``/``write_*``/``open``/``unlink``/``mkdir``/
``rmdir``/``touch``/``rename``/``replace``/``symlink_to``/``hardlink_to``/``iterdir``/``glob``/
``rglob`` (told from a ``str.replace`` or a ``gate.Dir`` method by their arguments).

``NOT_YET`` lists the calls that were not converted when this test was written, file by file,
with their count: the test fails when a file not listed makes such a call, or a listed file makes
more than its count, so the list can only shrink (docs/reliability.md, "The gate").
"""

from __future__ import annotations

import ast
from collections import Counter

from support.paths import REPO

PACKAGE = REPO / "flatten"

_OS = frozenset(
    {
        "open",
        "remove",
        "unlink",
        "rename",
        "replace",
        "rmdir",
        "mkdir",
        "makedirs",
        "removedirs",
        "scandir",
        "listdir",
        "walk",
        "fwalk",
        "symlink",
        "link",
        "truncate",
        "mkfifo",
        "chmod",
        "utime",
    }
)
_SHUTIL = frozenset({"rmtree", "copy", "copy2", "copyfile", "copytree", "move", "copyfileobj"})
# Path methods that only Path has (a gate.Dir's methods take a name first: told apart below).
_PATH_ONLY = frozenset(
    {"read_text", "read_bytes", "write_text", "write_bytes", "symlink_to", "hardlink_to", "iterdir", "rglob"}
)
# Receivers of an ``.open(...)`` that is no file: the graph walkers, urllib, archives' members.
_OPEN_OK = frozenset({"self", "cycles", "walk", "opener", "zf", "_TarFile", "tarfile", "zipfile"})

#: Not yet through the gate (file -> calls). Empty since the end of issue 38 (the last were
#: sources/archive.py, git.py and transport.py, and OUT's writer): never grow it.
NOT_YET: dict[str, int] = {}


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _offence(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name) and func.id == "open":
        return "open"
    if not isinstance(func, ast.Attribute):
        return None
    receiver, attr = func.value, func.attr
    owner = receiver.id if isinstance(receiver, ast.Name) else ""
    args = len(call.args)
    if owner == "os" and attr in _OS:
        return f"os.{attr}"
    if owner == "shutil" and attr in _SHUTIL:
        return f"shutil.{attr}"
    if owner in ("os", "shutil", "gate"):
        return None
    if attr in _PATH_ONLY:
        return f".{attr}"
    if attr in ("unlink", "touch", "rmdir") and args == 0:  # Dir.unlink(name), Dir.touch(name)
        return f".{attr}"
    if attr == "mkdir" and (args == 0 or not isinstance(call.args[0], ast.Constant | ast.Name)):
        return ".mkdir"
    if (
        attr == "mkdir"
        and args
        and isinstance(call.args[0], ast.Constant)
        and isinstance(call.args[0].value, int)
    ):
        return ".mkdir"
    if attr in ("rename", "replace") and args == 1 and not call.keywords:  # str.replace takes 2
        return f".{attr}"
    if attr == "glob" and owner != "glob" and args == 1:
        return ".glob"
    if attr == "open" and _name(receiver) not in _OPEN_OK:
        return ".open"
    return None


def _offences() -> Counter[str]:
    found: Counter[str] = Counter()
    lines: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "gate.py":
            continue
        rel = path.relative_to(REPO).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and (what := _offence(node)) is not None:
                found[rel] += 1
                lines.setdefault(rel, []).append(f"{rel}:{node.lineno}: {what}")
    _offences.lines = lines  # type: ignore[attr-defined]
    return found


def test_every_file_system_call_goes_through_the_gate() -> None:
    found = _offences()
    lines: dict[str, list[str]] = _offences.lines  # type: ignore[attr-defined]
    bad = [line for rel, count in sorted(found.items()) if count > NOT_YET.get(rel, 0) for line in lines[rel]]
    assert not bad, "file-system calls outside flatten/gate.py (use the gate):\n" + "\n".join(bad)


def test_the_list_of_calls_not_yet_converted_only_shrinks() -> None:
    """A file converted (fewer calls than listed) must lower its count, so the list stays true."""
    found = _offences()
    stale = {rel: (count, found.get(rel, 0)) for rel, count in NOT_YET.items() if found.get(rel, 0) < count}
    assert not stale, f"lower these counts in NOT_YET (listed, found): {stale}"


def test_the_rule_sees_what_it_forbids() -> None:
    source = (
        "import os, shutil\n"
        "from pathlib import Path\n"
        "open('x')\n"
        "os.unlink('x')\n"
        "os.replace('a', 'b')\n"
        "shutil.rmtree('d')\n"
        "Path('x').read_text()\n"
        "Path('x').write_bytes(b'')\n"
        "Path('x').unlink(missing_ok=True)\n"
        "Path('x').mkdir(parents=True)\n"
        "Path('x').open('rb')\n"
        "Path('x').rename('y')\n"
        "os.scandir('.')\n"
        # not file-system calls of their own:
        "'a'.replace('b', 'c')\n"
        "gate.read_bytes('x')\n"
        "directory.unlink('name')\n"
        "directory.touch('name')\n"
        "cycles.open(node)\n"
    )
    found = [
        what
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        for what in [_offence(node)]
        if what
    ]
    assert found == [
        "open",
        "os.unlink",
        "os.replace",
        "shutil.rmtree",
        ".read_text",
        ".write_bytes",
        ".unlink",
        ".mkdir",
        ".open",
        ".rename",
        "os.scandir",
    ]
