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

import contextlib
import errno
import lzma
import os
import posixpath
import re
import stat
import struct
import tarfile
import zipfile
import zlib
from pathlib import Path
from typing import IO, Any, BinaryIO, Self

from flatten import gate
from flatten.lang.oserror import Refused, describe_os_error
from flatten.sources.env import ExtractLimits
from flatten.sources.package import FetchError, SizeBudget

__all__ = ["ARCHIVE_EXTENSIONS", "archive_format", "check_package_tree", "extract_archive"]

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
    archive: Path,
    fmt: str,
    dest: Path,
    *,
    limits: ExtractLimits,
    budget: SizeBudget | None = None,
    deadline: float | None = None,
    source_dir: gate.Dir | None = None,
) -> None:
    """Extract ``archive`` (format ``fmt``, see :func:`archive_format`) into the empty directory ``dest``.

    Every byte written is also taken from ``budget``, the build's (all its packages together);
    ``deadline`` (a ``time.monotonic()`` value) bounds the reading and writing. ``source_dir``:
    ``archive`` is a name in that open directory (a download flatten just wrote), not followed
    if a link. The archive is read through the gate (a regular file, of at most twice
    ``limits.max_bytes`` and 64 MiB: a FIFO or ``/dev/zero`` named as an archive is refused
    unread), and
    every member is written through it, relative to ``dest``'s descriptor (flatten/gate.py).
    Raises :class:`FetchError` naming the offending member when anything is refused; ``dest``
    may then hold a partial tree, which the caller discards.
    """
    try:
        with contextlib.ExitStack() as stack:
            top = stack.enter_context(gate.open_dir(dest, create=True))
            budget = budget or SizeBudget(limits.max_bytes)
            state = _State(top, os.path.realpath(dest), limits, budget, deadline)
            stack.callback(state.close)

            # The archive file's own budget: what it may expand to, twice (a stored zip holds its
            # members as they are, with headers), and room for a full zip directory or 50,000 tar
            # headers; a larger file could only be refused later, after being read.
            size = 2 * limits.max_bytes + MAX_CENTRAL_DIRECTORY

            def opened() -> BinaryIO:
                if source_dir is None:
                    reader = gate.open_read(archive, limit=size, deadline=deadline)
                else:
                    reader = gate.open_read(
                        archive, limit=size, deadline=deadline, follow=False, dir_fd=source_dir.fd
                    )
                return stack.enter_context(reader)

            if fmt == "zip":
                _extract_zip(opened(), state)
            else:
                mode = {"tar": "r:", "tar.gz": "r:gz", "tar.bz2": "r:bz2", "tar.xz": "r:xz"}[fmt]
                _count_tar(opened(), mode, state)  # before anything is written, as zip's directory is
                _extract_tar(opened(), mode, state)
            _check_symlinks(state)
    except FetchError:
        raise
    except Refused as exc:
        if exc.reason == "deadline":
            raise FetchError(
                f"the {fmt} archive was not extracted within the time limit of the build's downloads "
                "(FLATTEN_DOWNLOAD_TIMEOUT); refusing the rest of it"
            ) from None
        raise FetchError(
            describe_os_error(exc, doing=f"extract the {fmt} archive", path=_cut(exc.filename), reading=True)
        ) from None
    except _CORRUPT as exc:
        if isinstance(exc, OSError) and exc.errno is not None:  # the disk, not the archive's data
            raise FetchError(
                describe_os_error(exc, doing=f"extract the {fmt} archive", path=_cut(exc.filename))
            ) from None
        # The text of an error may hold a member's name, which a hostile archive can make long.
        text = str(exc)
        text = text if len(text) <= 2 * _SHOWN else text[: 2 * _SHOWN] + "..."
        raise FetchError(f"error decompressing {fmt} archive: {text}") from None


def _cut(path: object) -> str | None:
    """A path for a message, cut to 200 characters: a hostile archive makes its members' names
    as long as the file system allows (ENAMETOOLONG names the whole path)."""
    if path is None:
        return None
    text = os.fsdecode(path) if isinstance(path, bytes | str | os.PathLike) else str(path)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "..."


class _State:
    """One extraction: the destination's open directory, the limits, what was used of them."""

    def __init__(
        self, dest: gate.Dir, real: str, limits: ExtractLimits, budget: SizeBudget, deadline: float | None
    ) -> None:
        self.dest = dest
        self.real = real  # where dest's links are checked to lead (``_check_symlinks``)
        self.limits = limits
        self.budget = budget
        self.deadline = deadline
        self.files = 0
        self.bytes = 0
        # The directory of the last member, kept open: an archive lists a directory's files
        # together, and reaching a directory again costs a descent one component at a time.
        self._last: tuple[str, gate.Dir] | None = None

    def close(self) -> None:
        if self._last is not None:
            self._last[1].close()
            self._last = None

    def count(self, name: str) -> None:
        self.files += 1
        if self.files > self.limits.max_files:
            raise FetchError(
                f"archive has more than {self.limits.max_files} members (at {shown(name)}); "
                "refusing to extract it"
            )

    def target(self, name: str) -> str:
        """Return the cleaned member name (relative to the destination, "" for it), or refuse it."""
        _check_text(name, f"archive member {shown(name)} has a name that")
        raw = name.replace("\\", "/")
        if raw.startswith("/") or (len(raw) > 1 and raw[1] == ":"):
            raise FetchError(f"archive member {shown(name)} has an absolute path; refusing to extract it")
        parts = [p for p in raw.split("/") if p not in ("", ".")]
        if ".." in parts:
            raise FetchError(
                f"archive member {shown(name)} escapes the destination with '..'; refusing to extract it"
            )
        if len(parts) > MAX_DEPTH:
            raise FetchError(
                f"archive member {shown(name)} is more than {MAX_DEPTH} directories deep; refusing it"
            )
        return "/".join(parts)

    def directory(self, name: str, rel: str) -> gate.Dir:
        """The directory ``rel`` of the destination (made as needed), reached without following a
        link: a member is never written through one, even a link the archive made inside."""
        if self._last is not None and self._last[0] == rel:
            return self._last[1]
        self.close()
        try:
            found = self.dest.sub(rel, create=True)
        except Refused as exc:
            if exc.reason != "symlink":
                raise
            link = os.path.relpath(exc.filename, self.dest.path)
            raise FetchError(
                f"archive member {shown(name)} would be written through the symbolic link {shown(link)} "
                "(flatten writes no member through a link, as one could lead outside the destination); "
                "refusing it"
            ) from None
        except (NotADirectoryError, FileExistsError):
            raise FetchError(
                f"archive member {shown(name)} is inside {shown(rel)}, which is not a directory in the "
                "archive; refusing it"
            ) from None
        self._last = (rel, found)
        return found

    def place(self, name: str, clean: str) -> tuple[gate.Dir, str]:
        """The open directory a member goes into and its own name there."""
        parent, _, base = clean.rpartition("/")
        return self.directory(name, parent), base

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

    def symlink(self, name: str, clean: str, target: str) -> None:
        self.check_link(name, clean, target, hard=False)
        directory, base = self.place(name, clean)
        try:
            gate.make_symlink(directory, base, target, replace=True)
        except IsADirectoryError:
            raise FetchError(f"archive member {shown(name)} replaces a directory; refusing it") from None

    def hard_link(self, name: str, clean: str, target: str, mode: int) -> None:
        """A hard link is written as a copy of the regular file extracted earlier that it names."""
        rel = self.check_link(name, clean, target, hard=True)
        parent, _, base = rel.rpartition("/")
        with contextlib.ExitStack() as stack:
            try:
                if not base:
                    raise IsADirectoryError(errno.EISDIR, "Is a directory")
                source = stack.enter_context(self.dest.sub(parent))
                src = stack.enter_context(
                    gate.open_read(base, limit=self.limits.max_bytes, follow=False, dir_fd=source.fd)
                )
            except OSError:  # missing, a link, a directory, a device: not what the archive wrote
                raise FetchError(
                    f"archive member {shown(name)} is a hard link to {shown(target)}, which is not a file "
                    "extracted earlier; refusing it"
                ) from None
            self.write(name, clean, src, mode)

    def write(self, name: str, clean: str, src: IO[bytes], mode: int) -> None:
        directory, base = self.place(name, clean)
        what = f"archive member {shown(name)}"
        mine = self.limits.max_bytes - self.bytes  # this archive's expansion limit
        build = self.budget.remaining()  # the build's, all its packages together
        try:
            # Never setuid/setgid/sticky, never writable by group or others (an archive may say 4777).
            size = gate.write_stream(
                directory,
                base,
                src.read,
                limit=max(0, min(mine, build)),
                deadline=self.deadline,
                mode=(mode & 0o755) | 0o600 if mode else 0o644,
                replace=True,
            )
        except IsADirectoryError:
            raise FetchError(f"{what} replaces a directory; refusing it") from None
        except Refused as exc:
            if exc.reason != "too-large":
                raise
            if mine <= build:
                raise FetchError(
                    f"archive expands to more than {self.limits.max_bytes} bytes (at {shown(name)}); "
                    "refusing to extract it"
                ) from None
            self.budget.take(build + 1, what)  # raises the build's message: past its limit
            raise
        self.bytes += size
        self.budget.take(size, what)


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


def _count_tar(archive: BinaryIO, mode: str, state: _State) -> None:
    """Refuse a tar with more than ``max_files`` members before extracting any: a tar has no
    directory, so its headers are read once (bodies skipped) and the members counted. Creating
    files is what costs (100,000 members took 305 s to be refused at the 50,001st)."""
    opened = _TarFile.open(fileobj=archive, mode=mode, tarinfo=_TarInfo, max_bytes=state.limits.max_bytes)  # type: ignore[call-overload]
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


def _extract_tar(archive: BinaryIO, mode: str, state: _State) -> None:
    opened = _TarFile.open(fileobj=archive, mode=mode, tarinfo=_TarInfo, max_bytes=state.limits.max_bytes)  # type: ignore[call-overload]
    with opened as tar:
        assert isinstance(tar, _TarFile)
        # Members are taken one by one with next(), and the list tarfile keeps of them is emptied
        # each time: it would hold every member (and its pax headers) until the end.
        while (member := tar.next()) is not None:
            getattr(tar, "members").clear()  # noqa: B009 (not in typeshed)
            _extract_tar_member(tar, member, state)


def _extract_tar_member(tar: tarfile.TarFile, member: tarfile.TarInfo, state: _State) -> None:
    state.count(member.name)
    clean = state.target(member.name)
    if member.isdir():
        if clean:
            state.directory(member.name, clean)
        return
    if not clean:
        raise FetchError(f"archive member {shown(member.name)} has no name; refusing it")
    if member.issym():
        state.symlink(member.name, clean, member.linkname)
    elif member.islnk():
        state.hard_link(member.name, clean, member.linkname, member.mode)
    elif member.isreg():
        fileobj = tar.extractfile(member)
        assert fileobj is not None
        with fileobj:
            state.write(member.name, clean, fileobj, member.mode)
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


def _extract_zip(fp: BinaryIO, state: _State) -> None:
    _check_central_directory(fp, state.limits)
    with zipfile.ZipFile(fp) as zf:
        for info in zf.infolist():
            _extract_zip_member(zf, info, state)


def _extract_zip_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, state: _State) -> None:
    name = _zip_name(info)
    state.count(name)
    clean = state.target(name)
    unix_mode = info.external_attr >> 16
    if name.endswith("/"):
        if clean:
            state.directory(name, clean)
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
        state.symlink(name, clean, target)
        return
    if kind not in (0, stat.S_IFREG):
        raise FetchError(f"archive member {shown(name)} is a device, FIFO or other special file; refusing it")
    with zf.open(info) as src:
        state.write(name, clean, src, stat.S_IMODE(unix_mode) or 0o644)


def _check_symlinks(state: _State) -> None:
    """Refuse a tree whose links, followed on disk, lead outside it (``d -> .`` then ``e -> d/..``).

    Each link is only resolved (``realpath``), never read through: a loop (found by scripts/fuzz)
    cannot lead outside, and the layout leaves it out with a warning.
    """
    dest = state.real

    def enter(rel: str, _here: gate.Dir, entries: tuple[gate.DirEntry, ...]) -> list[str]:
        for entry in entries:
            if entry.kind == "link":
                real = os.path.realpath(os.path.join(dest, rel, entry.name))
                if real != dest and not real.startswith(dest.rstrip(os.sep) + os.sep):
                    shown_rel = f"{rel}/{entry.name}" if rel else entry.name
                    raise FetchError(
                        f"archive member {shown(shown_rel)} is a symbolic link leading outside the "
                        "destination"
                    )
        return [e.name for e in entries if e.kind == "dir"]

    gate.walk_tree(state.dest, enter, deadline=state.deadline)


def check_package_tree(dest: Path) -> None:
    """Refuse a package written by another tool (git) whose names or depth flatten cannot handle.

    The same rules as for archive members: every name UTF-8 without control characters, at most
    :data:`MAX_DEPTH` directories deep. A refused tree is removed here, by the gate's walk, which
    neither recurses nor follows a link (``shutil.rmtree`` would recurse past Python's limit on a
    deep one).
    """

    def enter(rel: str, _here: gate.Dir, entries: tuple[gate.DirEntry, ...]) -> list[str]:
        depth = rel.count("/") + 1 if rel else 0
        below = []
        for entry in entries:
            if entry.name == ".git" and depth == 0:
                continue
            path = f"{rel}/{entry.name}" if rel else entry.name
            _check_text(entry.name, f"package file {shown(path)} has a name that")
            if entry.kind == "dir":
                if depth + 1 >= MAX_DEPTH:
                    raise FetchError(
                        f"package directory {shown(path)} is more than {MAX_DEPTH} directories deep; "
                        "refusing the package"
                    )
                below.append(entry.name)
        return below

    with gate.open_dir(dest) as top:
        try:
            gate.walk_tree(top, enter)
        except FetchError:
            with gate.open_dir(dest.parent) as parent:
                gate.remove_tree(parent, dest.name)
            raise
