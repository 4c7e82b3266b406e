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
import shutil
import signal
import stat
import struct
import sys
import tempfile
import threading
from collections.abc import Callable, Collection, Iterator, Mapping
from pathlib import Path

from flatten import gate
from flatten.lang.workdir import PLAN_MEMBER, TERRAFORM_ENTRIES, ZIP_MAGIC

__all__ = [
    "MANIFEST_NAME",
    "Fault",
    "Interrupted",
    "OutputError",
    "copied_mode",
    "loads_configuration",
    "manifest_root",
    "mark_top_directory",
    "owned_files",
    "owned_paths",
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


def _is_previous_output(path: Path) -> bool:
    return (path / MANIFEST_NAME).is_file() or not any(
        not p.name.startswith(_INSIDE_PREFIXES) for p in path.iterdir()
    )


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
    base = os.fspath(tree)
    manifest = _read_manifest(base)
    owned = owned_paths(manifest)
    if owned is None:
        return []
    place = manifest_root(manifest)
    descend = _parents(owned) | _parents(wanted)
    found: list[str] = []

    def walk(rel_dir: str) -> None:
        try:
            entries = gate.list_dir(os.path.join(base, rel_dir) if rel_dir else base)
        except OSError:
            return
        skipped = set(terraform_entries(os.path.join(base, rel_dir))) if rel_dir == place else set()
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if not rel_dir and (entry.name == MANIFEST_NAME or entry.name.startswith(_INSIDE_PREFIXES)):
                continue
            if entry.name in skipped or rel in owned:
                continue
            if entry.kind == "dir" and rel in descend:
                walk(rel)
            else:
                found.append(rel)

    walk("")
    return sorted(found)


# A saved plan larger than this is not told by its content (it would be read whole).
_PLAN_LIMIT = 1 << 30


def _is_plan(path: str) -> bool:
    """Return whether ``path`` is a regular file Terraform reads as a saved plan: a zip archive
    with a ``tfplan`` member (internal/plans/planfile/reader.go)."""
    try:
        if gate.kind_of(path) != "file":
            return False
        with gate.open_read(path, follow=False, limit=_PLAN_LIMIT) as f:
            if f.read(len(ZIP_MAGIC)) != ZIP_MAGIC:
                return False
        data = gate.read_bytes(path, follow=False, limit=_PLAN_LIMIT)
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
        names = [e.name for e in gate.list_dir(directory)]
    except OSError:
        return []
    found = []
    for name in names:
        if name in written or name == MANIFEST_NAME:
            continue
        if name in TERRAFORM_ENTRIES or _is_plan(os.path.join(directory, name)):
            found.append(name)
    return sorted(found)


def _move(source: str, target: str, base: str) -> None:
    """Rename ``source`` to ``target`` (its parent directories below the tree ``base`` made),
    refusing to replace anything or to pass through a symlink below ``base``: a link planted
    where a directory of the tree was (``OUT/modules -> ~``) must not receive the entry."""
    rel = os.path.relpath(os.path.dirname(target), base)
    here = base
    for part in [] if rel == "." else rel.split(os.sep):
        here = os.path.join(here, part)
        kind = gate.kind_of(here)
        if kind == "missing":
            os.mkdir(here)
        elif kind != "dir":
            raise FileExistsError(errno.EEXIST, "not a directory of the output (a link or a file)", here)
    if os.path.lexists(target):
        raise FileExistsError(errno.EEXIST, "File exists", target)
    os.rename(source, target)


def _adopt(
    old: str, new: str, fault: Fault = _no_fault, *, only_missing: bool = False
) -> list[tuple[str, str]]:
    """Move what is not flatten's in the output tree ``old`` into the tree ``new``, one rename
    each: Terraform's entries from ``old``'s root module directory into ``new``'s (each tree's, from
    its manifest), and the user's entries (``user_entries``) to the same path in ``new``. Return
    the moves made, (from, to), for ``_give_back``; on failure every move is undone and the error
    raised. ``only_missing``: an entry ``new`` already has stays where it is (recovery)."""
    old_manifest, new_manifest = _read_manifest(old), _read_manifest(new)
    old_place = manifest_root(old_manifest)
    old_root = os.path.join(old, old_place)
    new_root = os.path.join(new, manifest_root(new_manifest))
    # Not Terraform's after all: what the new tree writes there (a lock file copied from the
    # source wins), and what flatten wrote there itself (listed in ``old``'s manifest).
    written = set() if only_missing else _entries(new_root)
    prefix = old_place + "/" if old_place else ""
    for rel in owned_paths(old_manifest) or ():
        if rel.startswith(prefix) and "/" not in rel[len(prefix) :]:
            written.add(rel[len(prefix) :])
    planned = [
        (os.path.join(old_root, name), os.path.join(new_root, name))
        for name in terraform_entries(old_root, written)
    ]
    new_owned = owned_paths(new_manifest) or frozenset()
    planned += [
        (os.path.join(old, *rel.split("/")), os.path.join(new, *rel.split("/")))
        for rel in user_entries(old, new_owned)
    ]
    moves: list[tuple[str, str]] = []
    try:
        for source, target in planned:
            if only_missing and os.path.lexists(target):
                continue
            _move(source, target, new)
            moves.append((source, target))
            fault(f"adopt:{len(moves)}")
    except BaseException:
        _give_back(moves)
        raise
    return moves


def _give_back(moves: list[tuple[str, str]]) -> None:
    """Undo ``_adopt``'s moves (the swap that was to follow failed)."""
    for source, target in reversed(moves):
        with contextlib.suppress(OSError):
            os.rename(target, source)


def _conflicts(out: Path, paths: Collection[str]) -> list[str]:
    """Return the user's entries in ``out`` where the new tree (``paths``: its files) writes a file
    or needs a directory: flatten never replaces one, so the build stops and names them."""
    wanted = set(paths)
    needed = _parents(wanted)
    return [rel for rel in user_entries(out, wanted) if rel in wanted or rel in needed]


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
def _locked(directory: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``directory`` so two builds into the same place take turns."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap two directories atomically (Linux renameat2); return False where unsupported."""
    # Imported here: ctypes costs every build's start-up 7 ms, and only a rebuild into an
    # existing --out swaps (docs/performance.md, "Start-up").
    import ctypes

    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if renameat2 is None:
        return False
    result = renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    return bool(result == 0)


def _swap_by_renames(tmp: Path, out: Path, fault: Fault = _no_fault) -> Path | None:
    """Move ``tmp`` to ``out`` with two renames, restoring the old ``out`` if interrupted between;
    return where the old ``out`` now is (None when there was none), for the caller to remove."""
    old = tmp.with_name(tmp.name + "-old") if out.exists() else None
    if old is not None:
        os.rename(out, old)
        fault("aside")
    try:
        os.rename(tmp, out)
    except BaseException:
        if old is not None and not out.exists():
            os.rename(old, out)
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


def mark_top_directory(path: str | Path) -> None:
    """Mark the directory ``path`` as the top of a directory hierarchy for the file system's
    allocator (``chattr +T``), best effort: any failure leaves it as it is."""
    if not sys.platform.startswith("linux"):
        return
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return
    try:
        (flags,) = struct.unpack("i", fcntl.ioctl(fd, _FS_IOC_GETFLAGS, bytes(4)))
        if not flags & _FS_TOPDIR_FL:
            fcntl.ioctl(fd, _FS_IOC_SETFLAGS, struct.pack("i", flags | _FS_TOPDIR_FL))
    except OSError:
        pass
    finally:
        os.close(fd)


def copied_mode(mode: int) -> int:
    """Return the permissions a copied file gets from its source's ``st_mode``.

    Scripts keep their executable bits and private files stay private, but setuid, setgid and
    sticky bits and write access for group and others are dropped (an archive saying 4777 gives
    0755), and the owner can always read and write the copy.

    >>> oct(copied_mode(0o104777)), oct(copied_mode(0o100600)), oct(copied_mode(0o100664))
    ('0o755', '0o600', '0o644')
    """
    return (stat.S_IMODE(mode) & 0o755) | 0o600


def _link(source: Path, digest: str, target: Path) -> None:
    """Make ``target`` the file ``source`` is (a hard link), else a copy with its permissions; then
    check that its content has ``digest`` (BLAKE2b, 16 bytes, hex), else raise ``OutputError``."""
    if not stat.S_ISREG(os.lstat(source).st_mode):
        raise OutputError(f"{source} is not a regular file")
    try:
        os.link(source, target, follow_symlinks=False)
    except OSError:  # another filesystem, or one without hard links
        shutil.copyfile(source, target, follow_symlinks=False)
        os.chmod(target, stat.S_IMODE(os.lstat(source).st_mode))
    # Checked through the new name: what is checked is what the new tree holds, even if the
    # previous output was replaced meanwhile.
    with open(target, "rb") as f:
        if hashlib.file_digest(f, lambda: hashlib.blake2b(digest_size=16)).hexdigest() != digest:
            raise OutputError(f"{source} changed while it was taken into the new output")


def _write_files(
    tmp: Path,
    files: Mapping[str, bytes],
    copies: Mapping[str, Path],
    modes: Mapping[str, int],
    links: Mapping[str, tuple[Path, str]],
) -> None:
    # Strings and os calls, not pathlib: creating files is most of writing a tree (about 0.5 ms a
    # file on a slow disk), and Path.write_bytes adds an fstat, an ioctl and an lseek to each,
    # Path.mkdir(parents=True, exist_ok=True) a failing mkdir for each directory made before.
    base = os.fspath(tmp)
    made = {base}  # tmp is new (mkdtemp): every other directory in it is one this call made
    for rel, (source, digest) in sorted(links.items()):
        target = os.path.join(base, rel)
        _make_parent(target, made)
        _link(source, digest, Path(target))
    for rel, source in sorted(copies.items()):
        target = os.path.join(base, rel)
        _make_parent(target, made)
        shutil.copyfile(source, target)
        os.chmod(target, copied_mode(os.stat(source).st_mode))
    # The manifest last: a tree holding one is whole, so what is not listed in it was moved in
    # (recovery after a crash relies on it: _recover).
    for rel, data in sorted(files.items(), key=lambda item: item[0] == MANIFEST_NAME):
        target = os.path.join(base, rel)
        _make_parent(target, made)
        _write_bytes(target, data)
        mode = modes.get(rel)
        if mode is not None:
            os.chmod(target, mode)
    os.chmod(tmp, 0o755)


def _make_parent(target: str, made: set[str]) -> None:
    """Make ``target``'s parent directory and those above it that are not in ``made`` (as
    ``Path.mkdir(parents=True, exist_ok=True)`` would), and note them there."""
    parent = os.path.dirname(target)
    missing: list[str] = []
    while parent not in made:
        missing.append(parent)
        up = os.path.dirname(parent)
        if up == parent:
            break
        parent = up
    for directory in reversed(missing):
        try:
            os.mkdir(directory)
            mark_top_directory(directory)  # its subdirectories and files elsewhere: see above
        except FileExistsError:
            if not os.path.isdir(directory):
                raise
        made.add(directory)


def _write_bytes(path: str, data: bytes) -> None:
    """``Path(path).write_bytes(data)`` (the same flags and mode) in three system calls."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _swap_contents(out: Path, new: Path, old: Path, fault: Fault) -> None:
    """Make the entries of ``new`` the entries of ``out``, moving ``out``'s own entries into ``old``.

    For an ``out`` that cannot itself be renamed (a mount point). Each move is one rename on the
    same filesystem; the manifest leaves last and arrives first, so ``out`` holds a manifest (or
    only these temporary directories) at every moment. On any exception every move is undone.
    """
    ours = {new.name, old.name}
    leaving = sorted(n for n in os.listdir(out) if n not in ours)
    leaving.sort(key=lambda n: n == MANIFEST_NAME)
    arriving = sorted(os.listdir(new))
    arriving.sort(key=lambda n: n != MANIFEST_NAME)
    moved_out: list[str] = []
    moved_in: list[str] = []
    try:
        for name in leaving:
            os.rename(out / name, old / name)
            moved_out.append(name)
            fault(f"leave:{len(moved_out)}")
        for name in arriving:
            os.rename(new / name, out / name)
            moved_in.append(name)
            fault(f"arrive:{len(moved_in)}")
    except BaseException:
        for name in reversed(moved_in):
            os.rename(out / name, new / name)
        for name in reversed(moved_out):
            os.rename(old / name, out / name)
        raise


def _replace_contents(
    out: Path,
    files: Mapping[str, bytes],
    copies: Mapping[str, Path],
    modes: Mapping[str, int],
    links: Mapping[str, tuple[Path, str]],
    mask: set[int] | None,
    fault: Fault,
) -> None:
    """Write the tree inside ``out`` and swap ``out``'s contents for it (``out`` stays in place)."""
    new: Path | None = None
    old: Path | None = None
    try:
        new = Path(tempfile.mkdtemp(prefix=_INSIDE_PREFIXES[0], dir=out))
        mark_top_directory(new)
        with _signals_allowed(mask):
            _write_files(new, files, copies, modes, links)
        fault("written")
        # Made after the new tree is whole: its presence tells _recover the swap may have begun.
        old = Path(tempfile.mkdtemp(prefix=_INSIDE_PREFIXES[1], dir=out))
        fault("aside")
        moves = _adopt(str(out), str(new), fault)
        try:
            _swap_contents(out, new, old, fault)
        except BaseException:
            _give_back(moves)
            raise
        fault("swapped")
        with contextlib.suppress(OSError):
            _adopt(str(old), str(out), only_missing=True)  # what Terraform wrote meanwhile
        fault("readopted")
    finally:
        for tmp in (new, old):
            if tmp is not None:
                _remove(tmp)


def _entries(path: str | Path) -> set[str]:
    try:
        return {e.name for e in gate.list_dir(path)}
    except OSError:
        return set()


def _recover(parent: Path, out: Path) -> None:
    """Put back what a build killed outright (SIGKILL) left in flatten's temporary trees, then
    remove them: we hold the lock, so none is in use.

    Beside ``out`` (``.OUT.flatten-*``): a tree ``-old`` is the previous output moved aside by
    ``_swap_by_renames``, renamed back when ``out`` is missing; from every tree, each entry that is
    not flatten's (Terraform's entries, the user's files: not listed in that tree's manifest; a
    tree without its manifest was not whole, so nothing was moved into it) goes back to its place
    in ``out`` unless ``out`` has one. Inside ``out`` (a mount point: ``_replace_contents``), the
    interrupted swap is finished when the new tree's manifest had already arrived in ``out`` and
    undone otherwise, and the same entries go back.
    """
    prefix = f".{out.name}.flatten-"
    stale = sorted(
        (name for name in _entries(parent) if name.startswith(prefix)), key=lambda n: not n.endswith("-old")
    )
    for name in stale:
        tree = parent / name
        if name.endswith("-old") and not os.path.lexists(out) and gate.kind_of(tree) == "dir":
            os.rename(tree, out)  # killed between _swap_by_renames' two renames: the old output back
            continue
        if out.is_dir() and gate.kind_of(tree) == "dir":
            with contextlib.suppress(OSError):
                _adopt(str(tree), str(out), only_missing=True)
        _remove(tree)
    if not out.is_dir() or os.path.islink(out):
        return
    inside = _entries(out)
    ours = [n for n in inside if n.startswith(_INSIDE_PREFIXES)]
    for name in ours:  # a link planted under one of these names is removed, never followed
        if gate.kind_of(out / name) != "dir":
            _remove(out / name)
    news = sorted(n for n in ours if n.startswith(_INSIDE_PREFIXES[0]) and gate.kind_of(out / n) == "dir")
    olds = sorted(n for n in ours if n.startswith(_INSIDE_PREFIXES[1]) and gate.kind_of(out / n) == "dir")
    for new_name in news:
        new = out / new_name
        new_whole = MANIFEST_NAME in _entries(new)
        forward = (
            not new_whole
            and bool(olds)
            and (MANIFEST_NAME in inside or any(MANIFEST_NAME in _entries(out / o) for o in olds))
        )
        if forward:  # the new manifest arrived: the rest of the new tree follows it
            for entry in sorted(_entries(new)):
                if not os.path.lexists(out / entry):
                    os.rename(new / entry, out / entry)
        else:  # the swap had not begun arriving: the old entries return, then what was moved in
            for old_name in olds:
                for entry in sorted(_entries(out / old_name)):
                    if not os.path.lexists(out / entry):
                        os.rename(out / old_name / entry, out / entry)
            if new_whole:
                with contextlib.suppress(OSError):
                    _adopt(str(new), str(out), only_missing=True)
    for old_name in olds:
        with contextlib.suppress(OSError):
            _adopt(str(out / old_name), str(out), only_missing=True)
    for name in (*news, *olds):
        _remove(out / name)


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

    ``fault`` is called with the name of each step (tests end the process there).
    """
    fault = fault or _no_fault
    out = out.absolute()
    parent = out.parent
    parent.mkdir(parents=True, exist_ok=True)
    deferred: set[int] | None = None
    try:
        with _terminate_as_exception(), _locked(parent):
            # What a build killed outright left behind: put back, then removed.
            _recover(parent, out)
            if out.exists():
                if not out.is_dir():
                    raise OutputError(f"{out} exists and is not a directory")
                if not _is_previous_output(out):
                    raise OutputError(
                        f"{out} is not empty and holds no {MANIFEST_NAME}; refusing to replace a "
                        "directory flatten did not write. Choose an empty or new --out directory."
                    )
                clash = _conflicts(out, [*files, *(copies or {}), *(links or {})])
                if clash:
                    shown = ", ".join(clash[:5]) + (f" and {len(clash) - 5} more" if len(clash) > 5 else "")
                    raise OutputError(
                        f"{out} holds {shown}, which flatten did not write (its {MANIFEST_NAME} does not "
                        "list it), where this build writes its own files; flatten never replaces a file "
                        "of yours. Move or rename it, then build again."
                    )
            # From here Ctrl-C and SIGTERM take effect only while files are written: a signal
            # handled between creating the temporary directory and the start of its cleanup, or
            # during the swap, would leave that directory behind. One that arrives meanwhile is
            # handled after the tree is complete (the new output is then in place).
            deferred = _signal_mask()  # first: whatever happens next, the finally restores it
            _block_signals(deferred)
            in_place = out.is_dir() and os.path.ismount(out)
            tmp: Path | None = None
            previous: Path | None = None
            try:
                if not in_place:
                    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.flatten-", dir=parent))
                    mark_top_directory(tmp)
                    with _signals_allowed(deferred):
                        _write_files(tmp, files, copies or {}, modes or {}, links or {})
                    fault("written")
                    # Terraform's entries and the user's go over to the new tree first (renames:
                    # same inodes).
                    moves = _adopt(str(out), str(tmp), fault) if out.is_dir() else []
                    try:
                        # After an exchange tmp holds the old output.
                        exchanged = out.exists() and _exchange(tmp, out)
                        previous = tmp if exchanged else _swap_by_renames(tmp, out, fault)
                    except OSError as exc:
                        _give_back(moves)
                        if exc.errno not in _UNRENAMABLE or not out.is_dir():
                            raise
                        in_place = True  # _swap_by_renames put the old output back
                    except BaseException:
                        _give_back(moves)
                        raise
                    if previous is not None:
                        fault("swapped")
                        # What Terraform wrote meanwhile (between the moves and the swap).
                        with contextlib.suppress(OSError):
                            _adopt(str(previous), str(out), only_missing=True)
                        fault("readopted")
            finally:
                if tmp is not None:
                    _remove(tmp)
                if previous is not None and previous != tmp:
                    _remove(previous)
            if in_place:
                steps = fault  # the in-place swap's steps named apart from the tried rename's

                def inside(step: str) -> None:
                    steps(f"in-place:{step}")

                _replace_contents(out, files, copies or {}, modes or {}, links or {}, deferred, inside)
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


def _remove(tmp: Path) -> None:
    """Remove ``tmp`` (one of flatten's temporary trees, named so in a directory we hold the lock
    of) whole through the gate (by descriptors, never following a link), even when an interrupt
    is raised meanwhile; then raise the first one.

    (Signals are deferred while it runs; this also covers a handler that was already due.)
    """
    pending: BaseException | None = None
    while True:
        try:
            with contextlib.suppress(OSError), gate.open_dir(tmp.parent) as parent:
                gate.remove_owned(parent, tmp.name)
            break
        except (Interrupted, KeyboardInterrupt) as exc:
            pending = pending or exc
    if pending is not None:
        raise pending
