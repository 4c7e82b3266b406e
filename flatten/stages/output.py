"""The output tree written atomically: a temporary tree beside ``--out``, swapped into place.

Rule for the whole file: ``--out`` holds either the previous output or the whole new one at
every moment, whatever happens (an exception, Ctrl-C, SIGTERM, a full disk); a directory flatten
did not write is never replaced (docs/reliability.md, "Your files and the output directory").
It imports nothing of flatten but flatten/lang/workdir.py (a table of names), so a replayed build
(flatten/shell/replay.py) writes an output tree without loading the pipeline.

The root module's directory in ``--out`` is also Terraform's working directory: what Terraform
wrote there (``.terraform/``, the state, its lock, saved plans: flatten/lang/workdir.py) is
moved, one rename each, into the new tree before it is swapped in, so it keeps its inode (a
running Terraform holding the state file open and locked writes on into the new tree).

OUT belongs to three parties (docs/ci.md, "Who owns what in OUT"): flatten owns exactly the files
its manifest lists (``"files"``, written by flatten/stages/layout.py), Terraform owns its entries,
and everything else is the user's. The user's files are moved into the new tree like Terraform's
entries (never deleted, never changed); a file flatten listed before and no longer writes goes
with the old tree.

Crash safety: every entry moved into the new tree is, at every moment, in OUT or in one of
flatten's temporary trees beside it (``.OUT.flatten-*``; inside OUT, ``.flatten-new-*`` and
``.flatten-old-*`` for a mount point), and a tree holding such an entry has its manifest, which
tells the entry from flatten's own files (not listed). A build killed outright (SIGKILL, power
loss) at any step leaves those trees behind; the next build into OUT (holding the same lock)
first puts everything back (``_recover``): an old tree moved aside returns to OUT, and each entry
that is not flatten's returns to its place in OUT, before any temporary tree is removed. The swap
names its steps to a ``fault`` hook, through which tests kill the process at each one
(flatten/shell/faults.py).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import posixpath
import signal
import stat
import struct
import sys
import threading
from collections.abc import Callable, Collection, Generator, Iterator, Mapping
from pathlib import Path

from flatten import gate
from flatten.lang.workdir import PLAN_MEMBER, TERRAFORM_ENTRIES, ZIP_MAGIC

__all__ = [
    "MANIFEST_NAME",
    "Fault",
    "Interrupted",
    "OutputError",
    "StagedTree",
    "copied_mode",
    "loads_configuration",
    "manifest_root",
    "mark_top_directory",
    "owned_files",
    "owned_paths",
    "stage_tree",
    "terraform_entries",
    "user_entries",
    "write_tree",
]

#: Called with the name of each step of writing and swapping the tree (tests kill the process there).
Fault = Callable[[str], None]


def _no_fault(step: str) -> None:
    pass


MANIFEST_NAME = "flatten.manifest.json"


class OutputError(Exception):
    """The output directory cannot be written or replaced (a usage problem, not configuration)."""


# Temporary directories of the in-place swap (an --out that is a mount point), inside --out itself.
_INSIDE_PREFIXES = (".flatten-new-", ".flatten-old-")


def _is_previous_output(out: gate.Dir) -> bool:
    names = [e.name for e in out.list()]
    return out.kind(MANIFEST_NAME) == "file" or not any(not n.startswith(_INSIDE_PREFIXES) for n in names)


def manifest_root(data: bytes | None) -> str:
    """Return where a manifest (its bytes; None: no manifest) puts the root module, relative to the
    output and POSIX (``""``: the top; flatten/stages/layout.py writes ``"root"`` only when a local
    module lies outside the root). Anything but a plain relative path reads as the top."""
    import json

    if data is None:
        return ""
    try:
        place = json.loads(data).get("root", "")
    except (ValueError, AttributeError):
        return ""
    if not isinstance(place, str) or place.startswith("/") or ".." in place.split("/") or "\\" in place:
        return ""
    return place.strip("/")


def _read_manifest(tree: str) -> bytes | None:
    try:
        return gate.read_bytes(os.path.join(tree, MANIFEST_NAME), follow=False)
    except OSError:
        return None


def _manifest_in(tree: gate.Dir) -> bytes | None:
    try:
        return tree.read(MANIFEST_NAME)
    except OSError:
        return None


def owned_paths(data: bytes | None) -> frozenset[str] | None:
    """Return the files a manifest (its bytes) says flatten wrote: its ``"files"`` keys, relative
    POSIX paths. None when there is no manifest or it has no such list (an output written before
    flatten listed its files): then every file but Terraform's entries is taken for flatten's."""
    import json

    if data is None:
        return None
    try:
        files = json.loads(data).get("files")
    except (ValueError, AttributeError):
        return None
    if not isinstance(files, dict):
        return None
    return frozenset(
        rel
        for rel in files
        if isinstance(rel, str) and not rel.startswith("/") and ".." not in rel.split("/")
    )


def owned_files(tree: str | Path) -> frozenset[str] | None:
    """``owned_paths`` of the manifest in the output ``tree`` (None: no manifest, or no list)."""
    return owned_paths(_read_manifest(os.fspath(tree)))


# What Terraform loads from a directory, by name: configuration (overrides included) and variable
# files (internal/configs/parser_config_dir.go; internal/command/meta_vars.go: terraform.tfvars,
# *.auto.tfvars, and any *.tfvars named with -var-file). OpenTofu's .tofu files too.
_LOADED_SUFFIXES = (".tf", ".tf.json", ".tofu", ".tofu.json", ".tfvars", ".tfvars.json")


def loads_configuration(rel: str) -> bool:
    """Whether Terraform (or OpenTofu) reads a file of this name as configuration or variables."""
    return rel.endswith(_LOADED_SUFFIXES)


def _parents(paths: Collection[str]) -> set[str]:
    found: set[str] = set()
    for rel in paths:
        parent = posixpath.dirname(rel)
        while parent and parent not in found:
            found.add(parent)
            parent = posixpath.dirname(parent)
    return found


def user_entries(tree: str | Path, wanted: Collection[str] = ()) -> list[str]:
    """Return the entries of the output ``tree`` that are the user's, sorted: neither listed in its
    manifest (``owned_paths``) nor Terraform's (in the root module's directory), as relative POSIX
    paths. A directory holding nothing of flatten's and not written by the new tree (``wanted``:
    its files) is one entry; a symlink is the link. Empty when the manifest lists no files."""
    try:
        with gate.open_dir(tree) as directory:
            return _user_entries(directory, wanted)
    except OSError:
        return []


def _user_entries(tree: gate.Dir, wanted: Collection[str] = ()) -> list[str]:
    """``user_entries`` of an open tree: every directory below it reached without following a link."""
    manifest = _manifest_in(tree)
    owned = owned_paths(manifest)
    if owned is None:
        return []
    place = manifest_root(manifest)
    descend = _parents(owned) | _parents(wanted)
    found: list[str] = []

    def walk(here: gate.Dir, rel_dir: str) -> None:
        try:
            entries = here.list()
        except OSError:
            return
        skipped = set(_terraform_entries(here)) if rel_dir == place else set()
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if not rel_dir and (entry.name == MANIFEST_NAME or entry.name.startswith(_INSIDE_PREFIXES)):
                continue
            if entry.name in skipped or rel in owned:
                continue
            if entry.kind == "dir" and rel in descend:
                try:
                    with here.sub(entry.name) as below:
                        walk(below, rel)
                except OSError:
                    continue
            else:
                found.append(rel)

    walk(tree, "")
    return sorted(found)


# A saved plan larger than this is not told by its content (it would be read whole).
_PLAN_LIMIT = 1 << 30


def _is_plan(directory: gate.Dir, name: str) -> bool:
    """Return whether ``name`` in ``directory`` is a regular file Terraform reads as a saved plan:
    a zip archive with a ``tfplan`` member (internal/plans/planfile/reader.go)."""
    try:
        if directory.kind(name) != "file":
            return False
        with gate.open_read(name, follow=False, limit=_PLAN_LIMIT, dir_fd=directory.fd) as f:
            if f.read(len(ZIP_MAGIC)) != ZIP_MAGIC:
                return False
        data = directory.read(name, limit=_PLAN_LIMIT)
    except OSError:
        return False
    import io
    import zipfile  # only for a zip archive: most builds never meet one

    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return PLAN_MEMBER in archive.namelist()
    except (OSError, zipfile.BadZipFile):
        return False


def terraform_entries(directory: str | Path, written: Collection[str] = ()) -> list[str]:
    """Return the names, sorted, of the entries of ``directory`` (a root module's directory in an
    output) that Terraform wrote and a build does not: Terraform's names (flatten/lang/workdir.py)
    and saved plans, but none of ``written`` (the names the build puts there: a lock file copied
    from the source wins over Terraform's)."""
    try:
        with gate.open_dir(directory) as opened:
            return _terraform_entries(opened, written)
    except OSError:
        return []


def _terraform_entries(directory: gate.Dir, written: Collection[str] = ()) -> list[str]:
    try:
        names = [e.name for e in directory.list()]
    except OSError:
        return []
    found = []
    for name in names:
        if name in written or name == MANIFEST_NAME:
            continue
        if name in TERRAFORM_ENTRIES or _is_plan(directory, name):
            found.append(name)
    return sorted(found)


# Every tree below is named by its path relative to ``--out``'s parent (``base``, an open
# directory): ``out``, ``.out.flatten-x`` beside it, ``out/.flatten-new-x`` inside it. Each step
# reaches its directories from ``base`` one component at a time without following a symlink
# (flatten/gate.py), so a link planted in OUT or under a temporary name redirects nothing.


def _join(*parts: str) -> str:
    return "/".join(p for p in parts if p)


def _names(base: gate.Dir, rel: str = "") -> set[str]:
    """The names in the directory ``rel`` below ``base`` (none when it cannot be listed)."""
    try:
        with base.sub(rel) as directory:
            return {e.name for e in directory.list()}
    except OSError:
        return set()


def _kind(base: gate.Dir, rel: str) -> gate.Kind:
    parent, name = posixpath.split(rel)
    try:
        with base.sub(parent) as directory:
            return directory.kind(name)
    except OSError:
        return "missing"


def _adopt(
    base: gate.Dir, old: str, new: str, fault: Fault = _no_fault, *, only_missing: bool = False
) -> list[tuple[str, str]]:
    """Move what is not flatten's in the output tree ``old`` into the tree ``new`` (both below
    ``base``), one rename each: Terraform's entries from ``old``'s root module directory into
    ``new``'s (each tree's, from its manifest), and the user's entries (``user_entries``) to the
    same path in ``new``. Return the moves made, (from, to), for ``_give_back``; on failure every
    move is undone and the error raised. ``only_missing``: an entry ``new`` already has stays
    where it is (recovery). A symlink where a directory of ``new`` should be (``OUT/modules ->
    ~``) never receives an entry: the move is refused."""
    with base.sub(old) as old_tree, base.sub(new) as new_tree:
        old_manifest, new_manifest = _manifest_in(old_tree), _manifest_in(new_tree)
        old_place = manifest_root(old_manifest)
        new_place = manifest_root(new_manifest)
        # Not Terraform's after all: what the new tree writes there (a lock file copied from the
        # source wins), and what flatten wrote there itself (listed in ``old``'s manifest).
        written = set() if only_missing else _names(new_tree, new_place)
        prefix = old_place + "/" if old_place else ""
        for rel in owned_paths(old_manifest) or ():
            if rel.startswith(prefix) and "/" not in rel[len(prefix) :]:
                written.add(rel[len(prefix) :])
        try:
            with old_tree.sub(old_place) as old_root:
                theirs = _terraform_entries(old_root, written)
        except OSError:
            theirs = []
        planned = [(_join(old, old_place, name), _join(new, new_place, name)) for name in theirs]
        new_owned = owned_paths(new_manifest) or frozenset()
        planned += [(_join(old, rel), _join(new, rel)) for rel in _user_entries(old_tree, new_owned)]
    moves: list[tuple[str, str]] = []
    try:
        for source, target in planned:
            if only_missing and _kind(base, target) != "missing":
                continue
            gate.move_below(base, source, target, make_parents=True)
            moves.append((source, target))
            fault(f"adopt:{len(moves)}")
    except BaseException:
        _give_back(base, moves)
        raise
    return moves


def _give_back(base: gate.Dir, moves: list[tuple[str, str]]) -> None:
    """Undo ``_adopt``'s moves (the swap that was to follow failed)."""
    for source, target in reversed(moves):
        with contextlib.suppress(OSError):
            gate.move_below(base, target, source)


def _conflicts(out: gate.Dir, paths: Collection[str]) -> list[str]:
    """Return the user's entries in ``out`` where the new tree (``paths``: its files) writes a file
    or needs a directory: flatten never replaces one, so the build stops and names them."""
    wanted = set(paths)
    needed = _parents(wanted)
    return [rel for rel in _user_entries(out, wanted) if rel in wanted or rel in needed]


class Interrupted(BaseException):
    """SIGTERM arrived while the output was being written (raised so cleanup runs)."""


@contextlib.contextmanager
def _terminate_as_exception() -> Iterator[None]:
    # SIGTERM normally kills the process without unwinding; turn it into an exception for the
    # duration of the write so the temporary tree is removed and the old output stays in place.
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        raise Interrupted(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def _locked(directory: gate.Dir) -> Iterator[None]:
    """Hold an exclusive lock on ``directory`` so two builds into the same place take turns."""
    fcntl.flock(directory.fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(directory.fd, fcntl.LOCK_UN)


def _exchange(base: gate.Dir, a: str, b: str) -> bool:
    """Swap two directories of ``base`` atomically (Linux renameat2); return False where unsupported."""
    return gate.exchange(base, a, b)


def _swap_by_renames(base: gate.Dir, tmp: str, out: str, fault: Fault = _no_fault) -> str | None:
    """Move ``tmp`` to ``out`` with two renames, restoring the old ``out`` if interrupted between;
    return where the old ``out`` now is (None when there was none), for the caller to remove."""
    old = tmp + "-old" if base.kind(out) != "missing" else None
    if old is not None:
        gate.move(base, out, base, old)
        fault("aside")
    try:
        gate.move(base, tmp, base, out)
    except BaseException:
        if old is not None and base.kind(out) == "missing":
            gate.move(base, old, base, out)
        raise
    return old


# ext4's Orlov allocator puts a directory's subdirectories in its own block group; on a directory
# marked FS_TOPDIR_FL (`chattr +T`) it spreads them over groups with free inodes instead. Where
# the file system has no journal, taking an inode in a group first skips every inode freed there
# in the last minute, reading each one's table entry: after a previous output or cache was removed
# beside it, each file and directory a build created cost about 1 ms, 0.3 s for the benchmark's
# 200-module tree (docs/performance.md). A build's tree and flatten's cache are hierarchies of
# their own, and so is each module's directory in the tree: every directory the writer makes is
# marked, and its files and subdirectories land in groups nothing was freed from (0.25 s to
# 0.035 s for that tree). Linux only; wherever the flag is unknown nothing changes.
_FS_IOC_GETFLAGS = 0x80086601
_FS_IOC_SETFLAGS = 0x40086602
_FS_TOPDIR_FL = 0x00020000


def mark_top_directory(path: str | Path | gate.Dir) -> None:
    """Mark the directory ``path`` (or an open one) as the top of a directory hierarchy for the
    file system's allocator (``chattr +T``), best effort: any failure leaves it as it is."""
    if not sys.platform.startswith("linux"):
        return
    if isinstance(path, gate.Dir):
        _mark_top(path.fd)
        return
    head, tail = os.path.split(os.path.abspath(path))
    try:
        # The directory itself is not followed if it is a link (what it leads to is not ours).
        with gate.open_dir(head) as parent, parent.sub(tail) as opened:
            _mark_top(opened.fd)
    except OSError:
        return


def _mark_top(fd: int) -> None:
    try:
        (flags,) = struct.unpack("i", fcntl.ioctl(fd, _FS_IOC_GETFLAGS, bytes(4)))
        if not flags & _FS_TOPDIR_FL:
            fcntl.ioctl(fd, _FS_IOC_SETFLAGS, struct.pack("i", flags | _FS_TOPDIR_FL))
    except OSError:
        pass


def copied_mode(mode: int) -> int:
    """Return the permissions a copied file gets from its source's ``st_mode``.

    Scripts keep their executable bits and private files stay private, but setuid, setgid and
    sticky bits and write access for group and others are dropped (an archive saying 4777 gives
    0755), and the owner can always read and write the copy.

    >>> oct(copied_mode(0o104777)), oct(copied_mode(0o100600)), oct(copied_mode(0o100664))
    ('0o755', '0o600', '0o644')
    """
    return (stat.S_IMODE(mode) & 0o755) | 0o600


def _link(source: gate.Dir, src: str, digest: str, target: gate.Dir, name: str, shown: Path) -> None:
    """Make ``name`` in ``target`` the file ``src`` in ``source`` is (a hard link), else a copy
    with its permissions; then check that its content has ``digest`` (BLAKE2b, 16 bytes, hex),
    else raise ``OutputError``. A symlink or anything but a regular file is not taken."""
    try:
        gate.link_file(source, src, target, name)
    except gate.Refused as exc:
        if exc.reason in ("symlink", "special"):
            raise OutputError(f"{shown} is not a regular file") from None
        raise
    # Checked through the new name: what is checked is what the new tree holds, even if the
    # previous output was replaced meanwhile.
    with gate.open_read(name, follow=False, limit=1 << 62, dir_fd=target.fd) as f:
        if hashlib.file_digest(f, lambda: hashlib.blake2b(digest_size=16)).hexdigest() != digest:
            raise OutputError(f"{shown} changed while it was taken into the new output")


class _Places:
    """The open directories of a tree being written (or read from), by relative path: those on
    the way to the last one asked for stay open (the files come sorted, so a directory's files
    and subdirectories are written one after the other), the others are closed."""

    def __init__(self, top: gate.Dir, *, create: bool) -> None:
        self._top = top
        self._create = create
        self._open: dict[str, gate.Dir] = {}
        self._made: set[str] = set()  # a new tree: every directory in it is one this writer made

    def at(self, rel_dir: str) -> gate.Dir:
        if not rel_dir:
            return self._top
        found = self._open.get(rel_dir)
        if found is not None:
            return found
        for other in [k for k in self._open if not rel_dir.startswith(k + "/")]:
            self._open.pop(other).close()
        parent_rel, name = posixpath.split(rel_dir)
        parent = self.at(parent_rel)
        if self._create and rel_dir not in self._made:
            parent.mkdir(name, mode=0o777, exist_ok=True)
            self._made.add(rel_dir)
            opened = parent.sub(name)
            mark_top_directory(opened)  # its subdirectories and files elsewhere: see above
        else:
            opened = parent.sub(name)
        self._open[rel_dir] = opened
        return opened

    def close(self) -> None:
        for each in self._open.values():
            each.close()
        self._open.clear()


def _write_files(
    base: gate.Dir,
    tree: gate.Dir,
    files: Mapping[str, bytes],
    copies: Mapping[str, Path],
    modes: Mapping[str, int],
    links: Mapping[str, tuple[Path, str]],
) -> None:
    # Every file made by name in its open directory (openat): no path is resolved again, and a
    # symlink can be neither written through nor taken in (flatten/gate.py). Copies are read
    # under the gate's copy budget (a FIFO or device swapped in meanwhile is refused, never read).
    places = _Places(tree, create=True)
    try:
        if links:
            _link_files(base, places, links)
        for rel, source in sorted(copies.items()):
            parent, name = posixpath.split(rel)
            gate.copy_file(source, places.at(parent), name, mode=copied_mode)
        # The manifest last: a tree holding one is whole, so what is not listed in it was moved in
        # (recovery after a crash relies on it: _recover).
        for rel, data in sorted(files.items(), key=lambda item: item[0] == MANIFEST_NAME):
            parent, name = posixpath.split(rel)
            gate.write_file(places.at(parent), name, data, mode=modes.get(rel))
    finally:
        places.close()
    gate.set_mode(tree, 0o755)


def _link_files(base: gate.Dir, places: _Places, links: Mapping[str, tuple[Path, str]]) -> None:
    """Take ``links`` (files of the previous output) into the tree: each source reached from
    ``base`` (``--out``'s parent) without following a link, else from its own directory."""
    sources = _Places(base, create=False)
    try:
        for rel, (source, digest) in sorted(links.items()):
            parent, name = posixpath.split(rel)
            below = os.path.relpath(os.fspath(source.parent), base.path)
            if below == ".." or below.startswith("../") or os.path.isabs(below):
                with gate.open_dir(source.parent) as held:
                    _link(held, source.name, digest, places.at(parent), name, source)
            else:
                _link(
                    sources.at("" if below == "." else below),
                    source.name,
                    digest,
                    places.at(parent),
                    name,
                    source,
                )
    finally:
        sources.close()


def _swap_contents(out: gate.Dir, new: str, old: str, fault: Fault) -> None:
    """Make the entries of ``new`` the entries of ``out``, moving ``out``'s own entries into ``old``
    (both directories inside ``out``).

    For an ``out`` that cannot itself be renamed (a mount point). Each move is one rename on the
    same filesystem; the manifest leaves last and arrives first, so ``out`` holds a manifest (or
    only these temporary directories) at every moment. On any exception every move is undone.
    """
    with out.sub(new) as new_dir, out.sub(old) as old_dir:
        ours = {new, old}
        leaving = sorted(e.name for e in out.list() if e.name not in ours)
        leaving.sort(key=lambda n: n == MANIFEST_NAME)
        arriving = sorted(e.name for e in new_dir.list())
        arriving.sort(key=lambda n: n != MANIFEST_NAME)
        moved_out: list[str] = []
        moved_in: list[str] = []
        try:
            for name in leaving:
                gate.move(out, name, old_dir, name)
                moved_out.append(name)
                fault(f"leave:{len(moved_out)}")
            for name in arriving:
                gate.move(new_dir, name, out, name)
                moved_in.append(name)
                fault(f"arrive:{len(moved_in)}")
        except BaseException:
            for name in reversed(moved_in):
                gate.move(out, name, new_dir, name)
            for name in reversed(moved_out):
                gate.move(old_dir, name, out, name)
            raise


def _replace_contents(
    base: gate.Dir,
    out: str,
    files: Mapping[str, bytes],
    copies: Mapping[str, Path],
    modes: Mapping[str, int],
    links: Mapping[str, tuple[Path, str]],
    mask: set[int] | None,
    fault: Fault,
) -> None:
    """Write the tree inside ``out`` and swap ``out``'s contents for it (``out`` stays in place)."""
    new: str | None = None
    old: str | None = None
    try:
        with base.sub(out) as out_dir:
            new = gate.make_temp_dir(out_dir, _INSIDE_PREFIXES[0])
            with out_dir.sub(new) as tree:
                mark_top_directory(tree)
                with _signals_allowed(mask):
                    _write_files(base, tree, files, copies, modes, links)
            fault("written")
            # Made after the new tree is whole: its presence tells _recover the swap may have begun.
            old = gate.make_temp_dir(out_dir, _INSIDE_PREFIXES[1])
            fault("aside")
            moves = _adopt(base, out, _join(out, new), fault)
            try:
                _swap_contents(out_dir, new, old, fault)
            except BaseException:
                _give_back(base, moves)
                raise
            fault("swapped")
            with contextlib.suppress(OSError):
                _adopt(base, _join(out, old), out, only_missing=True)  # what Terraform wrote meanwhile
            fault("readopted")
    finally:
        for tmp in (new, old):
            if tmp is not None:
                _remove(base, _join(out, tmp))


def _recover(base: gate.Dir, out: str) -> None:
    """Put back what a build killed outright (SIGKILL) left in flatten's temporary trees, then
    remove them: we hold the lock, so none is in use.

    Beside ``out`` (``.OUT.flatten-*``): a tree ``-old`` is the previous output moved aside by
    ``_swap_by_renames``, renamed back when ``out`` is missing; from every tree, each entry that is
    not flatten's (Terraform's entries, the user's files: not listed in that tree's manifest; a
    tree without its manifest was not whole, so nothing was moved into it) goes back to its place
    in ``out`` unless ``out`` has one. Inside ``out`` (a mount point: ``_replace_contents``), the
    interrupted swap is finished when the new tree's manifest had already arrived in ``out`` and
    undone otherwise, and the same entries go back. A symlink under one of these names is
    removed (the link), never followed.
    """
    prefix = f".{out}.flatten-"
    stale = sorted(
        (name for name in _names(base) if name.startswith(prefix)), key=lambda n: not n.endswith("-old")
    )
    for name in stale:
        if name.endswith("-old") and base.kind(out) == "missing" and base.kind(name) == "dir":
            gate.move(base, name, base, out)  # killed between _swap_by_renames' two renames
            continue
        if base.kind(out) == "dir" and base.kind(name) == "dir":
            with contextlib.suppress(OSError):
                _adopt(base, name, out, only_missing=True)
        _remove(base, name)
    if base.kind(out) != "dir":
        return
    with base.sub(out) as out_dir:
        _recover_inside(base, out, out_dir)


def _recover_inside(base: gate.Dir, out: str, out_dir: gate.Dir) -> None:
    """``_recover``'s part inside ``out`` (the in-place swap's trees)."""
    inside = _names(out_dir)
    ours = [n for n in inside if n.startswith(_INSIDE_PREFIXES)]
    for name in ours:  # a link planted under one of these names is removed, never followed
        if out_dir.kind(name) != "dir":
            _remove(base, _join(out, name))
    news = sorted(n for n in ours if n.startswith(_INSIDE_PREFIXES[0]) and out_dir.kind(n) == "dir")
    olds = sorted(n for n in ours if n.startswith(_INSIDE_PREFIXES[1]) and out_dir.kind(n) == "dir")
    for new_name in news:
        new_whole = MANIFEST_NAME in _names(out_dir, new_name)
        forward = (
            not new_whole
            and bool(olds)
            and (MANIFEST_NAME in inside or any(MANIFEST_NAME in _names(out_dir, o) for o in olds))
        )
        if forward:  # the new manifest arrived: the rest of the new tree follows it
            with out_dir.sub(new_name) as new:
                for entry in sorted(_names(new)):
                    if out_dir.kind(entry) == "missing":
                        gate.move(new, entry, out_dir, entry)
        else:  # the swap had not begun arriving: the old entries return, then what was moved in
            for old_name in olds:
                with out_dir.sub(old_name) as old:
                    for entry in sorted(_names(old)):
                        if out_dir.kind(entry) == "missing":
                            gate.move(old, entry, out_dir, entry)
            if new_whole:
                with contextlib.suppress(OSError):
                    _adopt(base, _join(out, new_name), out, only_missing=True)
    for old_name in olds:
        with contextlib.suppress(OSError):
            _adopt(base, _join(out, old_name), out, only_missing=True)
    for name in (*news, *olds):
        _remove(base, _join(out, name))


# A directory that cannot be renamed: a mount point (EBUSY), or one on another filesystem than
# the temporary tree (EXDEV). Its contents can still be replaced.
_UNRENAMABLE = frozenset({errno.EBUSY, errno.EXDEV})


def write_tree(
    out: Path,
    files: Mapping[str, bytes],
    copies: Mapping[str, Path] | None = None,
    *,
    modes: Mapping[str, int] | None = None,
    links: Mapping[str, tuple[Path, str]] | None = None,
    fault: Fault | None = None,
) -> None:
    """Write ``files`` (relative path -> bytes) and ``copies`` (relative path -> source file) as
    the directory ``out``, replacing it atomically. ``modes`` gives some of ``files`` their
    permissions (a replayed build writes copied files with the modes they were written with).
    ``links`` (relative path -> (file, digest)) are files of the previous output taken as they
    are: hard links, so the new tree shares them instead of writing them again (an incremental
    rebuild, flatten/shell/incremental.py); a copy with the same permissions where the
    filesystem has no hard links. Each one's content must have its digest (BLAKE2b of 16 bytes,
    in hex, as the build record keeps them), checked once linked, else ``OutputError`` is
    raised and ``out`` is left as it was. (Once swapped in, the previous tree is removed, and
    each such file stays only in the new one.)

    The tree is written into a temporary directory beside ``out`` and swapped into place (an
    atomic exchange where the kernel supports it), so a failed or interrupted build (an
    exception, Ctrl-C or SIGTERM) leaves the previous output untouched and no temporary directory
    behind; a build killed outright leaves them for the next build to put back (``_recover``).
    Builds into the same ``out`` take turns (a lock on its parent directory). An existing
    ``out`` is replaced only if it is empty or holds a previous flatten output (it has the
    manifest); anything else raises ``OutputError``.

    What is not flatten's in the previous output is not replaced: Terraform's entries of its root
    module directory (``terraform_entries``: ``.terraform/``, state, lock files, saved plans) are
    renamed into the new tree's root module directory before the swap (so each keeps its inode),
    unless the new tree has an entry of that name (a lock file copied from the source wins); the
    user's files (``user_entries``: not listed in the previous manifest) are renamed to the same
    place in the new tree. A user's file where the new tree writes one raises ``OutputError``.

    An ``out`` that cannot be renamed (a mount point, such as a container volume) keeps its
    place: the tree is written into a temporary directory inside it, and its entries are then
    swapped one rename at a time, undone on any failure (docs/reliability.md).

    Every file is read, written, moved and removed through flatten/gate.py, relative to ``out``'s
    parent (the user's choice, followed if a link, as ``out`` itself is) and never through a
    symlink below it; a copy over the gate's copy budget, a FIFO or a device is refused.

    ``fault`` is called with the name of each step (tests end the process there).
    """
    with stage_tree(out, files, copies, modes=modes, links=links, fault=fault) as staged:
        staged.commit()


class StagedTree:
    """A new tree written into its temporary directory beside ``out`` (``stage_tree``), every
    check of ``write_tree`` made and the lock on ``out``'s parent held (no other build writes
    there meanwhile): ``commit`` swaps it in as ``write_tree`` does; ``discard`` (also leaving a
    ``with`` block without a commit) removes it and leaves ``out`` as it was.

    Meanwhile Ctrl-C and SIGTERM are delivered (SIGTERM as ``Interrupted``): the caller's cleanup
    discards the tree."""

    __slots__ = ("_steps",)

    def __init__(self, steps: Generator[None, None, None]) -> None:
        self._steps = steps

    def commit(self) -> None:
        """Swap the tree in (``write_tree``'s steps after the tree is written)."""
        for _ in self._steps:  # the steps from the swap on yield nothing
            raise AssertionError("a staged tree is committed once")

    def discard(self) -> None:
        """Remove the tree unless it was committed (the lock is released either way)."""
        self._steps.close()

    def __enter__(self) -> StagedTree:
        return self

    def __exit__(self, *exc: object) -> None:
        self.discard()


def stage_tree(
    out: Path,
    files: Mapping[str, bytes],
    copies: Mapping[str, Path] | None = None,
    *,
    modes: Mapping[str, int] | None = None,
    links: Mapping[str, tuple[Path, str]] | None = None,
    fault: Fault | None = None,
) -> StagedTree:
    """``write_tree`` up to the swap, for a caller with other work before it knows whether the
    tree is to be swapped in (the command line waits for the build's graph checks:
    flatten/shell/staging.py). Raises what ``write_tree`` raises before its swap (``OutputError``
    for an ``out`` flatten did not write, ``OSError``); then nothing is left behind."""
    steps = _write_steps(out, files, copies or {}, modes or {}, links or {}, fault or _no_fault)
    next(steps)  # an exception here has run the steps' cleanup already
    return StagedTree(steps)


def _write_steps(
    out: Path,
    files: Mapping[str, bytes],
    copies: Mapping[str, Path],
    modes: Mapping[str, int],
    links: Mapping[str, tuple[Path, str]],
    fault: Fault,
) -> Generator[None, None, None]:
    """``write_tree``'s steps, paused once where the new tree is written and the swap is next
    (for a tree that must be written in place, before it is written)."""
    out = out.absolute()
    if gate.kind_of(out) == "link":  # the user's --out: a link to where the output lives
        out = Path(os.path.realpath(out))
    name = out.name
    deferred: set[int] | None = None
    # --out's parent is the user's choice (followed, made when missing); below it, nothing is.
    with gate.open_dir(out.parent, create=True, mode=0o777) as base:
        try:
            with _terminate_as_exception(), _locked(base):
                # What a build killed outright left behind: put back, then removed.
                _recover(base, name)
                kind = base.kind(name)
                if kind != "missing":
                    if kind != "dir":
                        raise OutputError(f"{out} exists and is not a directory")
                    with base.sub(name) as previous_out:
                        if not _is_previous_output(previous_out):
                            raise OutputError(
                                f"{out} is not empty and holds no {MANIFEST_NAME}; refusing to replace a "
                                "directory flatten did not write. Choose an empty or new --out directory."
                            )
                        clash = _conflicts(previous_out, [*files, *copies, *links])
                    if clash:
                        shown = ", ".join(clash[:5]) + (
                            f" and {len(clash) - 5} more" if len(clash) > 5 else ""
                        )
                        raise OutputError(
                            f"{out} holds {shown}, which flatten did not write (its {MANIFEST_NAME} does not "
                            "list it), where this build writes its own files; flatten never replaces a file "
                            "of yours. Move or rename it, then build again."
                        )
                # From here Ctrl-C and SIGTERM take effect only while files are written or the steps
                # are paused (``stage_tree``: the caller's cleanup discards the tree): a signal
                # handled between creating the temporary directory and the start of its cleanup, or
                # during the swap, would leave that directory behind. One that arrives meanwhile is
                # handled after the tree is complete (the new output is then in place).
                deferred = _signal_mask()  # first: whatever happens next, the finally restores it
                _block_signals(deferred)
                in_place = base.kind(name) == "dir" and os.path.ismount(out)
                tmp: str | None = None
                previous: str | None = None
                paused = False
                try:
                    if not in_place:
                        tmp = gate.make_temp_dir(base, f".{name}.flatten-")
                        with base.sub(tmp) as tree:
                            mark_top_directory(tree)
                            with _signals_allowed(deferred):
                                _write_files(base, tree, files, copies, modes, links)
                        fault("written")
                        with _signals_allowed(deferred):
                            paused = True
                            yield
                        # Terraform's entries and the user's go over to the new tree first
                        # (renames: same inodes).
                        moves = _adopt(base, name, tmp, fault) if base.kind(name) == "dir" else []
                        try:
                            # After an exchange tmp holds the old output.
                            exchanged = base.kind(name) != "missing" and _exchange(base, tmp, name)
                            previous = tmp if exchanged else _swap_by_renames(base, tmp, name, fault)
                        except OSError as exc:
                            _give_back(base, moves)
                            if exc.errno not in _UNRENAMABLE or base.kind(name) != "dir":
                                raise
                            in_place = True  # _swap_by_renames put the old output back
                        except BaseException:
                            _give_back(base, moves)
                            raise
                        if previous is not None:
                            fault("swapped")
                            # What Terraform wrote meanwhile (between the moves and the swap).
                            with contextlib.suppress(OSError):
                                _adopt(base, previous, name, only_missing=True)
                            fault("readopted")
                finally:
                    if tmp is not None:
                        _remove(base, tmp)
                    if previous is not None and previous != tmp:
                        _remove(base, previous)
                if in_place:
                    if not paused:  # nothing written before the swap: ``_replace_contents`` does both
                        with _signals_allowed(deferred):
                            yield
                    steps = fault  # the in-place swap's steps named apart from the tried rename's

                    def inside(step: str) -> None:
                        steps(f"in-place:{step}")

                    _replace_contents(base, name, files, copies, modes, links, deferred, inside)
        finally:
            if deferred is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, deferred)


_DEFERRED = frozenset({signal.SIGINT, signal.SIGTERM})


def _signal_mask() -> set[int] | None:
    """Return this thread's blocked signals (None where signals cannot be masked)."""
    if not hasattr(signal, "pthread_sigmask"):
        return None
    return set(signal.pthread_sigmask(signal.SIG_BLOCK, ()))


def _block_signals(mask: set[int] | None) -> None:
    if mask is not None:
        signal.pthread_sigmask(signal.SIG_BLOCK, _DEFERRED)


@contextlib.contextmanager
def _signals_allowed(mask: set[int] | None) -> Iterator[None]:
    """Deliver Ctrl-C and SIGTERM again (as in ``mask``) for the duration of the block."""
    if mask is None:
        yield
        return
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_BLOCK, _DEFERRED)


def _remove(base: gate.Dir, tmp: str) -> None:
    """Remove ``tmp`` (one of flatten's temporary trees below ``base``, named so in a directory we
    hold the lock of) whole through the gate (by descriptors, never following a link), even when
    an interrupt is raised meanwhile; then raise the first one.

    (Signals are deferred while it runs; this also covers a handler that was already due.)
    """
    parent_rel, name = posixpath.split(tmp)
    pending: BaseException | None = None
    while True:
        try:
            with contextlib.suppress(OSError), base.sub(parent_rel) as parent:
                gate.remove_owned(parent, name)
            break
        except (Interrupted, KeyboardInterrupt) as exc:
            pending = pending or exc
    if pending is not None:
        raise pending
