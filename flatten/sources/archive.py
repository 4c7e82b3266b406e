"""Safe archive extraction: zip and tar (plain, gzip, bzip2, xz), go-getter's decompressors (spec §5.5).

The rule every function follows: nothing is written outside the destination, whatever the
archive says. A member is refused (and the whole extraction fails, naming the member) when its
name is absolute or has a ``..`` segment, when it is a symbolic or hard link whose target leaves
the destination, when it is a device, FIFO or socket, or when the archive goes past the
:class:`~flatten.sources.env.ExtractLimits` on member count or total size (counted as bytes are
written, so a lying header does not help). Modes keep only the permission bits, less group and
world write.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import stat
import tarfile
import zipfile
from pathlib import Path
from typing import IO

from flatten.sources.env import ExtractLimits
from flatten.sources.package import FetchError

__all__ = ["ARCHIVE_EXTENSIONS", "archive_format", "copy_tree", "extract_archive"]

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


def extract_archive(archive: Path, fmt: str, dest: Path, *, limits: ExtractLimits) -> None:
    """Extract ``archive`` (format ``fmt``, see :func:`archive_format`) into the empty directory ``dest``.

    Raises :class:`FetchError` naming the offending member when anything is refused; ``dest``
    may then hold a partial tree, which the caller discards.
    """
    dest.mkdir(parents=True, exist_ok=True)
    state = _State(dest.resolve(), limits)
    try:
        if fmt == "zip":
            _extract_zip(archive, state)
            _check_symlinks(state.dest)
        else:
            mode = {"tar": "r:", "tar.gz": "r:gz", "tar.bz2": "r:bz2", "tar.xz": "r:xz"}[fmt]
            _extract_tar(archive, mode, state)
        _check_symlinks(state.dest)
    except FetchError:
        raise
    except (OSError, EOFError, tarfile.TarError, zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise FetchError(f"error decompressing {fmt} archive: {exc}") from None


class _State:
    def __init__(self, dest: Path, limits: ExtractLimits) -> None:
        self.dest = dest
        self.limits = limits
        self.files = 0
        self.bytes = 0

    def count(self, name: str) -> None:
        self.files += 1
        if self.files > self.limits.max_files:
            raise FetchError(
                f"archive has more than {self.limits.max_files} members (at {name!r}); refusing to extract it"
            )

    def target(self, name: str) -> tuple[str, Path]:
        """Return the cleaned member name and its path under the destination, or refuse it."""
        raw = name.replace("\\", "/")
        if raw.startswith("/") or (len(raw) > 1 and raw[1] == ":"):
            raise FetchError(f"archive member {name!r} has an absolute path; refusing to extract it")
        parts = [p for p in raw.split("/") if p not in ("", ".")]
        if ".." in parts:
            raise FetchError(
                f"archive member {name!r} escapes the destination with '..'; refusing to extract it"
            )
        if not parts:
            return "", self.dest
        clean = "/".join(parts)
        path = self.dest.joinpath(*parts)
        parent = path.parent.resolve()
        if parent != self.dest and self.dest not in parent.parents:
            raise FetchError(
                f"archive member {name!r} would be written outside the destination through a link"
            )
        return clean, path

    def check_link(self, name: str, clean: str, target: str, *, hard: bool) -> str:
        """Return the link target's path relative to the destination, or refuse the member."""
        t = target.replace("\\", "/")
        kind = "hard link" if hard else "symbolic link"
        if t.startswith("/") or (len(t) > 1 and t[1] == ":"):
            raise FetchError(
                f"archive member {name!r} is a {kind} to the absolute path {target!r}; refusing it"
            )
        base = "" if hard else posixpath.dirname(clean)
        joined = posixpath.normpath(posixpath.join(base, t))
        if joined == ".." or joined.startswith("../") or not t:
            raise FetchError(
                f"archive member {name!r} is a {kind} to {target!r}, outside the destination; refusing it"
            )
        return "" if joined == "." else joined

    def write(self, name: str, path: Path, src: IO[bytes], mode: int) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink() or path.exists():
            if path.is_dir() and not path.is_symlink():
                raise FetchError(f"archive member {name!r} replaces a directory; refusing it")
            path.unlink()
        with open(path, "xb") as out:
            while chunk := src.read(_CHUNK):
                self.bytes += len(chunk)
                if self.bytes > self.limits.max_bytes:
                    raise FetchError(
                        f"archive expands to more than {self.limits.max_bytes} bytes (at {name!r}); "
                        "refusing to extract it"
                    )
                out.write(chunk)
        # Never setuid/setgid/sticky, never writable by group or others (an archive may say 4777).
        os.chmod(path, (mode & 0o755) | 0o600 if mode else 0o644)


def _extract_tar(archive: Path, mode: str, state: _State) -> None:
    with tarfile.open(archive, mode) as tar:  # type: ignore[call-overload]
        for member in tar:
            state.count(member.name)
            clean, path = state.target(member.name)
            if member.isdir():
                if clean:
                    path.mkdir(parents=True, exist_ok=True)
                continue
            if not clean:
                raise FetchError(f"archive member {member.name!r} has no name; refusing it")
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
                        f"archive member {member.name!r} is a hard link to {member.linkname!r}, which is not "
                        "a file extracted earlier; refusing it"
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
                    f"archive member {member.name!r} is a device, FIFO or other special file; refusing it"
                )


def _extract_zip(archive: Path, state: _State) -> None:
    with zipfile.ZipFile(archive) as zf:
        infos = zf.infolist()
        if len(infos) > state.limits.max_files:
            state.files = len(infos) - 1
            state.count(infos[-1].filename)
        for info in infos:
            state.count(info.filename)
            clean, path = state.target(info.filename)
            unix_mode = info.external_attr >> 16
            if info.is_dir():
                if clean:
                    path.mkdir(parents=True, exist_ok=True)
                continue
            if not clean:
                raise FetchError(f"archive member {info.filename!r} has no name; refusing it")
            kind = stat.S_IFMT(unix_mode)
            if kind == stat.S_IFLNK:
                target = zf.read(info).decode("utf-8", "replace")
                state.check_link(info.filename, clean, target, hard=False)
                path.parent.mkdir(parents=True, exist_ok=True)
                os.symlink(target, path)
                continue
            if kind not in (0, stat.S_IFREG):
                raise FetchError(
                    f"archive member {info.filename!r} is a device, FIFO or other special file; refusing it"
                )
            with zf.open(info) as src:
                state.write(info.filename, path, src, stat.S_IMODE(unix_mode) or 0o644)


def _check_symlinks(dest: Path) -> None:
    """Refuse a tree whose links, followed on disk, lead outside it (``d -> .`` then ``e -> d/..``)."""
    for current, dirs, files in os.walk(dest):
        for name in dirs + files:
            path = Path(current) / name
            if path.is_symlink():
                real = path.resolve()
                if real != dest and dest not in real.parents:
                    rel = path.relative_to(dest).as_posix()
                    raise FetchError(
                        f"archive member {rel!r} is a symbolic link leading outside the destination"
                    )


def copy_tree(src: Path, dest: Path) -> None:
    """Copy a local package directory (a ``file://`` source) into ``dest``, keeping symlinks."""
    shutil.copytree(src, dest, symlinks=True, ignore=shutil.ignore_patterns(".git"))
