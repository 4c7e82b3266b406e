"""Whole-build records: a rebuild where nothing changed replays the previous build instead of running it.

A record is written only after a successful plain ``flatten build`` (text diagnostics, no
``--check``, no option but ``--dialect``, ``--provenance`` and ``--explicit-providers``) whose
modules are all local (no registry or remote package, so no network and no ``.terraform`` state
decides anything). It holds a snapshot of everything the build can read: every module directory's
tree (names, symlink targets, file contents; hidden and ignored directories are skipped because
no stage reads them), ``.terraform/modules/modules.json``, and the output tree as written. The
record's key covers the build request (flatten.cli.BuildRequest: the command line as typer parsed
it and the environment variables a build reads), whether stderr is a terminal, and the source of
flatten and its libraries. A record is refused when any input's mtime is not safely older than
the build's start (it may have changed while the build read it).
A stage that starts reading files outside module directories (or hidden ones) must add them to
the snapshot (``_snapshot_inputs``); an option ``replayable`` does not know disables records.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from flatten.shell import cache_auth
from flatten.shell.cache_dir import file_digest, parser_version

if TYPE_CHECKING:
    from flatten.cli import BuildRequest

__all__ = ["record_path", "replay", "replayable", "save_record"]

_RECORD_MAGIC = "flatten-build-4"
_RECORD_HEAD = b"flatten-build-4\n"
_MTIME_MARGIN_NS = 2_000_000_000


class _Unrecordable(Exception):
    pass


def _build_version() -> str:
    import importlib.util

    h = hashlib.blake2b(digest_size=16)
    h.update(parser_version().encode())  # flatten's version and every source file of the package
    h.update(sys.version.encode())
    for package in ("networkx", "typer", "click", "packaging"):
        spec = importlib.util.find_spec(package)
        if spec is not None and spec.origin:
            file_digest([Path(spec.origin)], h)
    return h.hexdigest()


def replayable(request: BuildRequest) -> bool:
    """Return whether a record may stand for this build: a plain text build that writes its output.

    A record replays stderr only (``--format json|sarif|junit`` print on stdout), ``--check``
    writes nothing, and the other options (network, lock, inlining) are left to the build.
    """
    options = request.options
    return (
        len(request.roots) == 1  # a many-root run keeps no record (flatten/shell/roots.py)
        and request.report_format in (None, "text")
        and not request.diagnostics_json
        and not request.check
        and not (options.offline or options.locked or options.inline or options.inline_only is not None)
    )


def record_path(builds: Path, request: BuildRequest, root: Path, out: Path) -> Path:
    """Return the record of ``request`` under ``builds``, for the resolved ``root`` and ``out``."""
    h = hashlib.blake2b(digest_size=20)
    # The cache key is a secret (records are tagged with it instead): the request never holds it.
    isatty = sys.stderr.isatty() if hasattr(sys.stderr, "isatty") else False
    h.update(repr((_RECORD_MAGIC, _build_version(), request, str(root), str(out), isatty)).encode())
    return builds / h.hexdigest()


def _digest_file(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.blake2b(f.read(), digest_size=16).hexdigest()


def _snapshot_tree(top: Path, entries: dict[str, object], seen: set[str], started_ns: int | None) -> None:
    """Add ``top``'s tree to ``entries``: directory listings, symlink targets and file digests."""
    real = os.path.realpath(top)
    if real in seen:
        return
    seen.add(real)
    stack = [str(top)]
    while stack:
        current = stack.pop()
        real_dir = os.path.realpath(current)
        st = os.stat(current)
        if started_ns is not None and st.st_mtime_ns >= started_ns - _MTIME_MARGIN_NS:
            raise _Unrecordable(current)
        names = []
        with os.scandir(current) as it:
            for entry in it:
                names.append(entry.name)
                path = entry.path
                if entry.is_symlink():
                    entries["L" + path] = os.readlink(path)
                if entry.is_dir():
                    if entry.name.startswith(".") or entry.name.endswith("~"):
                        continue  # no stage reads hidden or backup directories
                    child_real = os.path.realpath(path)
                    if child_real in seen:
                        if entry.is_symlink():
                            entries["D" + path] = child_real
                        continue
                    seen.add(child_real)
                    stack.append(path)
                elif entry.is_file():
                    if started_ns is not None and entry.stat().st_mtime_ns >= started_ns - _MTIME_MARGIN_NS:
                        raise _Unrecordable(path)
                    entries["F" + path] = _digest_file(path)
        entries["R" + current] = real_dir
        entries["N" + current] = sorted(names)


def _snapshot_inputs(root: Path, tops: list[str], started_ns: int | None) -> dict[str, object]:
    entries: dict[str, object] = {}
    seen: set[str] = set()
    for top in tops:
        _snapshot_tree(Path(top), entries, seen, started_ns)
    manifest = root / ".terraform" / "modules" / "modules.json"
    try:
        entries["M"] = _digest_file(str(manifest))
    except OSError:
        entries["M"] = None
    return entries


def _snapshot_output(out: Path) -> dict[str, str]:
    files: dict[str, str] = {}
    for current, dirs, names in os.walk(out):
        dirs.sort()
        for name in names:
            path = os.path.join(current, name)
            files[os.path.relpath(path, out)] = _digest_file(path)
    return files


def _module_directories(out: Path) -> list[str] | None:
    """Return the module directories (relative to the root) an output manifest lists, if all are local."""
    import json

    from flatten.stages.emit import MANIFEST_NAME

    data = json.loads((out / MANIFEST_NAME).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or set(data) - {"dialect", "flatten_version", "modules"}:
        return None
    found = []
    for module in data.get("modules", []):
        if not isinstance(module, dict) or set(module) - {
            "digest",
            "directory",
            "module",
            "output",
            "source",
        }:
            return None
        source, directory = module.get("source"), module.get("directory")
        if not isinstance(source, str) or not isinstance(directory, str):
            return None
        if source != "." and not source.startswith(("./", "../")):
            return None
        found.append(directory)
    return found or None


def _stats(inputs: dict[str, object]) -> dict[str, tuple[int, int]]:
    """Return (size, mtime) of each file a snapshot holds: a cheap first check before the digests."""
    found = {}
    for name in inputs:
        if name.startswith("F"):
            st = os.stat(name[1:])
            found[name] = (st.st_size, st.st_mtime_ns)
    return found


def replay(path: Path, root: Path, out: Path) -> bool:
    """Print the recorded stderr and return True when the record at ``path`` still holds: every
    input and the output tree are as recorded. Else (or on any trouble) return False: build."""
    try:
        data = path.read_bytes()
        # Only a record this machine's key tagged is unpickled (the file may be anyone's).
        if not data.startswith(_RECORD_HEAD) or not cache_auth.verify(
            "build", path.name, data, len(_RECORD_HEAD)
        ):
            return False
        magic, tops, inputs, stats, outputs, stderr = pickle.loads(
            memoryview(data)[len(_RECORD_HEAD) + cache_auth.TAG_SIZE :]
        )
        if magic != _RECORD_MAGIC or not tops:
            return False
        # A file whose size or mtime differs has changed (or was touched): build, without hashing
        # every input first. Equal stats prove nothing, so the digests decide a replay.
        if _stats(inputs) != stats:
            return False
        if _snapshot_inputs(root, tops, None) != inputs or _snapshot_output(out) != outputs:
            return False
    except Exception:
        return False
    sys.stderr.write(stderr)
    sys.stderr.flush()
    return True


def save_record(record: Path, root: Path, out: Path, stderr: str, started_ns: int) -> None:
    """Write the record of a successful build that printed ``stderr`` and started at ``started_ns``."""
    try:
        directories = _module_directories(out)
        if directories is None:
            return
        tops = sorted({os.path.normpath(root / rel) for rel in directories})
        inputs = _snapshot_inputs(root, tops, started_ns)
        payload = pickle.dumps((_RECORD_MAGIC, tops, inputs, _stats(inputs), _snapshot_output(out), stderr))
        data = _RECORD_HEAD + cache_auth.seal("build", record.name, payload)
        record.parent.mkdir(parents=True, exist_ok=True)
        tmp = record.parent / f".{record.name}.{os.getpid()}.tmp"
        tmp.write_bytes(data)
        os.replace(tmp, record)
    except Exception:  # no record: the next build just runs
        return
