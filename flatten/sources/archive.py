"""Safe archive extraction: zip and tar (plain, gzip, bzip2, xz), go-getter's decompressors (spec §5.5).

The rule every function follows: nothing is written outside the destination, whatever the
archive says. A member is refused (and the whole extraction fails, naming the member) when its
name is absolute or has a ``..`` segment, when it is a symbolic or hard link whose target leaves
the destination, when it is a device, FIFO, socket or sparse file, when its name or link target
is not UTF-8, holds a control character or is longer than 4,096 bytes, or when the archive goes
past the :class:`~flatten.sources.env.ExtractLimits` on member count or total size (counted as
bytes are written, so a lying header does not help). Modes keep only the permission bits, less
group and world write.

Memory stays bounded whatever the headers claim: every header and name is checked before it is
read (docs/reliability.md, "Limits"). Python's tarfile reads a GNU long name or a pax header
whole, so its size is checked first (at most 1 MiB, Go's archive/tar limit); zipfile reads the
whole central directory and builds a record per entry, so the entry count and the size of the
central directory (and each entry's name length) are read from the archive first. A name shown
in a message is cut to 200 characters.
"""

from __future__ import annotations

import lzma
import os
import posixpath
import re
import shutil
import stat
import struct
import tarfile
import zipfile
import zlib
from pathlib import Path
from typing import IO, Any, BinaryIO, Self

from flatten.sources.env import ExtractLimits
from flatten.sources.package import FetchError, SizeBudget

__all__ = ["ARCHIVE_EXTENSIONS", "archive_format", "check_package_tree", "copy_tree", "extract_archive"]

#: Archive formats by file-name extension, in go-getter's order of preference (longest first).
ARCHIVE_EXTENSIONS = (
    ("tar.gz", "tar.gz"),
    ("tgz", "tar.gz"),
    ("tar.bz2", "tar.bz2"),
    ("tbz2", "tar.bz2"),
    ("tar.xz", "tar.xz"),
    ("txz", "tar.xz"),
    ("zip", "zip"),
    ("tar", "tar"),
)
_CHUNK = 1 << 16

#: A GNU long name or long link, or a pax header, may hold at most this many bytes (Go's
#: archive/tar ``maxSpecialFileSize``); all pax global headers of one archive together as well.
MAX_HEADER = 1 << 20
#: Extended headers (long name, long link, pax) one member may have in a row.
MAX_HEADER_CHAIN = 8
#: A member name or link target may hold at most this many bytes (Linux's PATH_MAX).
MAX_NAME = 4096
#: A path in a package may have at most this many levels, the file name included. os.walk and
#: shutil.rmtree (3.11) recurse once per level under a recursion limit of 1,000.
MAX_DEPTH = 256
#: The central directory of a zip archive may hold at most this many bytes (50,000 entries with
#: names of 1,000 bytes need 52 MB).
MAX_CENTRAL_DIRECTORY = 64 << 20
_SHOWN = 200
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def shown(text: str) -> str:
    """Return ``text`` quoted for a message, cut to 200 characters with an ellipsis.

    >>> shown("ab"), len(shown("a" * 5000))
    ("'ab'", 205)
    """
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN] + "...")


def archive_format(name: str) -> str | None:
    """Return the archive format a path or ``archive=`` value names, or None.

    >>> archive_format("/v1/x.tgz"), archive_format("zip"), archive_format("x.txt")
    ('tar.gz', 'zip', None)
    """
    lowered = name.lower()
    for ext, fmt in ARCHIVE_EXTENSIONS:
        if lowered == ext or lowered.endswith("." + ext):
            return fmt
    return None


# What the decompressors and parsers raise on a damaged or unsupported archive. Found by scripts/fuzz:
# zipfile's NotImplementedError (an unknown compression method) and RuntimeError (an encrypted
# member), lzma's LZMAError on a corrupt xz stream.
_CORRUPT = (
    OSError,
    EOFError,
    tarfile.TarError,
    zipfile.BadZipFile,
    KeyError,
    ValueError,
    NotImplementedError,
    RuntimeError,
    OverflowError,
    struct.error,
    lzma.LZMAError,
    zlib.error,
)


def extract_archive(
    archive: Path, fmt: str, dest: Path, *, limits: ExtractLimits, budget: SizeBudget | None = None
) -> None:
    """Extract ``archive`` (format ``fmt``, see :func:`archive_format`) into the empty directory ``dest``.

    Every byte written is also taken from ``budget``, the build's (all its packages together).
    Raises :class:`FetchError` naming the offending member when anything is refused; ``dest``
    may then hold a partial tree, which the caller discards.
    """
    dest.mkdir(parents=True, exist_ok=True)
    state = _State(dest.resolve(), limits, budget or SizeBudget(limits.max_bytes))
    try:
        if fmt == "zip":
            _extract_zip(archive, state)
            _check_symlinks(state.dest)
        else:
            mode = {"tar": "r:", "tar.gz": "r:gz", "tar.bz2": "r:bz2", "tar.xz": "r:xz"}[fmt]
            _count_tar(archive, mode, state)  # before anything is written, as zip's directory is
            _extract_tar(archive, mode, state)
        _check_symlinks(state.dest)
    except FetchError:
        raise
    except _CORRUPT as exc:
        # The text of an OSError holds the path, which a hostile archive can make long.
        text = str(exc)
        text = text if len(text) <= 2 * _SHOWN else text[: 2 * _SHOWN] + "..."
        raise FetchError(f"error decompressing {fmt} archive: {text}") from None


class _State:
    def __init__(self, dest: Path, limits: ExtractLimits, budget: SizeBudget) -> None:
        self.dest = dest
        self.limits = limits
        self.budget = budget
        self.files = 0
        self.bytes = 0

    def count(self, name: str) -> None:
        self.files += 1
        if self.files > self.limits.max_files:
            raise FetchError(
                f"archive has more than {self.limits.max_files} members (at {shown(name)}); "
                "refusing to extract it"
            )

    def target(self, name: str) -> tuple[str, Path]:
        """Return the cleaned member name and its path under the destination, or refuse it."""
        _check_text(name, f"archive member {shown(name)} has a name that")
        raw = name.replace("\\", "/")
        if raw.startswith("/") or (len(raw) > 1 and raw[1] == ":"):
            raise FetchError(f"archive member {shown(name)} has an absolute path; refusing to extract it")
        parts = [p for p in raw.split("/") if p not in ("", ".")]
        if ".." in parts:
            raise FetchError(
                f"archive member {shown(name)} escapes the destination with '..'; refusing to extract it"
            )
        if not parts:
            return "", self.dest
        if len(parts) > MAX_DEPTH:
            raise FetchError(
                f"archive member {shown(name)} is more than {MAX_DEPTH} directories deep; refusing it"
            )
        clean = "/".join(parts)
        path = self.dest.joinpath(*parts)
        parent = path.parent.resolve()
        if parent != self.dest and self.dest not in parent.parents:
            raise FetchError(
                f"archive member {shown(name)} would be written outside the destination through a link"
            )
        return clean, path

    def check_link(self, name: str, clean: str, target: str, *, hard: bool) -> str:
        """Return the link target's path relative to the destination, or refuse the member."""
        t = target.replace("\\", "/")
        kind = "hard link" if hard else "symbolic link"
        _check_text(target, f"archive member {shown(name)} is a {kind} whose target")
        if t.startswith("/") or (len(t) > 1 and t[1] == ":"):
            raise FetchError(
                f"archive member {shown(name)} is a {kind} to the absolute path {shown(target)}; refusing it"
            )
        base = "" if hard else posixpath.dirname(clean)
        joined = posixpath.normpath(posixpath.join(base, t))
        if joined == ".." or joined.startswith("../") or not t:
            raise FetchError(
                f"archive member {shown(name)} is a {kind} to {shown(target)}, outside the destination; "
                "refusing it"
            )
        return "" if joined == "." else joined

    def write(self, name: str, path: Path, src: IO[bytes], mode: int) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink() or path.exists():
            if path.is_dir() and not path.is_symlink():
                raise FetchError(f"archive member {shown(name)} replaces a directory; refusing it")
            path.unlink()
        with open(path, "xb") as out:
            while chunk := src.read(_CHUNK):
                self.bytes += len(chunk)
                if self.bytes > self.limits.max_bytes:
                    raise FetchError(
                        f"archive expands to more than {self.limits.max_bytes} bytes (at {shown(name)}); "
                        "refusing to extract it"
                    )
                self.budget.take(len(chunk), f"archive member {shown(name)}")
                out.write(chunk)
        # Never setuid/setgid/sticky, never writable by group or others (an archive may say 4777).
        os.chmod(path, (mode & 0o755) | 0o600 if mode else 0o644)


def _check_text(text: str, what: str) -> None:
    """Refuse a member name or link target that could not be written into the output as it is."""
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:  # tarfile keeps bytes that are not UTF-8 as lone surrogates
        raise FetchError(f"{what} is not valid UTF-8; refusing it") from None
    if _CONTROL.search(text):
        raise FetchError(f"{what} holds a control character (such as a newline); refusing it")
    if size > MAX_NAME:
        raise FetchError(f"{what} is longer than {MAX_NAME} bytes; refusing it")


# -- tar ------------------------------------------------------------------------------------------

_EXTENDED = frozenset(
    {
        tarfile.GNUTYPE_LONGNAME,
        tarfile.GNUTYPE_LONGLINK,
        tarfile.XHDTYPE,
        tarfile.XGLTYPE,
        tarfile.SOLARIS_XHDTYPE,
    }
)


class _TarFile(tarfile.TarFile):
    """A TarFile that keeps, per archive, what its extended headers have used so far."""

    def __init__(self, *args: Any, max_bytes: int = 1 << 30, **kwargs: Any) -> None:
        self.header_chain = 0  # extended headers read in a row, before the member they describe
        self.global_bytes = 0  # pax global headers accumulate in one dict for the whole archive
        self.header_budget = max_bytes  # extended headers count against the expansion limit
        super().__init__(*args, **kwargs)


class _TarInfo(tarfile.TarInfo):
    """A TarInfo whose extended headers are checked before tarfile reads them (it reads them whole).

    ``fromtarfile`` is CPython's own (``Lib/tarfile.py``) with the checks put between reading the
    512-byte header and processing it; a long name or pax header processes the header after it by
    calling ``fromtarfile`` again, which is how a chain of them is counted. Sparse members are
    refused: their maps are read whole too (GNU ``S`` extension blocks, pax 1.0 maps), and
    Terraform modules do not hold sparse files.
    """

    @classmethod
    def fromtarfile(cls, tf: tarfile.TarFile) -> Self:
        assert isinstance(tf, _TarFile) and tf.fileobj is not None
        buf = tf.fileobj.read(512)
        obj = cls.frombuf(buf, tf.encoding or "utf-8", tf.errors)
        obj.offset = tf.fileobj.tell() - 512
        if obj.type in _EXTENDED:
            what = "pax header" if obj.type in (tarfile.XHDTYPE, tarfile.XGLTYPE) else "GNU long name"
            if obj.size > MAX_HEADER:
                raise FetchError(
                    f"archive has a {what} of {obj.size} bytes, more than {MAX_HEADER}; "
                    "refusing to extract it"
                )
            tf.header_budget -= obj.size
            if tf.header_budget < 0:
                raise FetchError("archive headers expand to more than the size limit; refusing to extract it")
            if obj.type == tarfile.XGLTYPE:
                tf.global_bytes += obj.size
                if tf.global_bytes > MAX_HEADER:
                    raise FetchError(
                        f"archive has pax global headers of more than {MAX_HEADER} bytes; "
                        "refusing to extract it"
                    )
            if tf.header_chain >= MAX_HEADER_CHAIN:
                raise FetchError(
                    f"archive has more than {MAX_HEADER_CHAIN} extended headers in a row; "
                    "refusing to extract it"
                )
        elif obj.type == tarfile.GNUTYPE_SPARSE:
            obj._refuse_sparse(obj.name)
        tf.header_chain += 1
        try:
            member: Self = getattr(obj, "_proc_member")(tf)  # noqa: B009 (not in typeshed)
        finally:
            tf.header_chain -= 1
        return member

    def _refuse_sparse(self, name: str) -> None:
        raise FetchError(f"archive member {shown(name)} is a sparse file; refusing it")

    # tarfile's handlers of sparse maps, called from its pax and GNU header processing.
    def _proc_gnusparse_00(self, next: tarfile.TarInfo, *args: object) -> None:
        self._refuse_sparse(next.name)

    def _proc_gnusparse_01(self, next: tarfile.TarInfo, *args: object) -> None:
        self._refuse_sparse(next.name)

    def _proc_gnusparse_10(self, next: tarfile.TarInfo, *args: object) -> None:
        self._refuse_sparse(next.name)


def _count_tar(archive: Path, mode: str, state: _State) -> None:
    """Refuse a tar with more than ``max_files`` members before extracting any: a tar has no
    directory, so its headers are read once (bodies skipped) and the members counted. Creating
    files is what costs (100,000 members took 305 s to be refused at the 50,001st)."""
    opened = _TarFile.open(archive, mode, tarinfo=_TarInfo, max_bytes=state.limits.max_bytes)  # type: ignore[call-overload]
    count = 0
    with opened as tar:
        assert isinstance(tar, _TarFile)
        while tar.next() is not None:
            getattr(tar, "members").clear()  # noqa: B009 (not in typeshed)
            count += 1
            if count > state.limits.max_files:
                raise FetchError(
                    f"archive has more than {state.limits.max_files} members; refusing to extract it"
                )


def _extract_tar(archive: Path, mode: str, state: _State) -> None:
    opened = _TarFile.open(archive, mode, tarinfo=_TarInfo, max_bytes=state.limits.max_bytes)  # type: ignore[call-overload]
    with opened as tar:
        assert isinstance(tar, _TarFile)
        # Members are taken one by one with next(), and the list tarfile keeps of them is emptied
        # each time: it would hold every member (and its pax headers) until the end.
        while (member := tar.next()) is not None:
            getattr(tar, "members").clear()  # noqa: B009 (not in typeshed)
            _extract_tar_member(tar, member, state)


def _extract_tar_member(tar: tarfile.TarFile, member: tarfile.TarInfo, state: _State) -> None:
    state.count(member.name)
    clean, path = state.target(member.name)
    if member.isdir():
        if clean:
            path.mkdir(parents=True, exist_ok=True)
        return
    if not clean:
        raise FetchError(f"archive member {shown(member.name)} has no name; refusing it")
    if member.issym():
        state.check_link(member.name, clean, member.linkname, hard=False)
        path.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(member.linkname, path)
    elif member.islnk():
        rel = state.check_link(member.name, clean, member.linkname, hard=True)
        source = state.dest.joinpath(*rel.split("/")) if rel else state.dest
        real = source.resolve()
        if not source.is_file() or (real != state.dest and state.dest not in real.parents):
            raise FetchError(
                f"archive member {shown(member.name)} is a hard link to {shown(member.linkname)}, which is "
                "not a file extracted earlier; refusing it"
            )
        with open(real, "rb") as src:
            state.write(member.name, path, src, member.mode)
    elif member.isreg():
        fileobj = tar.extractfile(member)
        assert fileobj is not None
        with fileobj:
            state.write(member.name, path, fileobj, member.mode)
    else:
        raise FetchError(
            f"archive member {shown(member.name)} is a device, FIFO or other special file; refusing it"
        )


# -- zip ------------------------------------------------------------------------------------------

_EOCD = struct.Struct("<4s4H2LH")  # end of central directory record
_EOCD64_LOCATOR = struct.Struct("<4sLQL")
_EOCD64 = struct.Struct("<4sQ2H2L4Q")
_CENTRAL_ENTRY = struct.Struct("<4s6H3L5H2L")


def _check_central_directory(fp: BinaryIO, limits: ExtractLimits) -> None:
    """Refuse a zip whose central directory is too large, before zipfile reads it.

    zipfile reads the whole central directory into memory and builds a ZipInfo per entry, so
    its size, its number of entries and each entry's name length are checked here first, found
    the way zipfile finds them (the end record in the last 64 KiB, its zip64 form, the offset
    corrected for data prepended to the archive). What this cannot parse is left to zipfile,
    which then fails on it too.
    """
    fp.seek(0, os.SEEK_END)
    file_size = fp.tell()
    tail_start = max(0, file_size - (_EOCD.size + 0xFFFF))
    fp.seek(tail_start)
    tail = fp.read()
    pos = len(tail) - _EOCD.size
    if not (pos >= 0 and tail[pos : pos + 4] == b"PK\x05\x06" and tail[-2:] == b"\0\0"):
        pos = tail.rfind(b"PK\x05\x06")
    if pos < 0 or pos + _EOCD.size > len(tail):
        return
    _, _, _, _, entries, size, _, _ = _EOCD.unpack_from(tail, pos)
    location = tail_start + pos
    start = location - size  # where zipfile looks: the end record minus the directory's size
    if location >= _EOCD64_LOCATOR.size + _EOCD64.size:
        fp.seek(location - _EOCD64_LOCATOR.size)
        sig = _EOCD64_LOCATOR.unpack(fp.read(_EOCD64_LOCATOR.size))[0]
        if sig == b"PK\x06\x07":
            fp.seek(location - _EOCD64_LOCATOR.size - _EOCD64.size)
            record = _EOCD64.unpack(fp.read(_EOCD64.size))
            if record[0] == b"PK\x06\x06":
                entries, size = record[7], record[8]
                start = location - _EOCD64_LOCATOR.size - _EOCD64.size - size
    if entries > limits.max_files:
        raise FetchError(
            f"archive has more than {limits.max_files} members ({entries}); refusing to extract it"
        )
    if size > MAX_CENTRAL_DIRECTORY:
        raise FetchError(
            f"archive has a central directory of {size} bytes, more than {MAX_CENTRAL_DIRECTORY}; "
            "refusing to extract it"
        )
    if start < 0:
        return
    fp.seek(start)
    count = 0
    read = 0
    while read < size:
        head = fp.read(_CENTRAL_ENTRY.size)
        if len(head) != _CENTRAL_ENTRY.size or head[:4] != b"PK\x01\x02":
            return
        fields = _CENTRAL_ENTRY.unpack(head)
        name_len, extra_len, comment_len = fields[10], fields[11], fields[12]
        count += 1
        if count > limits.max_files:
            raise FetchError(f"archive has more than {limits.max_files} members; refusing to extract it")
        if name_len > MAX_NAME:
            name = fp.read(_SHOWN).decode("utf-8", "replace")
            raise FetchError(
                f"archive member {shown(name + '...')} has a name that is longer than {MAX_NAME} bytes "
                f"({name_len}); refusing it"
            )
        fp.seek(name_len + extra_len + comment_len, os.SEEK_CUR)
        read += _CENTRAL_ENTRY.size + name_len + extra_len + comment_len


def _zip_name(info: zipfile.ZipInfo) -> str:
    """Return the member's name as Terraform writes it: its bytes, which must be UTF-8."""
    if info.flag_bits & 0x800:
        return info.orig_filename  # zipfile decoded it as UTF-8 (it fails on bytes that are not)
    raw = info.orig_filename.encode("cp437")  # zipfile decoded the bytes as cp437: undo that
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        shown_name = raw.decode("utf-8", "replace")
        raise FetchError(
            f"archive member {shown(shown_name)} has a name that is not valid UTF-8; refusing it"
        ) from None


def _extract_zip(archive: Path, state: _State) -> None:
    with open(archive, "rb") as fp:
        _check_central_directory(fp, state.limits)
        with zipfile.ZipFile(fp) as zf:
            for info in zf.infolist():
                _extract_zip_member(zf, info, state)


def _extract_zip_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, state: _State) -> None:
    name = _zip_name(info)
    state.count(name)
    clean, path = state.target(name)
    unix_mode = info.external_attr >> 16
    if name.endswith("/"):
        if clean:
            path.mkdir(parents=True, exist_ok=True)
        return
    if not clean:
        raise FetchError(f"archive member {shown(name)} has no name; refusing it")
    kind = stat.S_IFMT(unix_mode)
    if kind == stat.S_IFLNK:
        # The link's target is the member's content: read no more of it than a target may hold.
        with zf.open(info) as src:
            data = src.read(MAX_NAME + 1)
        if len(data) > MAX_NAME:
            raise FetchError(
                f"archive member {shown(name)} is a symbolic link whose target is longer than "
                f"{MAX_NAME} bytes; refusing it"
            )
        try:
            target = data.decode("utf-8")
        except UnicodeDecodeError:
            raise FetchError(
                f"archive member {shown(name)} is a symbolic link whose target is not valid UTF-8; "
                "refusing it"
            ) from None
        state.check_link(name, clean, target, hard=False)
        path.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, path)
        return
    if kind not in (0, stat.S_IFREG):
        raise FetchError(f"archive member {shown(name)} is a device, FIFO or other special file; refusing it")
    with zf.open(info) as src:
        state.write(name, path, src, stat.S_IMODE(unix_mode) or 0o644)


def _check_symlinks(dest: Path) -> None:
    """Refuse a tree whose links, followed on disk, lead outside it (``d -> .`` then ``e -> d/..``)."""
    for current, dirs, files in os.walk(dest):
        for name in dirs + files:
            path = Path(current) / name
            if path.is_symlink():
                # realpath, not Path.resolve: a link loop (found by scripts/fuzz) makes resolve raise
                # RuntimeError; a loop cannot lead outside, and the layout leaves it out with a warning.
                real = Path(os.path.realpath(path))
                if real != dest and dest not in real.parents:
                    rel = path.relative_to(dest).as_posix()
                    raise FetchError(
                        f"archive member {shown(rel)} is a symbolic link leading outside the destination"
                    )


def check_package_tree(dest: Path) -> None:
    """Refuse a package written by another tool (git) whose names or depth flatten cannot handle.

    The same rules as for archive members: every name UTF-8 without control characters, at most
    :data:`MAX_DEPTH` directories deep. The walk is iterative; a refused tree is removed here,
    bottom-up, because ``shutil.rmtree`` would recurse past Python's limit on a deep one.
    """
    stack = [(dest, 0)]
    try:
        while stack:
            current, depth = stack.pop()
            with os.scandir(current) as entries:
                for entry in entries:
                    rel = Path(entry.path).relative_to(dest).as_posix()
                    if entry.name == ".git" and depth == 0:
                        continue
                    _check_text(entry.name, f"package file {shown(rel)} has a name that")
                    if entry.is_dir(follow_symlinks=False):
                        if depth + 1 >= MAX_DEPTH:
                            raise FetchError(
                                f"package directory {shown(rel)} is more than {MAX_DEPTH} directories deep; "
                                "refusing the package"
                            )
                        stack.append((Path(entry.path), depth + 1))
    except FetchError:
        _remove_tree(dest)
        raise


def _remove_tree(top: Path) -> None:
    """Remove a directory tree of any depth without recursion (files first, then directories)."""
    dirs: list[Path] = []
    stack = [top]
    while stack:
        current = stack.pop()
        dirs.append(current)
        with os.scandir(current) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
                else:
                    os.unlink(entry.path)
    for directory in reversed(dirs):
        os.rmdir(directory)


def copy_tree(src: Path, dest: Path) -> None:
    """Copy a local package directory (a ``file://`` source) into ``dest``, keeping symlinks."""
    shutil.copytree(src, dest, symlinks=True, ignore=shutil.ignore_patterns(".git"))
