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
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import glob
import hashlib
import os
import shutil
import signal
import stat
import struct
import sys
import tempfile
import threading
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path

from flatten.lang.workdir import PLAN_MEMBER, TERRAFORM_ENTRIES, ZIP_MAGIC

__all__ = [
    "MANIFEST_NAME",
    "Interrupted",
    "OutputError",
    "copied_mode",
    "manifest_root",
    "mark_top_directory",
    "terraform_entries",
    "write_tree",
]

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
        with open(os.path.join(tree, MANIFEST_NAME), "rb") as f:
            return f.read()
    except OSError:
        return None


def _is_plan(path: str) -> bool:
    """Return whether ``path`` is a regular file Terraform reads as a saved plan: a zip archive
    with a ``tfplan`` member (internal/plans/planfile/reader.go)."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return False
        with open(path, "rb") as f:
            if f.read(len(ZIP_MAGIC)) != ZIP_MAGIC:
                return False
    except OSError:
        return False
    import zipfile  # only for a zip archive: most builds never meet one

    try:
        with zipfile.ZipFile(path) as archive:
            return PLAN_MEMBER in archive.namelist()
    except (OSError, zipfile.BadZipFile):
        return False


def terraform_entries(directory: str | Path, written: Collection[str] = ()) -> list[str]:
    """Return the names, sorted, of the entries of ``directory`` (a root module's directory in an
    output) that Terraform wrote and a build does not: Terraform's names (flatten/lang/workdir.py)
    and saved plans, but none of ``written`` (the names the build puts there: a lock file copied
    from the source wins over Terraform's)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    found = []
    for name in names:
        if name in written or name == MANIFEST_NAME:
            continue
        if name in TERRAFORM_ENTRIES or _is_plan(os.path.join(directory, name)):
            found.append(name)
    return sorted(found)


def _adopt(old: str, new: str) -> list[tuple[str, str]]:
    """Move Terraform's entries of the output tree ``old`` into the same place of the tree ``new``
    (each tree's root module directory, from its manifest), one rename each; return the moves
    made, (from, to), for ``_give_back``. On failure every move is undone and the error raised."""
    old_root = os.path.join(old, manifest_root(_read_manifest(old)))
    new_root = os.path.join(new, manifest_root(_read_manifest(new)))
    try:
        written = set(os.listdir(new_root))
    except FileNotFoundError:
        written = set()
    moves: list[tuple[str, str]] = []
    try:
        for name in terraform_entries(old_root, written):
            if not os.path.isdir(new_root):
                os.makedirs(new_root)
            source, target = os.path.join(old_root, name), os.path.join(new_root, name)
            os.rename(source, target)
            moves.append((source, target))
    except BaseException:
        _give_back(moves)
        raise
    return moves


def _give_back(moves: list[tuple[str, str]]) -> None:
    """Undo ``_adopt``'s moves (the swap that was to follow failed)."""
    for source, target in reversed(moves):
        with contextlib.suppress(OSError):
            os.rename(target, source)


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


def _swap_by_renames(tmp: Path, out: Path) -> Path | None:
    """Move ``tmp`` to ``out`` with two renames, restoring the old ``out`` if interrupted between;
    return where the old ``out`` now is (None when there was none), for the caller to remove."""
    old = tmp.with_name(tmp.name + "-old") if out.exists() else None
    if old is not None:
        os.rename(out, old)
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
    for rel, data in sorted(files.items()):
        target = os.path.join(base, rel)
        _make_parent(target, made)
        _write_bytes(target, data)
        mode = modes.get(rel)
        if mode is not None:
            os.chmod(target, mode)
    for rel, source in sorted(copies.items()):
        target = os.path.join(base, rel)
        _make_parent(target, made)
        shutil.copyfile(source, target)
        os.chmod(target, copied_mode(os.stat(source).st_mode))
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


def _swap_contents(out: Path, new: Path, old: Path) -> None:
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
        for name in arriving:
            os.rename(new / name, out / name)
            moved_in.append(name)
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
) -> None:
    """Write the tree inside ``out`` and swap ``out``'s contents for it (``out`` stays in place)."""
    new: Path | None = None
    old: Path | None = None
    try:
        new = Path(tempfile.mkdtemp(prefix=_INSIDE_PREFIXES[0], dir=out))
        mark_top_directory(new)
        with _signals_allowed(mask):
            _write_files(new, files, copies, modes, links)
        old = Path(tempfile.mkdtemp(prefix=_INSIDE_PREFIXES[1], dir=out))
        moves = _adopt(str(out), str(new))
        try:
            _swap_contents(out, new, old)
        except BaseException:
            _give_back(moves)
            raise
        with contextlib.suppress(OSError):
            _adopt(str(old), str(out))  # what Terraform wrote meanwhile
    finally:
        for tmp in (new, old):
            if tmp is not None:
                _remove(tmp)


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
    behind. Builds into the same ``out`` take turns (a lock on its parent directory). An existing
    ``out`` is replaced only if it is empty or holds a previous flatten output (it has the
    manifest); anything else raises ``OutputError``.

    What Terraform wrote into the previous output's root module directory (``terraform_entries``:
    ``.terraform/``, state, lock files, saved plans) is not replaced: each entry is renamed into
    the new tree's root module directory before the swap (so it keeps its inode), unless the new
    tree has an entry of that name (a lock file copied from the source wins).

    An ``out`` that cannot be renamed (a mount point, such as a container volume) keeps its
    place: the tree is written into a temporary directory inside it, and its entries are then
    swapped one rename at a time, undone on any failure (docs/reliability.md).
    """
    out = out.absolute()
    parent = out.parent
    parent.mkdir(parents=True, exist_ok=True)
    deferred: set[int] | None = None
    try:
        with _terminate_as_exception(), _locked(parent):
            if out.exists():
                if not out.is_dir():
                    raise OutputError(f"{out} exists and is not a directory")
                if not _is_previous_output(out):
                    raise OutputError(
                        f"{out} is not empty and holds no {MANIFEST_NAME}; refusing to replace a "
                        "directory flatten did not write. Choose an empty or new --out directory."
                    )
            # Leftovers of a build that was killed outright (SIGKILL): we hold the lock, so they are stale.
            for stale in parent.glob(f".{glob.escape(out.name)}.flatten-*"):
                shutil.rmtree(stale, ignore_errors=True)
            if out.is_dir():
                for prefix in _INSIDE_PREFIXES:
                    for stale in out.glob(prefix + "*"):
                        shutil.rmtree(stale, ignore_errors=True)
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
                    # Terraform's entries go over to the new tree first (renames: same inodes).
                    moves = _adopt(str(out), str(tmp)) if out.is_dir() else []
                    try:
                        # After an exchange tmp holds the old output.
                        exchanged = out.exists() and _exchange(tmp, out)
                        previous = tmp if exchanged else _swap_by_renames(tmp, out)
                    except OSError as exc:
                        _give_back(moves)
                        if exc.errno not in _UNRENAMABLE or not out.is_dir():
                            raise
                        in_place = True  # _swap_by_renames put the old output back
                    except BaseException:
                        _give_back(moves)
                        raise
                    if previous is not None:
                        # What Terraform wrote meanwhile (between the moves and the swap).
                        with contextlib.suppress(OSError):
                            _adopt(str(previous), str(out))
            finally:
                if tmp is not None:
                    _remove(tmp)
                if previous is not None and previous != tmp:
                    _remove(previous)
            if in_place:
                _replace_contents(out, files, copies or {}, modes or {}, links or {}, deferred)
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
    """Remove ``tmp`` whole, even when an interrupt is raised meanwhile; then raise the first one.

    (Signals are deferred while it runs; this also covers a handler that was already due.)
    """
    pending: BaseException | None = None
    while True:
        try:
            shutil.rmtree(tmp, ignore_errors=True)
            break
        except (Interrupted, KeyboardInterrupt) as exc:
            pending = pending or exc
    if pending is not None:
        raise pending
