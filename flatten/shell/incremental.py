"""Incremental rebuild: after an edit to a few modules' configuration files, redo only those modules.

When the previous identical build's record (flatten/shell/replay.py) no longer replays, this
compares every input's fingerprint with the record's. When the only differences are
configuration files directly in module directories (every directory keeping its entries), it
loads and merges just those modules (through the disk memo) and takes each one's previous
version from the module cache, by the key the previous build noted (in
``<cache>/module-keys/``, bound to the record). When the two versions read the same from outside
(``stages.reads.outside_view``: what the module graph, the provider checks and the other
modules' output read of a module), the new output is the previous one with those modules' files
emitted again and the manifest's digests of them changed; every other file is taken from the
previous output by hard link (its bytes checked against the record's digest) and the whole tree
is swapped in atomically, as a build writes it.

It applies only where the result is provably the full build's: the previous build printed no
diagnostic (its one line, "wrote N files"), the new modules load and merge without any, no
module call in them is overridden, no option rewrites modules (``--explicit-providers``), the
umask is the record's, every other input and the previous output have their recorded
fingerprints, and each file taken from that output has its recorded digest. Anything else, or
any failure, returns False and the full build runs. ``tests/shell/test_incremental.py`` builds
random edits of generated trees both ways and compares the output and the messages.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pickle
import signal
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from flatten import gate
from flatten.shell import cache_auth, replay
from flatten.shell.cache_dir import read_entry, write_entry

if TYPE_CHECKING:
    from flatten.cli import BuildRequest
    from flatten.lang.model import Module
    from flatten.lang.options import Dialect, Options

__all__ = ["end_early", "rebuild", "rebuild_early", "save_keys"]

_HEAD = b"flatten-incr-1\n"
_WROTE = "flatten: wrote "


def _keys_path(record: Path) -> Path:
    # Beside the records' directory, not in it: that holds records only (each a tagged pickle).
    return record.parent.parent / "module-keys" / record.name


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=20).hexdigest()


def save_keys(record: Path, keys: dict[str, str | None]) -> None:
    """Keep each module directory's key (by display path) for ``record``, which the build that
    loaded them has just written."""
    try:
        data = read_entry(record)
        if data is None:
            return
        payload = json.dumps(
            {"record": _digest(data), "keys": {d: k for d, k in keys.items() if k is not None}},
            sort_keys=True,
        ).encode()
        path = _keys_path(record)
        write_entry(path, _HEAD + cache_auth.seal("incr", path.name, payload))
    except Exception:  # no keys: the next rebuild is a full one
        return


def _load_keys(record: Path, data: bytes) -> dict[str, str] | None:
    path = _keys_path(record)
    raw = read_entry(path)
    if raw is None or not raw.startswith(_HEAD) or not cache_auth.verify("incr", path.name, raw, len(_HEAD)):
        return None
    found = json.loads(raw[len(_HEAD) + cache_auth.TAG_SIZE :])
    if not isinstance(found, dict) or found.get("record") != _digest(data):
        return None  # the keys of another build than the record's
    keys = found.get("keys")
    return keys if isinstance(keys, dict) else None


def _changed_modules(record: replay._Record, root: Path, dialect: Dialect) -> list[str] | None:
    """Return the module directories (as the record's ``tops`` name them) whose configuration files
    may have changed, when nothing else did; None when anything else may have.

    An input whose fingerprint (replay.py: size, mtime, ctime, inode, device, mode) is as recorded
    is unchanged. A directory's own fingerprint changes when an entry is added, removed or
    renamed (an editor's save by rename does): that is no change when its entries have the
    recorded names (a module directory is loaded again anyway)."""
    from flatten.stages.files import is_ignored_name, split_extension

    inputs = record.inputs
    if "M" not in inputs and os.path.lexists(replay._manifest(root)):
        return None
    tops = set(record.tops)
    changed: set[str] = set()
    renamed: set[str] = set()
    for name, fingerprint in inputs.items():
        kind, path = name[0], name[1:]
        if kind == "M":
            path = replay._manifest(root)
        try:
            st = os.lstat(path) if kind == "L" else os.stat(path)
        except OSError:
            return None
        if replay._fingerprint(st) == fingerprint:
            continue
        if kind == "N":  # a directory: what the build read of it is its entries' names
            renamed.add(path)
            continue
        if kind != "F":
            return None
        directory, base = os.path.split(path)
        if directory not in tops or is_ignored_name(base) or split_extension(base, dialect) is None:
            return None  # a file copied into the output, or one no module reads as configuration
        changed.add(directory)
    for directory in renamed:
        named = {n[1:] for n in inputs if n[:1] in "FLN" and os.path.dirname(n[1:]) == directory}
        if _entries(directory) != named:
            return None  # an entry added or removed
        if directory in tops:
            changed.add(directory)
    return sorted(changed)


def _entries(directory: str) -> set[str]:
    """Return the paths of ``directory``'s entries a record names (as replay's snapshot does:
    files, symlinks, and directories but hidden and backup ones)."""
    found = set()
    for entry in gate.list_dir(directory):
        hidden = entry.name.startswith(".") or entry.name.endswith("~")
        if entry.kind in ("link", "file") or (entry.kind == "dir" and not hidden):
            found.add(os.path.join(directory, entry.name))
    return found


def rebuild(
    builds: Path,
    request: BuildRequest,
    root: Path,
    out: Path,
    record_path: Path,
    argv: Sequence[str] | None = None,
) -> bool:
    """Rebuild ``request`` (resolved ``root`` and ``out``) from its record at ``record_path`` when
    only some modules' configuration files changed; print the build's messages and return True.
    Else, or on any trouble, return False (the full build runs). ``argv``: as for
    ``process.run_build`` (the command line that replays next time)."""
    # A child ``rebuild_early`` forked read inputs from when it started.
    started = min([time.time_ns(), *(e.started_ns for e in _EARLY if e.record == record_path)])
    try:
        planned = _plan(request, root, out, record_path)
        if planned is None:
            return False
        record, files, keys, snapshot = planned
        if files:
            from flatten.stages.output import write_tree

            links = {rel: (out / rel, d) for rel, d in record.outputs.items() if rel not in files}
            from flatten.shell.faults import fault_hook

            write_tree(out, files, links=links, fault=fault_hook())
    except Exception:
        return False
    finally:
        end_early()  # a version nobody took (the full build runs), or a child that failed
    sys.stderr.write(record.stderr)
    sys.stderr.flush()
    # The next rebuild compares with this one (refused while an input is younger than 2 s).
    # Nothing written (a comment edited): the output is the one ``_plan`` snapshotted, not read
    # and hashed again (0.005-0.01 s of flat 200's rebuild).
    if replay.save_record(builds, request, root, out, record.stderr, started, outputs=snapshot):
        save_keys(record_path, keys)
        if argv is not None:
            replay.save_alias(argv, record_path, request, root, out)
    return True


def _plan(
    request: BuildRequest, root: Path, out: Path, record_path: Path
) -> tuple[replay._Record, dict[str, bytes], dict[str, str | None], dict[str, str] | None] | None:
    """Return the record, the files to write anew (path -> bytes), the modules' keys and, when
    there are none to write, the output's snapshot as checked against the record; or None."""
    options = request.options
    if options.explicit_providers or options.variables:  # a --var-file changed: a full build
        return None
    data = read_entry(record_path)
    if data is None:
        return None
    record = replay._load(record_path)
    if record is None:
        return None
    keys = _load_keys(record_path, data)
    if keys is None:
        return None
    stderr = record.stderr
    if not stderr.startswith(_WROTE) or stderr.count("\n") != 1 or not stderr.endswith("\n"):
        return None  # the previous build printed a diagnostic (or progress): build
    if record.umask is None or record.umask != replay._umask():
        return None
    # The previous output as recorded: the same files (each one's bytes are checked as it is
    # taken into the new tree: stages/output.py).
    if replay._output_stats(out, record.outputs) != record.out_stats:
        return None
    changed = _changed_modules(record, root, options.dialect)
    if changed is None:
        return None
    merged: dict[str, str | None] = dict(keys)
    files: dict[str, bytes] = {}
    if changed:
        from flatten.stages.emit import MANIFEST_NAME

        old_manifest = gate.read_bytes(out / MANIFEST_NAME, follow=False)
        if _output_digest(old_manifest) != record.outputs.get(MANIFEST_NAME):
            return None
        manifest = json.loads(old_manifest)
        from flatten.stages.emit import dumps

        if dumps(manifest).encode("utf-8") != old_manifest:
            return None
        for top in changed:
            found = _module(top, root, options, manifest, keys)
            if found is None:
                return None
            rel, content, display, key = found
            if content is not None:
                files[rel] = content
            merged[display] = key
        files[MANIFEST_NAME] = dumps(manifest).encode("utf-8")
        # By the digests the record keeps (checked against the bytes just below): reading the
        # previous output to compare held a large module's output twice.
        if all(_output_digest(content) == record.outputs.get(rel) for rel, content in files.items()):
            files = {}  # the same output (a comment changed): it is in place already
    snapshot = None
    if not files:
        snapshot = replay._snapshot_output(out, root)
        if snapshot != record.outputs:
            return None  # ... if every byte of it is as recorded
    return record, files, merged, snapshot


def _output_digest(content: bytes) -> str:
    # As the record names each output file's bytes (replay._snapshot_output).
    h = replay._output_hash()
    h.update(content)
    return h.hexdigest()


def _view_digest(module: Module, options: Options) -> str:
    """Return a digest of ``outside_view(module)``, taken a part at a time.

    The view of a large module is large (a 10 MB module's is about 35 MiB of tuples): holding the
    old module's view while the new version was loaded made a rebuild's peak higher than a cold
    build's (issue 38, item 13). Each part is a tuple of strings, numbers and None, whose ``repr``
    says it whole; the parts follow one another, so equal digests are equal views."""
    from flatten.stages.reads import outside_parts

    h = hashlib.blake2b(digest_size=32)
    for part in outside_parts(module, options=options):
        h.update(repr(part).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def _old_view(key: str, display: str, options: Options) -> str | None:
    """Return the view digest of the module cache's entry ``key`` (the directory ``display`` as
    the previous build loaded it), or None when it is gone or its version cannot be compared."""
    from flatten.shell import build_cache

    old = build_cache.take(key, display)
    if old is None or old.load_diags or old.merge_diags:
        return None
    if any(b.origins for b in old.module.blocks_of("module")):
        return None  # an overridden call: its arguments depend on the files (graph._base_arguments)
    return _view_digest(old.module, options)


def _new_version(directory: Path, root: Path, options: Options) -> tuple[str, str] | None:
    """Load and merge ``directory`` (into the module cache); return its module key and view
    digest, or None when it has a diagnostic, an overridden call or is not cached."""
    from flatten.shell import build_cache
    from flatten.shell.memo import DiskMemo
    from flatten.stages.load import load_module

    # The entry is taken here and written as it is encoded (``write_entry``), as a prefetching
    # process writes its modules: queued to the background writer, it was encoded whole into
    # bytes beside the module, 27 MiB more than the parse's own peak for a 10 MB file, which
    # made this child the peak of a rebuild after one edit (issue 38, item 13).
    captured: list[tuple[str, build_cache.ModuleEntry]] = []
    loaded, memo_key = load_module(directory, root=root, options=options, memo=DiskMemo(captured=captured))
    # Nothing captured: the module cache had this version already (an edit undone).
    written = all(build_cache.write_entry(key, entry) is not None for key, entry in captured)
    del captured
    if memo_key is None or memo_key.module is not loaded.module or loaded.load_diags or loaded.merge_diags:
        return None
    if any(b.origins for b in loaded.module.blocks_of("module")):
        return None  # an overridden call (as in ``_old_view``)
    if not written:
        return None  # the parent could not take it from the cache: the full build runs
    return memo_key.key, _view_digest(loaded.module, options)


def _module(
    top: str,
    root: Path,
    options: Options,
    manifest: dict[str, object],
    keys: dict[str, str],
) -> tuple[str, bytes | None, str, str] | None:
    """Emit the module directory ``top`` again; update ``manifest``'s digests of its file.

    Return its output path, bytes (None: the previous build's, the files being the same),
    display path and new key, or None when the module's new version may change anything but its
    own file (or anything is unexpected)."""
    from flatten.shell import build_cache
    from flatten.shell.fanout import run_apart
    from flatten.shell.memo import DiskMemo, source_key
    from flatten.shell.prefetch import finish
    from flatten.stages.files import list_config_files
    from flatten.stages.layout import output_digest, relative_source, render, rewrite_calls
    from flatten.stages.load import display_path
    from flatten.stages.memo import MemoKey, ModuleSource

    modules = manifest.get("modules")
    if not isinstance(modules, list):
        return None
    mine = [
        m
        for m in modules
        if isinstance(m, dict)
        and isinstance(m.get("directory"), str)
        and os.path.normpath(os.path.join(root, m["directory"])) == top
    ]
    if not mine:
        return None
    first = mine[0]
    display, output, address = first["directory"], first.get("output"), first.get("module")
    if not isinstance(output, str) or not isinstance(address, str):
        return None
    # Every node written to this output is this directory under this name (a symlinked copy
    # of it under another name would be another module value).
    sharing = [m for m in modules if isinstance(m, dict) and m.get("output") == output]
    if any(m.get("directory") != display for m in sharing) or len(sharing) != len(mine):
        return None
    old_key = keys.get(display)
    directory = Path(top)
    if not isinstance(old_key, str) or display_path(directory, root) != display:
        return None
    here = "" if output == "." else output
    rel = f"{here}/main.tf.json" if here else "main.tf.json"
    # The key of the files as they are now, first: the previous build's key is the same module
    # (the files' names and bytes, the options, flatten's code), so its output and the manifest's
    # digests are the previous build's, and neither version is loaded (files touched, or saved
    # unchanged: issue 38, item 13, where loading both held three times a cold build's memory).
    new_key, _ = source_key(
        ModuleSource(directory, root, display, list_config_files(directory, dialect=options.dialect), options)
    )
    if new_key == old_key:
        return rel, None, display, old_key
    # What the old version shows outside, as a digest taken in a child process: holding the old
    # version and its view while the new one was loaded made a rebuild's peak three times a
    # module's, and even let go, Python kept their memory in pieces the new version's objects did
    # not fit (issue 38, item 13).
    # The new version is loaded in a child too, which writes it to the module cache and gives
    # back its key and view digest; this process then takes it from there, its bodies decoded
    # as they are read, as a build takes a module prefetch computed. Parsed and merged here, the
    # whole module was held beside its output bytes: a rebuild after one edit peaked about a
    # third above a cold build. Usually the child ``rebuild_early`` forked has both already,
    # found while this process imported the pipeline.
    early, found, old_view = _early_version(top, root, options, old_key)
    if old_view is None:
        old_view = run_apart(partial(_old_view, old_key, display, options), before_fork=finish)
    if old_view is None:
        return None
    if not early:
        found = run_apart(partial(_new_version, directory, root, options), before_fork=finish)
    finish()  # where it ran here: its module-cache entry written before it is taken
    if found is None or found[1] != old_view:
        return None
    taken = build_cache.take(found[0], display)
    if taken is None or taken.load_diags or taken.merge_diags:
        return None
    new = taken.module
    memo_key = MemoKey(new, found[0])
    if any(b.origins for b in new.blocks_of("module")):
        return None  # as above
    by_address = {m.get("module"): m for m in modules if isinstance(m, dict)}
    targets: dict[str, str] = {}
    for block in new.blocks_of("module"):
        if not block.labels:
            return None
        call = f"module.{block.labels[0]}"
        child = by_address.get(f"{address}.{call}" if address else call)
        if child is None or not isinstance(child.get("output"), str):
            return None
        targets[block.labels[0]] = relative_source(here, str(child["output"]))
    emitted = rewrite_calls(new, targets, {})
    content = DiskMemo().emitted(
        memo_key, new, emitted, options.provenance, lambda: render(emitted, provenance=options.provenance)
    )
    for m in sharing:
        m["digest"] = output_digest(content)
    owned = manifest.get("files")
    if isinstance(owned, dict):  # what flatten owns, with digests (stages/layout.py)
        if rel not in owned:
            return None
        owned[rel] = output_digest(content)
    return rel, content, display, memo_key.key


# -- the new versions parsed before the command line is ---------------------------------------
# The child that parses an edited module's new version is a rebuild's peak: forked from the
# rebuilding process, it had typer, flatten.cli and the rebuild's own state (33 MiB) under the
# parse's 67, above a cold build's peak (issue 38, item 13). For a command line whose previous
# build is named by its alias (replay.aliased), the flatten program forks it before typer is even
# imported (flatten/shell/process.py), as it forks a cold build's prefetch (prefetch.prefetch_early).


@dataclass(frozen=True, slots=True)
class _Early:
    """A child parsing the new versions of the modules edited since ``record`` (``rebuild_early``)."""

    record: Path
    root: Path
    options: Options
    started_ns: int  # before the child read anything: a build record's inputs must be older
    pid: int
    received: BinaryIO  # what it found, pickled: {module directory: _new_version's result}


_EARLY: list[_Early] = []
# What the child found, taken once, by module directory (``_early_version``): ``_new_version``'s
# result, and the previous version's key with its ``_old_view``.
_Found = tuple[tuple[str, str] | None, str, str | None]
_EARLY_FOUND: dict[str, _Found] = {}


def rebuild_early(record: Path, root: Path, out: Path, options: Options) -> None:
    """Fork a child that parses the new version of each module edited since the build ``record``
    (each in a child of its own, ``_new_version``), for the rebuild that comes once the command
    line is parsed (``rebuild`` takes what it found). Never raises: the rebuild parses as usual."""
    from flatten.shell import build_cache, forks
    from flatten.shell.cache_dir import cache_root

    if not hasattr(os, "fork") or threading.active_count() > 1 or not build_cache.enabled():
        return
    if cache_root() / "builds" != record.parent:
        return  # another cache's record
    started = time.time_ns()
    # What the child runs, imported here (the build imports the same modules anyway).
    import flatten.shell.memo
    import flatten.stages.load  # noqa: F401

    def send(sending: BinaryIO) -> None:
        pickle.dump(_new_versions(record, root, options), sending, protocol=pickle.HIGHEST_PROTOCOL)

    pid, received = forks.helper(os.getpid(), send)
    _EARLY.append(_Early(record, root, options, started, pid, received))


def _new_versions(record_path: Path, root: Path, options: Options) -> dict[str, _Found]:
    """Return ``_new_version`` of each module whose files changed since ``record_path``'s build (as
    ``_plan`` finds them), with the previous version's key and ``_old_view``, the two side by
    side, each in a child of its own (``fanout.run_all``); none when a file kept its bytes.

    The old view was taken by the rebuild itself, in a child forked after the command line was
    parsed: 0.02-0.03 s of flat 200's rebuild after one edit, on the one core the rebuild waited
    on, while this child had the other one from the start (docs/performance.md, "Ninth round")."""
    from flatten.shell.fanout import run_all
    from flatten.shell.memo import source_key
    from flatten.stages.files import list_config_files
    from flatten.stages.load import display_path
    from flatten.stages.memo import ModuleSource

    data = read_entry(record_path)
    record = replay._load(record_path)
    if data is None or record is None:
        return {}
    keys = _load_keys(record_path, data)
    changed = _changed_modules(record, root, options.dialect)
    if keys is None or not changed:
        return {}
    found: dict[str, _Found] = {}
    for top in changed:
        directory = Path(top)
        display = display_path(directory, root)
        listing = list_config_files(directory, dialect=options.dialect)
        old_key = keys.get(display)
        if (
            isinstance(old_key, str)
            and source_key(ModuleSource(directory, root, display, listing, options))[0] != old_key
        ):
            jobs = (
                partial(_new_version, directory, root, options),
                partial(_old_view, old_key, display, options),
            )
            new, old = run_all(2, lambda i, jobs=jobs: jobs[i](), workers=2)  # type: ignore[misc]
            assert new is None or isinstance(new, tuple)
            assert old is None or isinstance(old, str)
            found[top] = (new, old_key, old)
    return found


def _early_version(
    top: str, root: Path, options: Options, old_key: str
) -> tuple[bool, tuple[str, str] | None, str | None]:
    """Return whether the child ``rebuild_early`` forked parsed ``top`` for ``root`` and
    ``options``, what it found (``_new_version``'s result) and the view of the previous version
    when it took the one of ``old_key`` (``_old_view``; else None)."""
    while _EARLY:
        early = _EARLY.pop()
        if early.root == root and early.options == options:
            with early.received, contextlib.suppress(Exception):
                # A pickle, but from our own fork through a pipe only the two processes hold.
                _EARLY_FOUND.update(pickle.load(early.received))
            with contextlib.suppress(ChildProcessError):
                os.waitpid(early.pid, 0)
        else:
            _end(early)
    if top in _EARLY_FOUND:
        new, key, old = _EARLY_FOUND.pop(top)
        return True, new, old if key == old_key else None
    return False, None, None


def end_early() -> None:
    """End the child ``rebuild_early`` forked, when nothing took its work, and forget what it found."""
    while _EARLY:
        _end(_EARLY.pop())
    _EARLY_FOUND.clear()


def _end(early: _Early) -> None:
    # Killed: a cache entry is written as a temporary file renamed into place, so none is left
    # half written; its own child dies with it (fanout: PR_SET_PDEATHSIG).
    early.received.close()
    with contextlib.suppress(OSError):
        os.kill(early.pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(early.pid, 0)
