"""The one door to the file system: every read, listing, write, rename and delete flatten makes.

Issue 38: each feature had opened its own path to the disk, and each decided for itself about
symlinks, devices and sizes, so a committed symlink, a FIFO or ``/dev/zero`` broke a different
one each time. Here those choices are made once (docs/reliability.md, "The gate"):

* **Reads** (:func:`read_bytes`, :func:`read_text`, :func:`open_read`) open with ``O_NONBLOCK``
  (a FIFO never blocks the open) and ``fstat`` the descriptor before reading a byte: anything but a
  regular file is refused, and so is a file over the caller's size budget; the build's
  ``deadline`` is checked before the open and between chunks. A symlink is followed only where a
  documented rule allows it: ``within`` names the directories its target must lie in (ROOT and
  the module's own directory for configuration, variables and ignore files: what a pull request
  commits never reaches the runner's home), ``follow=False`` refuses a symlink outright (the cache,
  OUT), and neither is the user's own choice on the command line (``--var-file``).
* **Writes, renames and deletes** happen inside a :class:`Dir`, a directory opened from a base
  the user chose (``FLATTEN_CACHE_DIR``, ``--out``'s parent) and reached below it one component
  at a time with ``O_NOFOLLOW | O_DIRECTORY``; every call names its file relative to that
  descriptor (``dir_fd=``), so a symlink anywhere under the base cannot redirect it. A tree is
  removed with ``shutil.rmtree(dir_fd=)``, which walks by descriptors and never follows a link,
  and only when its owner's ``owned`` check (flatten's mark) says it is flatten's.
* **Owned roots** (:func:`open_owned_root`): a directory flatten made and stamped, the only kind
  in which anything is ever deleted by a sweep (the cache: ``CACHEDIR.TAG`` with flatten's line).

Errors are data: a refusal is :class:`flatten.lang.oserror.Refused` (an ``OSError`` with a
``reason``), and every ``OSError`` reaches a user through ``lang/oserror.py``'s words, never as
``[Errno N]``. Nothing here keeps state between calls.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import io
import os
import posixpath
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Literal, NamedTuple, Protocol, TypeVar

from flatten.lang.oserror import Refused

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = [
    "CACHE_ADOPT",
    "CACHE_AREAS",
    "CACHE_OWNER",
    "CONFIG_LIMIT",
    "COPY_LIMIT",
    "STAMP_NAME",
    "Dir",
    "DirEntry",
    "Kind",
    "Refused",
    "append",
    "atomic_writer",
    "check_deadline",
    # OUT's writer and the copies beside a module (one block at the end of this file):
    "copy_file",
    "exchange",
    "file_digest",
    "kind_of",
    "link_file",
    "list_dir",
    "make_dirs",
    "make_symlink",
    "make_temp_dir",
    "move",
    "move_below",
    "open_dir",
    "open_owned_root",
    "open_read",
    "path_of",
    "read_bytes",
    "read_text",
    "remove_owned",
    "remove_tree",
    "set_mode",
    "source_reader",
    "tree_bytes",
    "walk_tree",
    "within",
    "write_atomic",
    "write_file",
    "write_stream",
]

#: The size budget of one file flatten reads whole: configuration, variables, ignore files,
#: ``modules.json``, cache entries. Far above any configuration file Terraform users write (the
#: memory benchmarks use 20 MB ones) and far below what exhausts memory (docs/reliability.md).
CONFIG_LIMIT = 256 << 20

Kind = Literal["file", "dir", "link", "other", "missing"]
_CHUNK = 1 << 20
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


def _kind(mode: int) -> Kind:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "link"
    return "other"


def _special(path: str, mode: int) -> Refused:
    what = {
        stat.S_IFIFO: "a FIFO (named pipe)",
        stat.S_IFCHR: "a character device",
        stat.S_IFBLK: "a block device",
        stat.S_IFSOCK: "a socket",
        stat.S_IFDIR: "a directory",
    }.get(stat.S_IFMT(mode), "not a regular file")
    return Refused(
        errno.EINVAL if not stat.S_ISDIR(mode) else errno.EISDIR,
        "special",
        path,
        f"it is {what}, not a regular file (flatten reads only regular files, so that reading "
        "never blocks or runs without end)",
        "Replace it by a regular file, or remove it.",
    )


def _outside(path: str) -> Refused:
    return Refused(
        errno.EPERM,
        "outside",
        path,
        "it is a symbolic link leading outside the directories flatten reads this kind of file from "
        "(the root module's and the module's own directory), so it was not read",
        "Replace the link by the file itself, or name the file on the command line.",
    )


def _symlink(path: str) -> Refused:
    return Refused(
        errno.ELOOP,
        "symlink",
        path,
        "it is a symbolic link where flatten follows none (in its cache and output directories a "
        "link could redirect a read, write or delete elsewhere)",
        "Remove the link; flatten makes what it needs there itself.",
    )


def _too_large(path: str, limit: int) -> Refused:
    return Refused(
        errno.EFBIG,
        "too-large",
        path,
        f"it is larger than the {limit:,} bytes flatten reads of one such file",
        "Check that the file is what you meant to use; split it if it really is this large.",
    )


def check_deadline(deadline: float | None, path: str | os.PathLike[str] = "") -> None:
    """Raise :class:`Refused` when ``deadline`` (a ``time.monotonic()`` value) has passed."""
    if deadline is not None and time.monotonic() > deadline:
        raise Refused(
            errno.ETIMEDOUT,
            "deadline",
            os.fspath(path),
            "the build's time limit passed while reading it",
            "Check that the file is on a responsive file system, or raise the time limit.",
        )


def _inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def within(path: str | os.PathLike[str], directories: Sequence[str | os.PathLike[str]]) -> bool:
    """Return whether ``path``, symlinks resolved, lies in one of ``directories`` (resolved too)."""
    real = os.path.realpath(path)
    return any(_inside(real, os.path.realpath(d)) for d in directories)


def _open_regular(
    path: str | os.PathLike[str],
    *,
    limit: int,
    deadline: float | None,
    inside: Sequence[str | os.PathLike[str]] | None,
    follow: bool,
    dir_fd: int | None = None,
) -> tuple[int, os.stat_result]:
    """Open a regular file for reading without blocking: the descriptor and its ``fstat``."""
    shown = os.fspath(path)
    check_deadline(deadline, shown)
    target = shown
    flags = os.O_RDONLY | _NONBLOCK | _CLOEXEC
    if inside is not None and dir_fd is None:
        if _own_directory_allowed(shown, inside):
            # A file that is no symlink lies in its own directory, wherever that resolves: opened
            # without following, it needs no resolving (three realpaths per configuration file
            # were most of a read's cost).
            try:
                fd = os.open(shown, flags | _NOFOLLOW)
            except OSError as exc:
                if exc.errno != errno.ELOOP:  # else a symlink: its target is checked below
                    exc.filename = shown
                    raise
            else:
                return _regular(fd, shown, limit)
        # Resolved once and opened without following: the target checked is the target read.
        target = os.path.realpath(shown)
        if not any(_inside(target, os.path.realpath(d)) for d in inside):
            raise _outside(shown)
        flags |= _NOFOLLOW
    elif not follow:
        flags |= _NOFOLLOW
    try:
        fd = os.open(target, flags, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow and kind_of(target, dir_fd=dir_fd) == "link":
            raise _symlink(shown) from None
        exc.filename = shown
        raise
    return _regular(fd, shown, limit)


def _own_directory_allowed(shown: str, inside: Sequence[str | os.PathLike[str]]) -> bool:
    """Whether the file's own directory (as named) is one of ``inside``."""
    parent = os.path.dirname(os.path.abspath(shown))
    return any(os.path.abspath(d) == parent for d in inside)


def _regular(fd: int, shown: str, limit: int) -> tuple[int, os.stat_result]:
    """``fd`` and its ``fstat`` when it is a regular file of at most ``limit`` bytes; else closed
    and refused."""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _special(shown, st.st_mode)
        if st.st_size > limit:
            raise _too_large(shown, limit)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def read_bytes(
    path: str | os.PathLike[str],
    *,
    limit: int = CONFIG_LIMIT,
    deadline: float | None = None,
    inside: Sequence[str | os.PathLike[str]] | None = None,
    follow: bool = True,
    dir_fd: int | None = None,
) -> bytes:
    """Return a regular file's bytes, at most ``limit`` of them (more is :class:`Refused`).

    ``inside``: the directories the file (symlinks resolved) must lie in, else it is refused
    unread. ``follow=False``: a symlink as the last component is refused. ``dir_fd``: ``path`` is
    relative to that open directory (then ``inside`` is not consulted: the directory is trusted).
    """
    fd, st = _open_regular(path, limit=limit, deadline=deadline, inside=inside, follow=follow, dir_fd=dir_fd)
    try:
        # The size fstat gave (and a byte more, to see the end) in one read, then chunks if it
        # grew: chunks joined held the file twice (an 18 MB module-cache entry took 33 MiB to read).
        parts = list(_chunks(fd, path, limit, deadline, st.st_size + 1))
        return parts[0] if len(parts) == 1 else b"".join(parts)
    finally:
        os.close(fd)


def _chunks(
    fd: int, path: str | os.PathLike[str], limit: int, deadline: float | None, first: int
) -> Iterator[bytes]:
    """An open file's bytes: reads of ``first`` bytes in all, then of ``_CHUNK``, until its end;
    :class:`Refused` past ``limit`` bytes (a file that grew after its ``fstat``) or the deadline."""
    size = 0
    while True:
        check_deadline(deadline, path)
        want = first - size if size < first else _CHUNK
        chunk = os.read(fd, min(want, limit + 1 - size) or 1)
        if not chunk:
            return
        size += len(chunk)
        if size > limit:
            raise _too_large(os.fspath(path), limit)
        yield chunk


class _Updated(Protocol):
    def update(self, data: bytes, /) -> None: ...


Hash = TypeVar("Hash", bound=_Updated)


def file_digest(
    path: str | os.PathLike[str],
    digest: Callable[[], Hash],
    *,
    limit: int,
    deadline: float | None = None,
    follow: bool = True,
) -> Hash:
    """Return ``digest()`` updated with a regular file's bytes, under :func:`read_bytes`' rules,
    read in chunks of at most ``_CHUNK`` (a copied file may be larger than memory should hold).

    For the many small files of an output snapshot (``replay._snapshot_output``): a file of up to
    a chunk is one read into one bytes object, where ``hashlib.file_digest`` through
    :func:`open_read` made a buffered reader and a 256 KiB buffer for each file (9 ms against
    5 ms for flat 200's 202 output files, twice in each rebuild after one edit)."""
    fd, st = _open_regular(path, limit=limit, deadline=deadline, inside=None, follow=follow)
    try:
        h = digest()
        for chunk in _chunks(fd, path, limit, deadline, min(st.st_size + 1, _CHUNK)):
            h.update(chunk)
        return h
    finally:
        os.close(fd)


def read_text(
    path: str | os.PathLike[str],
    *,
    encoding: str = "utf-8",
    errors: str = "strict",
    limit: int = CONFIG_LIMIT,
    deadline: float | None = None,
    inside: Sequence[str | os.PathLike[str]] | None = None,
    follow: bool = True,
    dir_fd: int | None = None,
) -> str:
    """:func:`read_bytes`, decoded (``UnicodeDecodeError`` as ``bytes.decode`` raises it)."""
    data = read_bytes(path, limit=limit, deadline=deadline, inside=inside, follow=follow, dir_fd=dir_fd)
    return data.decode(encoding, errors)


class _Bounded(io.RawIOBase):
    """A descriptor read at most ``limit`` bytes far, the deadline checked on every read."""

    def __init__(self, fd: int, path: str, limit: int, deadline: float | None) -> None:
        self._fd, self._path, self._left, self._limit, self._deadline = fd, path, limit, limit, deadline

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        # An archive is read by seeking (a zip's directory at its end): the budget is then on the
        # offset read up to, which for reads from the start is the same as the bytes read.
        position = os.lseek(self._fd, offset, whence)
        self._left = self._limit - position
        return position

    def tell(self) -> int:
        return os.lseek(self._fd, 0, os.SEEK_CUR)

    def readinto(self, buffer: Buffer) -> int:
        view = memoryview(buffer).cast("B")
        check_deadline(self._deadline, self._path)
        # Straight into the caller's buffer: os.read made a bytes object as large as the request
        # and copied it, so reading a cached module output of 4 MB in one call held it twice.
        got = os.readv(self._fd, [view[: min(len(view), max(0, self._left + 1))]])
        if got > self._left:
            raise _too_large(self._path, self._limit)
        self._left -= got
        return got

    def close(self) -> None:
        if not self.closed:
            os.close(self._fd)
        super().close()


@contextlib.contextmanager
def open_read(
    path: str | os.PathLike[str],
    *,
    limit: int = CONFIG_LIMIT,
    deadline: float | None = None,
    inside: Sequence[str | os.PathLike[str]] | None = None,
    follow: bool = True,
    dir_fd: int | None = None,
) -> Iterator[io.BufferedReader[_Bounded]]:
    """A regular file opened for streaming (hashing, comparing, copying), under the same rules as
    :func:`read_bytes`: reading past ``limit`` bytes raises :class:`Refused`."""
    fd, _ = _open_regular(path, limit=limit, deadline=deadline, inside=inside, follow=follow, dir_fd=dir_fd)
    raw = _Bounded(fd, os.fspath(path), limit, deadline)
    with io.BufferedReader(raw, _CHUNK) as f:
        yield f


def source_reader(root: str | os.PathLike[str]) -> Callable[[str], str | None]:
    """A reader of the files diagnostics name (by their path relative to ``root``), for the
    source line a text diagnostic quotes: under the rule configuration files are read by (a
    regular file inside ``root`` or its own directory, at most ``CONFIG_LIMIT`` bytes), so a
    link leading out of the root is never quoted into a CI log (issue 38, item 6)."""
    base = os.fspath(root)

    def read(name: str) -> str | None:
        path = os.path.join(base, name)
        try:
            data = read_bytes(path, inside=(base, os.path.dirname(path)))
        except (OSError, ValueError):
            return None
        return data.decode("utf-8-sig", errors="replace")

    return read


def kind_of(path: str | os.PathLike[str], *, dir_fd: int | None = None) -> Kind:
    """What ``path`` is, its last component not followed (``missing`` when there is nothing or
    it cannot be looked at)."""
    try:
        return _kind(os.lstat(path, dir_fd=dir_fd).st_mode)
    except (OSError, ValueError):
        return "missing"


class DirEntry(NamedTuple):
    """One entry of a listing: its name and what it is (a symlink is ``link``, never followed).

    A named tuple, not a dataclass, as the gate's other records: importing ``dataclasses`` (and
    with it ``inspect``, ``ast``, ``dis``, ``tokenize``) was 7 ms of a replay's 50, which imports
    the gate and little else (docs/performance.md, "Ninth round")."""

    name: str
    kind: Kind


def list_dir(path: str | os.PathLike[str] | int, *, deadline: float | None = None) -> tuple[DirEntry, ...]:
    """Return a directory's entries sorted by name (bytewise), without following any of them.

    ``path`` may be an open directory's descriptor (a :class:`Dir`'s ``fd``).
    """
    check_deadline(deadline, "" if isinstance(path, int) else path)
    found: list[DirEntry] = []
    fd = os.dup(path) if isinstance(path, int) else None
    try:
        with os.scandir(fd if fd is not None else path) as entries:
            for entry in entries:
                try:
                    if entry.is_symlink():
                        kind: Kind = "link"
                    elif entry.is_dir(follow_symlinks=False):
                        kind = "dir"
                    elif entry.is_file(follow_symlinks=False):
                        kind = "file"
                    else:
                        kind = "other"
                except OSError:
                    kind = "missing"
                found.append(DirEntry(entry.name, kind))
    finally:
        if fd is not None:
            os.close(fd)
    found.sort(key=lambda e: e.name.encode("utf-8", "surrogateescape"))
    return tuple(found)


class Dir:
    """An open directory reached without following a symlink below the base it was opened from;
    every operation names its file relative to it (``dir_fd``). Close it (or use ``with``)."""

    __slots__ = ("fd", "path")

    def __init__(self, fd: int, path: str) -> None:
        self.fd = fd
        self.path = path  # for messages only: never used to reach the directory again

    def __enter__(self) -> Dir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def join(self, name: str) -> str:
        return os.path.join(self.path, name)

    def sub(self, rel: str, *, create: bool = False, mode: int = 0o755, replace_links: bool = False) -> Dir:
        """The directory ``rel`` below this one (``a/b``), each component without following.
        ``replace_links`` (with ``create``): a symlink where a component should be is removed
        (the link, never its target) and the directory made: for directories flatten owns."""
        return _descend(self.fd, self.path, rel, create=create, mode=mode, replace_links=replace_links)

    def list(self) -> tuple[DirEntry, ...]:
        return list_dir(self.fd)

    def kind(self, name: str) -> Kind:
        return kind_of(name, dir_fd=self.fd)

    def stat(self, name: str) -> os.stat_result:
        return os.stat(name, dir_fd=self.fd, follow_symlinks=False)

    def read(self, name: str, *, limit: int = CONFIG_LIMIT, deadline: float | None = None) -> bytes:
        """A regular file's bytes; a symlink, device or FIFO is :class:`Refused`."""
        return read_bytes(name, limit=limit, deadline=deadline, follow=False, dir_fd=self.fd)

    def write(self, name: str, data: bytes, *, mode: int = 0o644, exclusive: bool = False) -> None:
        write_atomic(self, name, data, mode=mode, exclusive=exclusive)

    def rename(self, src: str, dst: str, *, into: Dir | None = None) -> None:
        """Rename ``src`` to ``dst`` (in ``into``, by default here), replacing what ``dst`` names
        itself (a symlink there is replaced, never followed)."""
        os.replace(src, dst, src_dir_fd=self.fd, dst_dir_fd=(into or self).fd)

    def unlink(self, name: str) -> bool:
        """Remove a file or a symlink (the link itself); False when it was not there."""
        try:
            os.unlink(name, dir_fd=self.fd)
        except FileNotFoundError:
            return False
        return True

    def touch(self, name: str, *, times: tuple[float, float] | None = None) -> None:
        """Create ``name`` if missing (never through a symlink) and set its times (now by default)."""
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | _NOFOLLOW | _NONBLOCK | _CLOEXEC, 0o644, dir_fd=self.fd)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise _special(self.join(name), os.fstat(fd).st_mode)
            os.utime(fd, times)
        finally:
            os.close(fd)

    def remove(self, name: str, *, owned: Callable[[Dir], bool] | None = None) -> bool:
        return remove_owned(self, name, owned=owned)

    def remove_empty(self, name: str) -> bool:
        """Remove the directory ``name`` if it is empty (never a link: not a directory); False when
        it is not (or not there)."""
        try:
            os.rmdir(name, dir_fd=self.fd)
        except OSError:
            return False
        return True

    def mkdir(self, name: str, *, mode: int = 0o755, exist_ok: bool = False) -> None:
        try:
            os.mkdir(name, mode, dir_fd=self.fd)
        except FileExistsError:
            if not exist_ok or self.kind(name) != "dir":
                raise

    def lock(self, name: str, *, shared: bool, wait: bool) -> int | None:
        """Take ``flock`` on the file ``name`` (made if missing, never through a symlink): a
        descriptor to close to release it, or None when ``wait`` is false and another holds it."""
        fd = os.open(name, os.O_RDWR | os.O_CREAT | _NOFOLLOW | _NONBLOCK | _CLOEXEC, 0o644, dir_fd=self.fd)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise _special(self.join(name), st.st_mode)
            fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            os.close(fd)
            return None
        except BaseException:
            os.close(fd)
            raise
        return fd

    def size(self, name: str = ".") -> int:
        """The bytes a file or tree takes on disk (what ``du`` counts), no link followed."""
        total = 0
        try:
            st = os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except OSError:
            return 0
        total += _disk_size(st)
        if not stat.S_ISDIR(st.st_mode):
            return total
        for _, _, files, dirfd in os.fwalk(name, dir_fd=self.fd):
            for each in files:
                with contextlib.suppress(OSError):
                    total += _disk_size(os.stat(each, dir_fd=dirfd, follow_symlinks=False))
        return total


def _disk_size(st: os.stat_result) -> int:
    blocks = getattr(st, "st_blocks", None)
    return blocks * 512 if blocks is not None else st.st_size


def _descend(
    base_fd: int, base_path: str, rel: str, *, create: bool, mode: int, replace_links: bool = False
) -> Dir:
    fd = os.dup(base_fd)
    path = base_path
    try:
        for part in [p for p in rel.replace(os.sep, "/").split("/") if p not in ("", ".")]:
            if part == "..":
                raise Refused(
                    errno.EPERM,
                    "outside",
                    os.path.join(path, part),
                    "the path leaves its base directory",
                    "Name a path below it.",
                )
            path = os.path.join(path, part)
            if create:
                if replace_links and kind_of(part, dir_fd=fd) == "link":
                    os.unlink(part, dir_fd=fd)
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, mode, dir_fd=fd)
            try:
                child = os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR) and kind_of(part, dir_fd=fd) == "link":
                    raise _symlink(path) from None
                exc.filename = path
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return Dir(fd, path)


def open_dir(base: str | os.PathLike[str], rel: str = "", *, create: bool = False, mode: int = 0o755) -> Dir:
    """Open ``base`` (the user's choice: followed if a symlink, made with its parents when
    ``create``) and ``rel`` below it one component at a time without following a symlink."""
    shown = os.fspath(base)
    if create:
        os.makedirs(shown, mode=mode, exist_ok=True)
    try:
        fd = os.open(shown, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    except OSError as exc:
        exc.filename = shown
        raise
    try:
        return _descend(fd, shown, rel, create=create, mode=mode)
    finally:
        os.close(fd)


def write_atomic(
    directory: Dir, name: str, data: bytes, *, mode: int = 0o644, exclusive: bool = False
) -> None:
    """Write ``name`` in ``directory``: a new temporary file renamed over it, so a reader sees the
    old bytes or the new, and a symlink at ``name`` is replaced, never written through.
    ``exclusive``: only if ``name`` does not exist (``FileExistsError`` otherwise), still complete
    before it appears (a hard link of the temporary file)."""
    tmp = f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, mode, dir_fd=directory.fd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        if exclusive:
            os.link(tmp, name, src_dir_fd=directory.fd, dst_dir_fd=directory.fd, follow_symlinks=False)
            os.unlink(tmp, dir_fd=directory.fd)
        else:
            os.replace(tmp, name, src_dir_fd=directory.fd, dst_dir_fd=directory.fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=directory.fd)
        raise


@contextlib.contextmanager
def atomic_writer(
    directory: Dir, name: str, *, mode: int = 0o644, buffering: int = 1 << 20
) -> Iterator[BinaryIO]:
    """A new file to stream into, renamed over ``name`` in ``directory`` when the block ends
    without an exception (removed otherwise); as :func:`write_atomic`, never through a symlink."""
    tmp = f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, mode, dir_fd=directory.fd)
    try:
        with open(fd, "wb", buffering=buffering) as f:  # gate: the one open of a new file's descriptor
            yield f
        os.replace(tmp, name, src_dir_fd=directory.fd, dst_dir_fd=directory.fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=directory.fd)
        raise


def make_dirs(path: str | os.PathLike[str], *, mode: int = 0o755) -> None:
    """Make ``path`` and its parents (the user's own location: a shell profile's directory)."""
    os.makedirs(path, mode=mode, exist_ok=True)


def append(path: str | os.PathLike[str], data: bytes) -> None:
    """Append ``data`` to a regular file (made when missing), never blocking on a FIFO: for the
    user's own files (a shell profile), where a symlink is the user's (dotfiles) and followed."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NONBLOCK | _CLOEXEC, 0o644)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _special(os.fspath(path), st.st_mode)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


# -- Packages: a download's file, archive members, a clone's tree (sources/) ----------------------
#
# A package is written into a new directory under the cache's ``v1/tmp`` from what a server sent:
# a downloaded file, an archive's members, the tree git checked out. The server chooses contents
# and names; the gate decides the rest once: every file is made new (``O_EXCL``) and never through
# a symlink (``O_NOFOLLOW``, each directory reached by :meth:`Dir.sub`), its size is held to the
# caller's budget as bytes are written (a header that lies does not help), the deadline is checked
# between chunks, and a tree is walked without recursion and with a bounded number of open
# descriptors (a hostile tree may be thousands of directories deep).

#: The deepest directories a walk keeps open at once, and the spacing of the ones it keeps open
#: above them; any other is opened again from the nearest open one above it (without following a
#: link) when the walk comes back to it. A walk 2,000 deep holds 63 descriptors, not 2,000.
_WALK_HELD = 32
_WALK_SPACING = 64


def _too_large_to_write(path: str, limit: int) -> Refused:
    return Refused(
        errno.EFBIG,
        "too-large",
        path,
        f"it would be larger than the {limit:,} bytes flatten writes of it",
        "Check that the source is what you meant to use.",
    )


def _make_room(directory: Dir, name: str, *, replace: bool) -> None:
    """With ``replace``, remove the file, symlink (the link itself) or special file at ``name``;
    a directory there is ``IsADirectoryError`` (never removed to make room)."""
    if not replace:
        return
    kind = directory.kind(name)
    if kind == "dir":
        raise IsADirectoryError(errno.EISDIR, "Is a directory", directory.join(name))
    if kind != "missing":
        directory.unlink(name)


def write_stream(
    directory: Dir,
    name: str,
    read: Callable[[int], bytes],
    *,
    limit: int,
    deadline: float | None = None,
    mode: int = 0o644,
    replace: bool = False,
) -> int:
    """Make the new regular file ``name`` in ``directory`` from ``read(n)`` (a stream's ``read``:
    at most ``n`` bytes, ``b""`` at its end) and return its size. Never through a symlink and never
    over an existing file (``FileExistsError``) unless ``replace`` (then a file or link there is
    removed first, a directory is ``IsADirectoryError``). More than ``limit`` bytes, or the
    ``deadline`` passing, is :class:`Refused` (``too-large``, ``deadline``); on any error the
    partial file is removed. ``mode``: its permission bits, exactly (no umask)."""
    shown = directory.join(name)
    _make_room(directory, name, replace=replace)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
    fd = os.open(name, flags, 0o600, dir_fd=directory.fd)
    size = 0
    try:
        try:
            while True:
                check_deadline(deadline, shown)
                chunk = read(max(1, min(_CHUNK, limit + 1 - size)))
                if not chunk:
                    break
                size += len(chunk)
                if size > limit:
                    raise _too_large_to_write(shown, limit)
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view) :]
            os.fchmod(fd, stat.S_IMODE(mode))
        finally:
            os.close(fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=directory.fd)
        raise
    return size


def make_symlink(directory: Dir, name: str, target: str, *, replace: bool = False) -> None:
    """Make ``name`` in ``directory`` a symbolic link to ``target`` (written as given, never
    followed here); ``replace`` as in :func:`write_stream`. Whether ``target`` may lead where it
    leads is the caller's rule (an archive's links stay inside the package)."""
    _make_room(directory, name, replace=replace)
    os.symlink(target, name, dir_fd=directory.fd)


class _Frame:
    __slots__ = ("fd", "rel", "todo")

    def __init__(self, rel: str, fd: int, todo: list[str]) -> None:
        self.rel = rel  # below the walk's top, "" for the top itself
        self.fd = fd  # -1 while closed
        self.todo = todo  # the subdirectories still to enter, the next one last


def walk_tree(
    directory: Dir,
    enter: Callable[[str, Dir, tuple[DirEntry, ...]], Iterable[str]],
    *,
    leave: Callable[[Dir, str], None] | None = None,
    deadline: float | None = None,
) -> None:
    """Walk the tree below ``directory`` top-down without following a link and without recursion.

    ``enter(rel, here, entries)`` is called for every directory (``rel`` below the top, ``""`` for
    the top; ``here`` open only during the call; ``entries`` as :func:`list_dir` gives them) and
    returns the names of the subdirectories to walk next. ``leave(parent, name)`` is called when
    the walk of ``parent``'s subdirectory ``name`` is done (to remove it). A subdirectory that is
    gone, or is no longer a directory, when its turn comes is skipped. At most ``_WALK_HELD``
    directories and one per ``_WALK_SPACING`` levels above them are open at once.
    """
    stack: list[_Frame] = []

    def here(frame: _Frame) -> Dir:
        return Dir(frame.fd, os.path.join(directory.path, frame.rel) if frame.rel else directory.path)

    def reopen(index: int) -> None:
        frame = stack[index]
        above = next(f for f in reversed(stack[:index]) if f.fd >= 0)  # the top's is always open
        rest = frame.rel[len(above.rel) + 1 :] if above.rel else frame.rel
        opened = _descend(above.fd, here(above).path, rest, create=False, mode=0o755)
        frame.fd, opened.fd = opened.fd, -1

    def visit(fd: int, rel: str) -> None:
        frame = _Frame(rel, fd, [])
        stack.append(frame)  # from here on the frame's descriptor is closed by the finally below
        out = len(stack) - _WALK_HELD - 1
        if out > 0 and out % _WALK_SPACING and stack[out].fd >= 0:
            os.close(stack[out].fd)
            stack[out].fd = -1
        names = list(enter(rel, here(frame), list_dir(fd, deadline=deadline)))
        frame.todo = names[::-1]

    try:
        visit(os.dup(directory.fd), "")
        while stack:
            frame = stack[-1]
            if not frame.todo:
                stack.pop()
                if frame.fd >= 0:
                    os.close(frame.fd)
                if leave is not None and stack:
                    if stack[-1].fd < 0:
                        reopen(len(stack) - 1)
                    leave(here(stack[-1]), frame.rel.rpartition("/")[2])
                continue
            name = frame.todo.pop()
            check_deadline(deadline, os.path.join(directory.path, frame.rel, name))
            if frame.fd < 0:
                reopen(len(stack) - 1)
            try:
                child = os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=frame.fd)
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError as exc:
                if exc.errno == errno.ELOOP:  # replaced by a link since the listing: not entered
                    continue
                raise
            visit(child, f"{frame.rel}/{name}" if frame.rel else name)
    finally:
        for frame in stack:
            if frame.fd >= 0:
                os.close(frame.fd)


def tree_bytes(directory: Dir, *, deadline: float | None = None) -> int:
    """The bytes of everything but directories below ``directory`` (their sizes, not the disk
    blocks), no link followed; an entry that vanishes while it is counted counts nothing (a tree
    another program is writing: git's temporary files)."""
    total = 0

    def enter(_rel: str, here: Dir, entries: tuple[DirEntry, ...]) -> list[str]:
        nonlocal total
        for entry in entries:
            if entry.kind != "dir":
                with contextlib.suppress(OSError):
                    total += here.stat(entry.name).st_size
        return [e.name for e in entries if e.kind == "dir"]

    walk_tree(directory, enter, deadline=deadline)
    return total


def remove_tree(directory: Dir, name: str, *, deadline: float | None = None) -> bool:
    """Remove ``name`` from ``directory`` however deep a tree it is (no recursion, unlike
    ``shutil.rmtree``; no link followed, a link removed as itself): for a tree flatten is making,
    a package refused half-written. Returns False when ``name`` was already gone."""
    kind = directory.kind(name)
    if kind == "missing":
        return False
    if kind != "dir":
        return directory.unlink(name)

    def enter(_rel: str, here: Dir, entries: tuple[DirEntry, ...]) -> list[str]:
        for entry in entries:
            if entry.kind != "dir":
                here.unlink(entry.name)
        return [e.name for e in entries if e.kind == "dir"]

    def leave(parent: Dir, child: str) -> None:
        os.rmdir(child, dir_fd=parent.fd)

    with directory.sub(name) as top:
        walk_tree(top, enter, leave=leave, deadline=deadline)
    os.rmdir(name, dir_fd=directory.fd)
    return True


def _not_owned(path: str) -> Refused:
    return Refused(
        errno.EPERM,
        "not-owned",
        path,
        "it does not carry flatten's mark, so flatten did not make it and leaves it alone",
        "Remove it yourself if it should go.",
    )


def remove_owned(directory: Dir, name: str, *, owned: Callable[[Dir], bool] | None = None) -> bool:
    """Remove ``name`` from ``directory``: a file or symlink (the link, never its target), or a
    directory tree by descriptors (``shutil.rmtree(dir_fd=)`` never follows a link inside).

    A directory is removed only when ``owned`` (given it opened) says it carries its owner's mark;
    otherwise :class:`Refused`. Returns False when ``name`` was already gone.
    """
    kind = directory.kind(name)
    if kind == "missing":
        return False
    if kind != "dir":
        return directory.unlink(name)
    if owned is not None:
        with directory.sub(name) as sub:
            if not owned(sub):
                raise _not_owned(directory.join(name))
    errors: list[OSError] = []

    def onerror(
        _func: object, _path: object, exc_info: tuple[type[BaseException], BaseException, object]
    ) -> None:
        if isinstance(exc_info[1], OSError) and not isinstance(exc_info[1], FileNotFoundError):
            errors.append(exc_info[1])

    import shutil  # here: a replay imports the gate and never removes a tree

    shutil.rmtree(name, dir_fd=directory.fd, onerror=onerror)
    if errors:
        raise errors[0]
    return True


#: The owner named in the cache directory's stamp, and the directories an unstamped cache an
#: earlier flatten made may hold (it is adopted: stamped, when it holds nothing else).
CACHE_OWNER = "flatten's cache: everything here is derived and may be deleted (docs/cache.md)"
CACHE_AREAS = frozenset(
    {"parse", "modules", "emit", "checks", "builds", "commands", "module-keys", "code", "lark", "v1"}
)
CACHE_ADOPT = CACHE_AREAS | {".pruned", ".use.lock"}

#: The Cache Directory Tagging Specification's signature (https://bford.info/cachedir/): backup
#: tools skip a directory holding it, and flatten deletes only in a directory whose tag it wrote.
_CACHEDIR_SIGNATURE = "Signature: 8a477f597d28d172789f06886806bc55\n"
STAMP_NAME = "CACHEDIR.TAG"


def open_owned_root(
    base: str | os.PathLike[str], owner: str, *, create: bool, adopt: frozenset[str] = frozenset()
) -> Dir | None:
    """Open ``base`` as a directory flatten made and stamped for ``owner`` (a ``CACHEDIR.TAG``
    whose second line names it). ``create``: make it and stamp it when it does not exist, is
    empty, or holds real directories named in ``adopt`` and nothing else (what an earlier
    version made before it stamped). Returns None for a directory that is not ``owner``'s (one
    that holds anything else: a home directory or a checkout named by mistake), where nothing is
    written or deleted.
    """
    stamp = f"{_CACHEDIR_SIGNATURE}# {owner}\n".encode()
    shown = os.fspath(base)
    try:
        root = open_dir(shown, create=create, mode=0o700)
    except FileNotFoundError:
        return None
    try:
        try:
            found = root.read(STAMP_NAME, limit=4096)
        except FileNotFoundError:
            found = None
        if found == stamp:
            return root
        others = [
            e
            for e in root.list()
            if not e.name.startswith(f".{STAMP_NAME}.")
            and not (e.kind in ("dir", "file") and e.name in adopt)
        ]
        if found is None and create and not others:
            root.write(STAMP_NAME, stamp)
            return root
        if found is None and any(e.name == STAMP_NAME for e in others):
            # Another build (or a sibling prefetch) stamped the new directory between our read and
            # our listing and may already have made its first entries: read the stamp again.
            with contextlib.suppress(FileNotFoundError):
                if root.read(STAMP_NAME, limit=4096) == stamp:
                    return root
    except OSError:
        root.close()
        raise
    root.close()
    return None


def path_of(directory: Dir, name: str = "") -> Path:
    """The path of ``name`` in ``directory``, for messages and for handing to a reader."""
    return Path(directory.join(name) if name else directory.path)


# -- Trees flatten writes whole: OUT's writer (stages/output.py) and the copies beside a module ----
#
# The output is written into a temporary tree flatten makes beside ``--out`` (or inside it, for a
# mount point) and swapped in by renames. Every step names its files relative to directories
# reached from ``--out``'s parent without following a symlink, so a link planted in OUT
# (``OUT/modules -> ~``) or under one of flatten's temporary names can neither receive an entry
# nor be written, copied or linked through (issue 38; docs/reliability.md, "The gate").

#: The size budget of one file copied into the output from beside a module (templates, scripts,
#: test files, ``*.auto.tfvars.json``): a file larger than this is refused before a byte is read
#: (docs/reliability.md). 1 GiB is four times the largest deployment package AWS Lambda accepts
#: unzipped; a copy this large is almost always a build artefact or a file put there to stall a
#: build (a sparse file of terabytes reads as zeros for ever).
COPY_LIMIT = 1 << 30

_RENAME_EXCHANGE = 2


@contextlib.contextmanager
def _named(directory: Dir, name: str) -> Iterator[None]:
    """An ``OSError`` of a call made relative to ``directory`` names the whole path (a message
    naming only ``name`` would not say where)."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None or exc.filename == name:
            exc.filename = directory.join(name)
        raise


def make_temp_dir(directory: Dir, prefix: str, *, mode: int = 0o700) -> str:
    """Make a new directory named ``prefix`` and random letters in ``directory`` (as
    ``tempfile.mkdtemp`` does, by descriptor) and return its name."""
    for _ in range(100):
        name = prefix + os.urandom(6).hex()
        try:
            with _named(directory, name):
                os.mkdir(name, mode, dir_fd=directory.fd)
        except FileExistsError:
            continue
        return name
    raise FileExistsError(errno.EEXIST, "no free temporary name", directory.join(prefix))


def move(src_dir: Dir, src: str, dst_dir: Dir, dst: str) -> None:
    """Rename ``src`` (in ``src_dir``) to ``dst`` (in ``dst_dir``), never replacing anything:
    ``FileExistsError`` when ``dst`` exists (a symlink there included, which is never followed)."""
    if dst_dir.kind(dst) != "missing":
        raise FileExistsError(errno.EEXIST, "File exists", dst_dir.join(dst))
    with _named(src_dir, src):
        os.rename(src, dst, src_dir_fd=src_dir.fd, dst_dir_fd=dst_dir.fd)


def move_below(base: Dir, src: str, dst: str, *, make_parents: bool = False) -> None:
    """:func:`move` ``base/src`` to ``base/dst`` (relative POSIX paths), every directory on the way
    reached without following a symlink (:class:`Refused` ``symlink`` for a link where a directory
    should be); ``make_parents``: ``dst``'s missing parent directories are made."""
    src_parent, src_name = posixpath.split(src)
    dst_parent, dst_name = posixpath.split(dst)
    with base.sub(src_parent) as s, base.sub(dst_parent, create=make_parents, mode=0o777) as d:
        move(s, src_name, d, dst_name)


def exchange(directory: Dir, a: str, b: str) -> bool:
    """Swap the entries ``a`` and ``b`` of ``directory`` atomically (Linux ``renameat2`` with
    ``RENAME_EXCHANGE``); False where the kernel or file system has no such call, or it failed."""
    # Imported here: ctypes costs every build's start-up 7 ms, and only a rebuild into an
    # existing --out swaps (docs/performance.md, "Start-up").
    import ctypes

    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if renameat2 is None:
        return False
    fd = ctypes.c_int(directory.fd)
    return bool(renameat2(fd, os.fsencode(a), fd, os.fsencode(b), _RENAME_EXCHANGE) == 0)


def _new_file(directory: Dir, name: str) -> int:
    """A descriptor of ``name`` in ``directory``, made or truncated, never through a symlink and
    never a FIFO or device (refused): the file a tree's writer fills."""
    try:
        with _named(directory, name):
            fd = os.open(
                name,
                os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _NOFOLLOW | _NONBLOCK | _CLOEXEC,
                0o666,
                dir_fd=directory.fd,
            )
    except OSError as exc:
        if exc.errno == errno.ELOOP and directory.kind(name) == "link":
            raise _symlink(directory.join(name)) from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _special(directory.join(name), st.st_mode)
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_file(directory: Dir, name: str, data: bytes, *, mode: int | None = None) -> None:
    """Write ``name`` in a directory flatten is making (the tree is the temporary: no file of its
    own), never through a symlink; ``mode``: its permissions (else 0o666 less the umask)."""
    fd = _new_file(directory, name)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if mode is not None:
            os.fchmod(fd, mode)
    finally:
        os.close(fd)


def _fill(fd: int, source: int, shown: str, limit: int, deadline: float | None) -> None:
    copied = 0
    while True:
        check_deadline(deadline, shown)
        try:
            sent = os.sendfile(fd, source, None, min(_CHUNK * 8, limit + 1 - copied) or 1)
        except OSError as exc:  # no sendfile between these files: plain reads and writes
            if exc.errno not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
                raise
            chunk = os.read(source, min(_CHUNK, limit + 1 - copied) or 1)
            sent = len(chunk)
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view) :]
        if not sent:
            return
        copied += sent
        if copied > limit:  # grew after the fstat
            raise _too_large(shown, limit)


def copy_file(
    source: str | os.PathLike[str],
    directory: Dir,
    name: str,
    *,
    mode: Callable[[int], int],
    limit: int = COPY_LIMIT,
    deadline: float | None = None,
    src_dir: Dir | None = None,
) -> None:
    """Copy the regular file ``source`` (under :func:`read_bytes`' rules: a FIFO, device or a
    file over ``limit`` is :class:`Refused` unread) to ``name`` in ``directory``, never through a
    symlink there; ``mode`` gives the copy's permissions from the source's ``st_mode``.
    ``src_dir``: ``source`` is a name in that directory and a symlink there is not followed."""
    if src_dir is None:
        fd_in, st = _open_regular(source, limit=limit, deadline=deadline, inside=None, follow=True)
    else:
        fd_in, st = _open_regular(
            source, limit=limit, deadline=deadline, inside=None, follow=False, dir_fd=src_dir.fd
        )
    try:
        fd = _new_file(directory, name)
        try:
            _fill(fd, fd_in, os.fspath(source), limit, deadline)
            os.fchmod(fd, mode(st.st_mode))
        finally:
            os.close(fd)
    finally:
        os.close(fd_in)


def link_file(src_dir: Dir, src: str, directory: Dir, name: str) -> None:
    """Make ``name`` in ``directory`` the regular file ``src`` of ``src_dir`` is (a hard link;
    neither side's symlink followed), else a copy with its permissions where the file system has
    no hard link between them. A symlink, FIFO or device at ``src`` is :class:`Refused`."""
    st = src_dir.stat(src)
    if not stat.S_ISREG(st.st_mode):
        raise (
            _symlink(src_dir.join(src))
            if stat.S_ISLNK(st.st_mode)
            else _special(src_dir.join(src), st.st_mode)
        )
    try:
        os.link(src, name, src_dir_fd=src_dir.fd, dst_dir_fd=directory.fd, follow_symlinks=False)
    except OSError:  # another file system, or one without hard links
        copy_file(src, directory, name, mode=stat.S_IMODE, limit=1 << 62, src_dir=src_dir)


def set_mode(directory: Dir, mode: int) -> None:
    """Set the permissions of the open ``directory`` itself (by its descriptor)."""
    os.fchmod(directory.fd, mode)
