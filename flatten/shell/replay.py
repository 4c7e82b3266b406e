"""Whole-build records: a rebuild where nothing changed replays the previous build instead of running it.

A record is written only after a successful plain ``flatten build`` (text diagnostics, no
``--check``, no option but ``--dialect``, ``--provenance`` and ``--explicit-providers``) whose
modules are all local (no registry or remote package, so no network and no ``.terraform`` state
decides anything). It holds the fingerprint (``Fingerprint``: size, mtime, ctime, inode, device,
mode) of everything the build can read: every module directory's tree (directories, symlinks,
files; hidden and ignored directories are skipped because no stage reads them),
``.terraform/modules/modules.json``, every ``--var-file`` (wherever it is), and the output tree
as written. The record's key covers the
build request (flatten.cli.BuildRequest: the command line as typer parsed it and the environment
variables a build reads), whether stderr is a terminal, and the source of flatten and its
libraries; the process also files it under the command line as typed (``save_alias``), so that
the same command line replays before it is parsed (``aliased``, ``replay_alias``). A record is refused when
any input's mtime is not safely older than the build's start (it may have changed while the
build read it).
A stage that starts reading files outside module directories (or hidden ones) must add them to
the snapshot (``_snapshot_inputs``); an option ``replayable`` does not know disables records.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import stat
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from flatten import gate
from flatten.lang.environ import build_environ
from flatten.shell import cache_auth
from flatten.shell.cache_dir import cache_root, file_digest, parser_version, read_entry, write_entry

if TYPE_CHECKING:
    from flatten.cli import BuildRequest

__all__ = [
    "aliased",
    "record_path",
    "replay",
    "replay_alias",
    "replay_into",
    "replayable",
    "save_alias",
    "save_record",
]

_RECORD_MAGIC = "flatten-build-7"  # 7: outputs leave out what Terraform wrote
_RECORD_HEAD = b"flatten-build-7\n"
_MTIME_MARGIN_NS = 2_000_000_000


class _Unrecordable(Exception):
    pass


_LIBRARIES = ("networkx", "typer", "click", "packaging")  # whose code a build also runs


def _build_version() -> str:
    import importlib.util

    h = hashlib.blake2b(digest_size=16)
    h.update(parser_version().encode())  # flatten's version and every source file of the package
    h.update(sys.version.encode())
    for package in _LIBRARIES:
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


def _terminal() -> tuple[bool, int]:
    """Whether stderr is a terminal, and its width: the recorded diagnostics are coloured and
    wrapped for it (flatten.cli.text_style), so another terminal gets a build of its own."""
    isatty = sys.stderr.isatty() if hasattr(sys.stderr, "isatty") else False
    if not isatty:
        return False, 0
    try:
        return True, os.get_terminal_size(sys.stderr.fileno()).columns
    except (OSError, ValueError):
        return True, 0


def record_path(builds: Path, request: BuildRequest, root: Path, out: Path) -> Path:
    """Return the record of ``request`` under ``builds``, for the resolved ``root`` and ``out``."""
    h = hashlib.blake2b(digest_size=20)
    # The cache key is a secret (records are tagged with it instead): the request never holds it.
    isatty = _terminal()
    h.update(repr((_RECORD_MAGIC, _build_version(), request, str(root), str(out), isatty)).encode())
    return builds / h.hexdigest()


#: What a record keeps of a file, directory or symlink, and compares to decide a replay: size,
#: mtime, ctime, inode, device and mode. Any write to a file, any entry added, removed or renamed
#: in a directory, and any symlink re-pointed changes its ctime, which no program can set back
#: (``touch -d``, ``cp -p``, ``tar`` and cache restores set the mtime only): so equal fingerprints
#: mean unchanged content, as Git's index and Python's own .pyc check rely on. A restored or
#: copied tree has new ctimes and inodes: it builds.
Fingerprint = tuple[int, int, int, int, int, int]


def _fingerprint(st: os.stat_result) -> Fingerprint:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev, st.st_mode)


def _realpath(path: str, reals: dict[str, str]) -> str:
    """Return ``os.path.realpath(path)`` for a normalised absolute path, each directory resolved
    once (``reals``): a path's real path is its parent's joined with its name, unless the name is
    a symlink. (realpath itself checks every component of every path: 3,400 lstat calls to check
    the 200-module tree instead of 800.)"""
    found = reals.get(path)
    if found is None:
        parent, name = os.path.split(path)
        if not name or name in (".", "..") or parent == path:
            found = os.path.realpath(path)
        else:
            joined = os.path.join(_realpath(parent, reals), name)
            found = os.path.realpath(joined) if os.path.islink(joined) else joined
        reals[path] = found
    return found


def _snapshot_tree(
    top: Path, entries: dict[str, Fingerprint], seen: set[str], started_ns: int, reals: dict[str, str]
) -> None:
    """Add the fingerprint of every directory (followed), symlink and file (followed) of ``top``'s
    tree to ``entries``; raise _Unrecordable when one may have changed while the build read it."""
    real = _realpath(str(top), reals)
    if real in seen:
        return
    seen.add(real)
    stack = [str(top)]
    while stack:
        current = stack.pop()
        real_dir = _realpath(current, reals)
        entries["N" + current] = _recorded(os.stat(current), current, started_ns)
        for entry in gate.list_dir(current):
            path = os.path.join(current, entry.name)
            is_link = entry.kind == "link"
            if is_link:
                # Its target is what the build followed; a link's own mtime is when it was
                # made, so it is not held to the margin (re-pointing it makes a new ctime).
                entries["L" + path] = _fingerprint(os.lstat(path))
            if entry.kind == "dir" or (is_link and os.path.isdir(path)):
                if entry.name.startswith(".") or entry.name.endswith("~"):
                    continue  # no stage reads hidden or backup directories
                child_real = os.path.realpath(path) if is_link else os.path.join(real_dir, entry.name)
                reals[path] = child_real
                if child_real in seen:
                    continue  # its directory's fingerprint is taken where it was first seen
                seen.add(child_real)
                stack.append(path)
            elif entry.kind == "file" or (is_link and os.path.isfile(path)):
                entries["F" + path] = _recorded(os.stat(path), path, started_ns)


def _recorded(st: os.stat_result, path: str, started_ns: int) -> Fingerprint:
    """Return the fingerprint of an input the build read; one modified since shortly before the
    build started may have changed while it was read (or within the mtime's granularity)."""
    if st.st_mtime_ns >= started_ns - _MTIME_MARGIN_NS:
        raise _Unrecordable(path)
    return _fingerprint(st)


def _manifest(root: Path) -> str:
    return str(root / ".terraform" / "modules" / "modules.json")


def _snapshot_inputs(root: Path, tops: list[str], started_ns: int) -> dict[str, Fingerprint]:
    """Return the fingerprints of everything the build can have read under ``tops`` and of
    ``.terraform/modules/modules.json`` (when it exists)."""
    entries: dict[str, Fingerprint] = {}
    seen: set[str] = set()
    reals: dict[str, str] = {}
    for top in tops:
        _snapshot_tree(Path(top), entries, seen, started_ns, reals)
    with contextlib.suppress(OSError):  # none (the usual case for a local tree)
        entries["M"] = _recorded(os.stat(_manifest(root)), "modules.json", started_ns)
    return entries


def _inputs_unchanged(root: Path, recorded: dict[str, Fingerprint]) -> bool:
    """Return whether every recorded input still has its fingerprint (and no modules.json appeared)."""
    try:
        for name, fingerprint in recorded.items():
            kind, path = name[0], name[1:]
            if kind == "M":
                path = _manifest(root)
            st = os.lstat(path) if kind == "L" else os.stat(path)
            if _fingerprint(st) != fingerprint:
                return False
    except OSError:
        return False
    return "M" in recorded or not os.path.lexists(_manifest(root))


def _output_stats(out: Path, outputs: dict[str, str]) -> dict[str, Fingerprint] | None:
    """Return the fingerprint of each output file and of each directory that holds one (``""`` is
    ``out`` itself: a file added anywhere in the tree changes its directory's), or None when a
    file is missing or not a regular file."""
    found: dict[str, Fingerprint] = {}
    try:
        for rel in outputs:
            st = os.lstat(os.path.join(out, rel))
            if not stat.S_ISREG(st.st_mode):
                return None
            found[rel] = _fingerprint(st)
            parent = os.path.dirname(rel)
            while True:
                key = parent + os.sep  # a directory's key ends with the separator, a file's never
                if key in found:
                    break
                found[key] = _fingerprint(os.lstat(os.path.join(out, parent)))
                if not parent:
                    break
                parent = os.path.dirname(parent)
    except OSError:
        return None
    return found


def _snapshot_output(out: Path, root: Path) -> dict[str, str]:
    """Return each file of the output ``out`` of the root ``root`` with its digest, but what
    Terraform wrote into the root module's directory (stages/output.py ``terraform_entries``: a
    rebuild keeps it, a replay into another --out must not copy it). A name the source root also
    has may be a file the build copied from there (a lock file): that one is the build's."""
    from flatten.stages.output import MANIFEST_NAME, manifest_root, owned_paths, terraform_entries

    try:
        manifest: bytes | None = gate.read_bytes(out / MANIFEST_NAME, follow=False)
    except OSError:
        manifest = None
    files: dict[str, str] = {}
    owned = owned_paths(manifest)
    if owned is not None:  # exactly what the build wrote: the user's files in OUT are not its
        for rel in sorted({*owned, MANIFEST_NAME}):
            files[rel] = gate.file_digest(os.path.join(out, rel), _output_hash, limit=1 << 40).hexdigest()
        return files
    root_dir = os.path.normpath(os.path.join(out, manifest_root(manifest)))
    stack = [str(out)]
    while stack:  # as os.walk did: directories not followed when links, files whatever they are
        current = stack.pop()
        listed = gate.list_dir(current)
        dirs = [e.name for e in listed if e.kind == "dir"]
        # A link to a directory is neither walked nor hashed (os.walk's rule, which this was).
        names = [
            e.name
            for e in listed
            if e.kind != "dir" and not (e.kind == "link" and os.path.isdir(os.path.join(current, e.name)))
        ]
        if os.path.normpath(current) == root_dir:
            skipped = set(terraform_entries(current, {e.name for e in gate.list_dir(root)}))
            dirs = [d for d in dirs if d not in skipped]
            names = [n for n in names if n not in skipped]
        stack.extend(os.path.join(current, d) for d in reversed(dirs))
        for name in names:
            path = os.path.join(current, name)
            # In chunks (gate.file_digest): a copied file may be larger than memory should hold.
            digest = gate.file_digest(path, _output_hash, limit=1 << 40)
            files[os.path.relpath(path, out)] = digest.hexdigest()
    return files


def _output_hash() -> hashlib.blake2b:
    return hashlib.blake2b(digest_size=16)


def _umask() -> int | None:
    """Return the process's umask without changing it (Linux), else None."""
    try:
        for line in gate.read_text("/proc/self/status", encoding="ascii").splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return None


def _module_directories(out: Path) -> list[str] | None:
    """Return the module directories (relative to the root) an output manifest lists, if all are local."""
    import json

    from flatten.stages.emit import MANIFEST_NAME

    data = json.loads(gate.read_text(out / MANIFEST_NAME, follow=False))
    if not isinstance(data, dict) or set(data) - {
        "dialect",
        "files",
        "flatten_version",
        "modules",
        "terraform_version",
        "variables",
    }:
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


class _Record(NamedTuple):
    """What a record holds (pickled as a plain tuple)."""

    magic: str
    tops: list[str]  # the module directories snapshotted
    inputs: dict[str, Fingerprint]  # _snapshot_inputs
    outputs: dict[str, str]  # each output file's digest, by path relative to --out
    out_stats: dict[str, Fingerprint]  # _output_stats
    stderr: str  # what the build printed
    out_text: str  # --out as typed (the last line of stderr names it)
    out: str  # --out resolved
    umask: int | None  # the umask the output was written with


def _load(path: Path) -> _Record | None:
    """Return the record at ``path`` when this machine's key tagged it, else None."""
    data = read_entry(path)
    if data is None:
        return None
    # Only a record this machine's key tagged is unpickled (the file may be anyone's).
    if not data.startswith(_RECORD_HEAD) or not cache_auth.verify(
        "build", path.name, data, len(_RECORD_HEAD)
    ):
        return None
    fields = pickle.loads(memoryview(data)[len(_RECORD_HEAD) + cache_auth.TAG_SIZE :])
    if not isinstance(fields, tuple) or len(fields) != len(_Record._fields):
        return None
    record = _Record(*fields)
    return record if record.magic == _RECORD_MAGIC and record.tops else None


def replay(path: Path, root: Path, out: Path) -> bool:
    """Print the recorded stderr and return True when the record at ``path`` still holds: every
    input and the output tree have their recorded fingerprints. Else (or on any trouble) return
    False: build."""
    try:
        record = _load(path)
        if record is None:
            return False
        if not _inputs_unchanged(root, record.inputs):
            return False
        if _output_stats(out, record.outputs) != record.out_stats:
            return False
    except Exception:
        return False
    sys.stderr.write(record.stderr)
    sys.stderr.flush()
    return True


def _any_out_path(builds: Path, request: BuildRequest, root: Path) -> Path:
    """Return the record of ``request`` into whichever --out it was last built (``replay_into``)."""
    from dataclasses import replace

    return record_path(builds, replace(request, out=Path()), root, Path())


def _is_within(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip(os.sep) + os.sep)


def _new_out_allowed(request: BuildRequest, root: Path, out: Path) -> bool:
    """Return whether the build would write a new ``out`` (resolved): the checks of the command
    line (``flatten.cli._check_out``) pass (nothing is there yet). Else the build decides."""
    from flatten.sources.env import SourceEnv

    cache = str(SourceEnv.from_environ(dict(request.environ), progress=False).cache_dir.resolve())
    o, r = str(out), str(root)
    return not (
        _is_within(o, r)
        or _is_within(r, o)
        or out == Path(out.anchor)
        or _is_within(cache, o)
        or _is_within(o, cache)
    )


def replay_into(builds: Path, request: BuildRequest, root: Path, out: Path) -> bool:
    """Write the output of the previous identical build into a new ``out`` and return True, when
    its record still holds: every input is as recorded and the output it wrote is still there,
    digest for digest. The files are written as a build writes them (flatten/stages/output.py),
    and the messages are the build's, naming this --out. Else (or on any trouble) return False.

    Only into an --out where nothing exists yet, or an empty directory (a build checks and
    replaces anything else), and only with the umask the record was made with (it decides the
    files' permissions).
    """
    try:
        if os.path.lexists(out) and not (os.path.isdir(out) and not gate.list_dir(out)):
            return False  # a build checks and replaces what is there (an empty directory: here too)
        record = _load(_any_out_path(builds, request, root))
        if record is None:
            return False
        line = f" files to {record.out_text}\n"
        if (
            record.out == str(out)
            or record.umask is None
            or record.umask != _umask()
            or not record.stderr.endswith(line)
            or record.stderr.count(record.out_text) != 1
            or not _new_out_allowed(request, root, out)
            or not _inputs_unchanged(root, record.inputs)
        ):
            return False
        files: dict[str, bytes] = {}
        for rel, digest in record.outputs.items():
            data = gate.read_bytes(os.path.join(record.out, rel), follow=False, limit=1 << 40)
            if hashlib.blake2b(data, digest_size=16).hexdigest() != digest:
                return False  # the previous output was changed since: build
            files[rel] = data
        from flatten.stages.output import write_tree

        modes = {rel: stat.S_IMODE(record.out_stats[rel][5]) for rel in record.outputs}
        from flatten.shell.faults import fault_hook

        write_tree(out, files, modes=modes, fault=fault_hook())
        text = record.stderr[: -len(line)] + f" files to {request.out}\n"
        out_stats = _output_stats(out, record.outputs)
        if out_stats is not None:  # the next identical command replays
            here = record._replace(out_stats=out_stats, stderr=text, out_text=str(request.out), out=str(out))
            _save(record_path(builds, request, root, out), here)
    except Exception:
        return False
    sys.stderr.write(text)
    sys.stderr.flush()
    return True


_ALIAS_HEAD = b"flatten-argv-1\n"


def _alias_path(argv: Sequence[str]) -> Path:
    """Return where the command line ``argv``, run here, names the record it replays.

    The same arguments, in the same working directory, with the same build variables
    (lang/environ.py), the same interpreter and import path and stderr a terminal or not, make the
    same build request: typer's parse of them is a function of these alone.
    """
    isatty = _terminal()
    key = (tuple(argv), os.getcwd(), build_environ(os.environ), isatty, sys.executable, sys.version, sys.path)
    h = hashlib.blake2b(repr(key).encode(), digest_size=20, person=b"flatten-argv")
    return cache_root() / "commands" / h.hexdigest()  # beside builds/, which holds records only


def _python_files(top: str) -> list[str]:
    """Every ``*.py`` below ``top`` (the package), listed through the gate."""
    found: list[str] = []
    stack = [top]
    while stack:
        current = stack.pop()
        for entry in gate.list_dir(current):
            path = os.path.join(current, entry.name)
            if entry.kind == "dir":
                stack.append(path)
            elif entry.name.endswith(".py"):
                found.append(path)
    return found


def _code_files() -> list[str]:
    """Return the files the record key's code version hashes (``_build_version``): flatten's
    sources, python-hcl2's and lark's (``cache_dir.parser_version``) and the libraries'."""
    import importlib.util

    files = sorted(_python_files(str(Path(__file__).parent.parent)))
    for package, names in (
        ("hcl2", ("version.py", "hcl2.lark")),
        ("lark", ("__init__.py",)),
        *((library, ("__init__.py",)) for library in _LIBRARIES),
    ):
        spec = importlib.util.find_spec(package)
        if spec is not None and spec.origin:
            files.extend(str(Path(spec.origin).parent / name) for name in names)
    return files


def save_alias(argv: Sequence[str], record: Path, request: BuildRequest, root: Path, out: Path) -> None:
    """Let the command line ``argv`` (parsed into ``request``, whose root and --out resolve to
    ``root`` and ``out``) replay ``record`` before it is even parsed (``aliased``, ``replay_alias``), while
    every file of flatten's code and its libraries keeps its fingerprint."""
    try:
        code = []
        for name in _code_files():
            with contextlib.suppress(OSError):  # a library that is not installed
                code.append((name, _fingerprint(os.stat(name))))
        paths = (str(request.root), str(root), str(request.out), str(out))
        payload = pickle.dumps((str(record), paths, code))
        path = _alias_path(argv)
        write_entry(path, _ALIAS_HEAD + cache_auth.seal("argv", path.name, payload))
    except Exception:  # no alias: the next build parses its command line first
        return


def replay_alias(found: tuple[Path, Path, Path] | None) -> bool:
    """Replay the build a command line made last time (``found``: what ``aliased`` gave for it), if
    its record still holds, before typer and flatten.cli are imported (they are most of a replayed
    build's time). Return False, and change nothing, whenever anything may differ: the command
    line then runs as usual."""
    try:
        return found is not None and replay(*found)
    except Exception:
        return False


def aliased(argv: Sequence[str]) -> tuple[Path, Path, Path] | None:
    """Return the record the command line ``argv`` named last time (``save_alias``), with the root
    and --out it resolved to, while flatten's code and those paths are as they were; else None."""
    try:
        if argv[:1] != ["build"] or any(name.startswith("_FLATTEN_COMPLETE") for name in os.environ):
            return None
        path = _alias_path(argv)
        data = read_entry(path)
        if (
            data is None
            or not data.startswith(_ALIAS_HEAD)
            or not cache_auth.verify("argv", path.name, data, len(_ALIAS_HEAD))
        ):
            return None
        record, paths, code = pickle.loads(memoryview(data)[len(_ALIAS_HEAD) + cache_auth.TAG_SIZE :])
        for file, fingerprint in code:
            if _fingerprint(os.stat(file)) != fingerprint:
                return None
        root_text, root, out_text, out = paths
        # The root and --out as typed must still resolve where they did (a symlink re-pointed).
        if os.path.realpath(root_text) != root or os.path.realpath(out_text) != out:
            return None
        return Path(record), Path(root), Path(out)
    except Exception:
        return None


def _save(path: Path, record: _Record) -> None:
    payload = pickle.dumps(tuple(record))
    if not write_entry(path, _RECORD_HEAD + cache_auth.seal("build", path.name, payload)):
        raise OSError(f"the build record {path} could not be written")


def save_record(
    builds: Path,
    request: BuildRequest,
    root: Path,
    out: Path,
    stderr: str,
    started_ns: int,
    *,
    outputs: dict[str, str] | None = None,
) -> bool:
    """Write the record of a successful build that printed ``stderr`` and started at ``started_ns``:
    under its own key (``record_path``), and as the latest build of ``request`` into any --out.
    ``outputs``: the snapshot of ``out`` (``_snapshot_output``) when the caller has just taken it
    and written nothing since (a rebuild whose output stayed as it was). Return whether it was
    written."""
    try:
        directories = _module_directories(out)
        if directories is None:
            return False
        tops = sorted({os.path.normpath(root / rel) for rel in directories})
        inputs = _snapshot_inputs(root, tops, started_ns)
        for kind, path in request.options.variables:
            if kind == "var-file":  # read by the build (stages/variables.py), maybe outside the root
                inputs["F" + path] = _recorded(os.stat(path), path, started_ns)
        if outputs is None:
            outputs = _snapshot_output(out, root)
        out_stats = _output_stats(out, outputs)
        if out_stats is None:
            return False
        record = _Record(
            _RECORD_MAGIC,
            tops,
            inputs,
            outputs,
            out_stats,
            stderr,
            str(request.out),
            str(out),
            _umask(),
        )
        _save(record_path(builds, request, root, out), record)
        _save(_any_out_path(builds, request, root), record)
    except Exception:  # no record: the next build just runs
        return False
    return True
