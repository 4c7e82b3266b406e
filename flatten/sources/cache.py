"""The download cache: packages stored by what identifies their content, safe when builds run at once.

Layout under the cache directory (``FLATTEN_CACHE_DIR``, ``$XDG_CACHE_HOME/flatten`` or
``~/.cache/flatten``)::

    v1/packages/<sha256 of identity>/meta.json   what was installed (identity, commit, subdir, digest)
    v1/packages/<sha256 of identity>/files/      the package's files
    v1/locks/<sha256 of identity>.lock           flock(2) taken while the entry is being made
    v1/tmp/                                      downloads in progress

An *identity* is a string that pins content: ``registry <package> <version>``, ``git <url>
<commit>``, ``http <url> …``. The rule the file follows: an entry becomes visible only by an
atomic ``rename`` of a complete directory, made while holding the entry's lock, so two builds
(threads or processes) never see a half-written package and never download the same one twice.

An entry is used only when it is still what was made: ``meta.json`` carries a tag made with this
machine's key (flatten.shell.cache_auth, handed in by the shell as a :class:`CacheAuth`; a cache
restored from elsewhere is all misses), ``files`` is a
real directory, and the digest of its tree equals the recorded one. Anything else (content
tampered with, emptied, a file or ``files`` replaced by a symlink) is a miss: the package is
downloaded again into a fresh entry, never vendored as found.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from flatten.lang.oserror import describe_os_error
from flatten.lang.redact import Scrubber
from flatten.sources.package import FetchError

__all__ = ["CachedPackage", "PackageCache", "tree_digest"]


def tree_digest(root: Path) -> str:
    """Return a ``sha256:`` digest of a directory's files: names, content, executable bits, links.

    ``.git`` directories are left out, so a clone and an unpacked archive of the same files agree.
    """
    h = hashlib.sha256()
    entries: list[tuple[str, Path]] = []
    for current, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != ".git" and not os.path.islink(os.path.join(current, d)))
        rel_dir = os.path.relpath(current, root)
        for name in files + [d for d in os.listdir(current) if os.path.islink(os.path.join(current, d))]:
            if name == ".git":
                continue
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            entries.append((rel.replace(os.sep, "/"), Path(current) / name))
    for rel, path in sorted(set(entries)):
        st = path.lstat()
        if stat.S_ISLNK(st.st_mode):
            h.update(f"L {rel}\0{os.readlink(path)}\0".encode())
            continue
        if not stat.S_ISREG(st.st_mode):  # a FIFO or device: never opened (reading one may never end)
            h.update(f"O {rel}\0{stat.S_IFMT(st.st_mode)}\0".encode())
            continue
        h.update(f"F {rel}\0{'x' if st.st_mode & 0o111 else '-'}\0".encode())
        fh = hashlib.sha256()
        with open(path, "rb") as f:
            while chunk := f.read(1 << 16):
                fh.update(chunk)
        h.update(fh.digest())
    return "sha256:" + h.hexdigest()


@dataclass(frozen=True, slots=True)
class CachedPackage:
    """A complete cache entry: the package files and what was recorded when it was made."""

    files: Path
    identity: str
    digest: str
    commit: str | None = None
    subdir: str = ""


class CacheAuth(Protocol):
    """The machine's cache key and tags (``flatten.shell.cache_auth`` is one): the key lives with
    the shell, which owns every cache's trust, so this layer is handed it rather than importing it."""

    def key(self) -> bytes | None: ...

    def tag(self, kind: str, name: str, payload: bytes | memoryview) -> bytes: ...


class PackageCache:
    """A content-addressed package store in ``root`` (see the module docstring for the layout).

    ``auth`` tags and verifies entries; None is a machine without a key: every entry is a miss.
    """

    def __init__(self, root: Path, auth: CacheAuth | None, scrub: Scrubber | None = None) -> None:
        self.root = root / "v1"
        self._auth = auth
        self._scrub = scrub or Scrubber()  # the build's secrets: never written into meta.json

    @staticmethod
    def key(identity: str) -> str:
        return hashlib.sha256(identity.encode("utf-8")).hexdigest()

    def _entry(self, identity: str) -> Path:
        return self.root / "packages" / self.key(identity)

    def lookup(self, identity: str) -> CachedPackage | None:
        """Return the cached package for ``identity``, or None when there is none, or it is damaged
        or not what was made (see the module docstring)."""
        entry = self._entry(identity)
        try:
            meta = json.loads((entry / "meta.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(meta, dict) or meta.get("identity") != identity:
            return None
        mac = meta.pop("mac", None)
        if not isinstance(mac, str) or not _verify_meta(self._auth, self.key(identity), meta, mac):
            return None
        digest = meta.get("digest")
        try:
            if not isinstance(digest, str) or not stat.S_ISDIR(os.lstat(entry / "files").st_mode):
                return None
            if tree_digest(entry / "files") != digest:
                return None
        except (OSError, ValueError):
            return None
        # Its last use, for the size limit's pruning: one used lately may be in use by a build
        # running now (flatten/shell/cache_admin.py). A read-only cache stays as it is.
        with contextlib.suppress(OSError):
            os.utime(entry / "meta.json")
        commit = meta.get("commit")
        return CachedPackage(
            entry / "files",
            identity,
            digest,
            commit if isinstance(commit, str) else None,
            str(meta.get("subdir", "")),
        )

    @contextmanager
    def _locked(self, identity: str) -> Iterator[None]:
        locks = self.root / "locks"
        locks.mkdir(parents=True, exist_ok=True)
        with open(locks / f"{self.key(identity)}.lock", "a+b") as fd:
            fcntl.flock(fd.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fd.fileno(), fcntl.LOCK_UN)

    def install(
        self, identity: str, fill: Callable[[Path], tuple[str | None, str]]
    ) -> tuple[CachedPackage, bool]:
        """Return the entry for ``identity``, making it with ``fill`` if needed, and whether it was made.

        ``fill(directory)`` writes the package into the new ``directory`` and returns
        ``(commit, subdir)``; a :class:`FetchError` from it leaves no entry behind.
        """
        found = self.lookup(identity)
        if found is not None:
            return found, False
        try:
            with self._locked(identity):
                found = self.lookup(identity)  # another build may have made it while we waited
                if found is not None:
                    return found, False
                tmp_root = self.root / "tmp"
                tmp_root.mkdir(parents=True, exist_ok=True)
                work = Path(tempfile.mkdtemp(prefix="pkg-", dir=tmp_root))
                try:
                    commit, subdir = fill(work / "files")
                    digest = tree_digest(work / "files")
                    meta = {"identity": identity, "commit": commit, "subdir": subdir, "digest": digest}
                    if self._scrub.holds_credential(json.dumps(meta, ensure_ascii=False)):
                        # A server echoed a credential into the address (its //subdir, a query):
                        # not stored, and not used (the directory it names holds the secret too).
                        raise FetchError(
                            "the package's address holds a credential (a URL password or the "
                            "registry's token), which flatten never stores; fix the server's answer"
                        )
                    meta["mac"] = _meta_mac(self._auth, self.key(identity), meta)
                    (work / "meta.json").write_text(json.dumps(meta, sort_keys=True) + "\n", encoding="utf-8")
                    entry = self._entry(identity)
                    entry.parent.mkdir(parents=True, exist_ok=True)
                    if entry.is_symlink():
                        entry.unlink()
                    elif entry.exists():  # a damaged or untrusted entry: replace it
                        shutil.rmtree(entry)
                    os.rename(work, entry)
                finally:
                    if work.exists():
                        shutil.rmtree(work, ignore_errors=True)
        except OSError as exc:
            raise FetchError(
                describe_os_error(exc, doing=f"write to the module cache at {self.root.parent}")
                + " FLATTEN_CACHE_DIR moves the cache elsewhere."
            ) from None
        # Not read back through lookup: without a key (flatten.shell.cache_auth) nothing is trusted, and
        # this build made the entry a moment ago.
        files = self._entry(identity) / "files"
        if not files.is_dir():
            raise FetchError(f"the module cache entry at {self._entry(identity)} could not be read back")
        return CachedPackage(files, identity, digest, commit, subdir), True


def _meta_mac(auth: CacheAuth | None, name: str, meta: Mapping[str, object]) -> str:
    """Return the tag of a ``meta.json`` (every field but ``mac``), as stored in its ``mac`` field
    (zeros without a key, as ``cache_auth.tag`` gives, which nothing verifies)."""
    payload = json.dumps({k: v for k, v in meta.items() if k != "mac"}, sort_keys=True).encode()
    return (auth.tag("package", name, payload) if auth is not None else bytes(32)).hex()


def _verify_meta(auth: CacheAuth | None, name: str, meta: dict[str, object], mac: str) -> bool:
    if auth is None or auth.key() is None:
        return False
    return hmac.compare_digest(_meta_mac(auth, name, meta).encode(), mac.encode("utf-8", "surrogatepass"))
