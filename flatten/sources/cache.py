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
import errno
import hashlib
import hmac
import json
import os
import secrets
import stat
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from flatten import gate
from flatten.lang.oserror import describe_os_error
from flatten.lang.redact import Scrubber
from flatten.sources.package import FetchError

__all__ = ["CachedPackage", "PackageCache", "tree_digest"]


def tree_digest(root: Path) -> str:
    """Return a ``sha256:`` digest of a directory's files: names, content, executable bits, links.

    ``.git`` directories are left out, so a clone and an unpacked archive of the same files agree.
    Walked by descriptors through the gate: no symlink is followed, a FIFO or device is never
    opened (reading one may never end).
    """
    h = hashlib.sha256()
    entries: list[tuple[str, str, int, gate.Dir]] = []  # (rel, name, kind, directory)
    opened: list[gate.Dir] = []
    try:
        top = gate.open_dir(root)
    except (FileNotFoundError, NotADirectoryError):
        # Nothing there (a modules.json entry naming a directory that is gone): the digest of no
        # files, as the walk before the gate gave; the stage that loads the module reports it.
        return "sha256:" + h.hexdigest()
    try:
        stack = [("", top)]
        opened.append(top)
        while stack:
            rel_dir, directory = stack.pop()
            for item in directory.list():
                if item.name == ".git":
                    continue
                rel = f"{rel_dir}/{item.name}" if rel_dir else item.name
                if item.kind == "dir":
                    sub = directory.sub(item.name)
                    opened.append(sub)
                    stack.append((rel, sub))
                else:
                    entries.append((rel, item.name, 0, directory))
        for rel, name, _, directory in sorted(entries, key=lambda e: e[0]):
            st = directory.stat(name)
            if stat.S_ISLNK(st.st_mode):
                h.update(f"L {rel}\0{os.readlink(name, dir_fd=directory.fd)}\0".encode())
                continue
            if not stat.S_ISREG(st.st_mode):
                h.update(f"O {rel}\0{stat.S_IFMT(st.st_mode)}\0".encode())
                continue
            h.update(f"F {rel}\0{'x' if st.st_mode & 0o111 else '-'}\0".encode())
            with gate.open_read(name, limit=1 << 40, follow=False, dir_fd=directory.fd) as f:
                h.update(hashlib.file_digest(f, "sha256").digest())
    finally:
        for directory in opened:
            directory.close()
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


_USE_LOCK = ".use.lock"  # shared while a build uses packages; exclusive while they are removed
_META_LIMIT = 1 << 20


def _is_package(entry: gate.Dir) -> bool:
    """A package entry as :meth:`PackageCache.install` makes it (the mark ``cache clean`` and a
    replacing install look for before removing a directory)."""
    return entry.kind("meta.json") == "file" or entry.kind("files") == "dir"


class PackageCache:
    """A content-addressed package store in ``root`` (see the module docstring for the layout).

    ``auth`` tags and verifies entries; None is a machine without a key: every entry is a miss.
    Every path below ``root`` is reached through the gate without following a symlink, and only
    when ``root`` is flatten's cache (stamped; flatten/gate.py). From its first use the cache
    holds the cache's use lock shared (``.use.lock``), until :meth:`close`: ``flatten cache clean``
    removes packages only once no build holds it, so a build never copies from a package that is
    being removed (issue 38, item 11).
    """

    def __init__(self, root: Path, auth: CacheAuth | None, scrub: Scrubber | None = None) -> None:
        self.base = root
        self.root = root / "v1"
        self._auth = auth
        self._scrub = scrub or Scrubber()  # the build's secrets: never written into meta.json
        self._guard = threading.Lock()
        self._use: int | None = None  # the shared lock's descriptor

    @staticmethod
    def key(identity: str) -> str:
        return hashlib.sha256(identity.encode("utf-8")).hexdigest()

    def _entry(self, identity: str) -> Path:
        return self.root / "packages" / self.key(identity)

    def _top(self, *, create: bool) -> gate.Dir | None:
        """The cache's root (flatten's, stamped), with the use lock taken shared; None when there
        is none or it is not flatten's."""
        top = gate.open_owned_root(self.base, gate.CACHE_OWNER, create=create, adopt=gate.CACHE_ADOPT)
        if top is None:
            return None
        with self._guard:
            if self._use is None:
                try:
                    self._use = top.lock(_USE_LOCK, shared=True, wait=True)
                except OSError:
                    top.close()
                    raise
        return top

    def __del__(self) -> None:
        self.close()

    def close(self) -> None:
        """Release the use lock (the build has written its output)."""
        with self._guard:
            if self._use is not None:
                os.close(self._use)
                self._use = None

    def _v1(self, rel: str, *, create: bool) -> gate.Dir | None:
        top = self._top(create=create)
        if top is None:
            return None
        with top:
            return top.sub(f"v1/{rel}" if rel else "v1", create=create, mode=0o700, replace_links=create)

    def lookup(self, identity: str) -> CachedPackage | None:
        """Return the cached package for ``identity``, or None when there is none, or it is damaged
        or not what was made (see the module docstring)."""
        name = self.key(identity)
        try:
            packages = self._v1("packages", create=False)
        except OSError:
            return None
        if packages is None:
            return None
        with packages:
            try:
                with packages.sub(name) as entry:
                    meta = json.loads(entry.read("meta.json", limit=_META_LIMIT).decode("utf-8"))
                    if not isinstance(meta, dict) or meta.get("identity") != identity:
                        return None
                    mac = meta.pop("mac", None)
                    if not isinstance(mac, str) or not _verify_meta(self._auth, name, meta, mac):
                        return None
                    digest = meta.get("digest")
                    if not isinstance(digest, str) or entry.kind("files") != "dir":
                        return None
                    if tree_digest(Path(entry.path) / "files") != digest:
                        return None
                    # Its last use, for the size limit's pruning: one used lately may be in use by
                    # a build running now (flatten/shell/cache_admin.py). A read-only cache stays.
                    with contextlib.suppress(OSError):
                        entry.touch("meta.json")
            except (OSError, ValueError):
                return None
        commit = meta.get("commit")
        return CachedPackage(
            self._entry(identity) / "files",
            identity,
            digest,
            commit if isinstance(commit, str) else None,
            str(meta.get("subdir", "")),
        )

    @contextmanager
    def _locked(self, identity: str) -> Iterator[None]:
        locks = self._v1("locks", create=True)
        if locks is None:
            raise _not_flattens(self.base)
        with locks:
            fd = locks.lock(f"{self.key(identity)}.lock", shared=False, wait=True)
        assert fd is not None
        try:
            yield
        finally:
            os.close(fd)

    def sweep(self, older_than: float) -> None:
        """Remove the temporary directories downloads killed outright left (``pkg-*`` in
        ``v1/tmp``, last changed before ``older_than``, seconds since the epoch)."""
        try:
            tmp = self._v1("tmp", create=False)
        except OSError:
            return
        if tmp is None:
            return
        with tmp:
            for item in tmp.list():
                if item.name.startswith("pkg-") and item.kind == "dir":
                    with contextlib.suppress(OSError):
                        if tmp.stat(item.name).st_mtime < older_than:
                            tmp.remove(item.name)

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
        name = self.key(identity)
        try:
            with self._locked(identity):
                found = self.lookup(identity)  # another build may have made it while we waited
                if found is not None:
                    return found, False
                tmp = self._v1("tmp", create=True)
                packages = self._v1("packages", create=True)
                assert tmp is not None and packages is not None  # _locked: flatten's cache
                with tmp, packages:
                    work = f"pkg-{os.getpid()}-{secrets.token_hex(8)}"
                    tmp.mkdir(work, mode=0o700)
                    try:
                        commit, subdir = fill(Path(tmp.path) / work / "files")
                        digest = tree_digest(Path(tmp.path) / work / "files")
                        meta = {"identity": identity, "commit": commit, "subdir": subdir, "digest": digest}
                        if self._scrub.holds_credential(json.dumps(meta, ensure_ascii=False)):
                            # A server echoed a credential into the address (its //subdir, a
                            # query): not stored, and not used (the directory it names holds the
                            # secret too).
                            raise FetchError(
                                "the package's address holds a credential (a URL password or the "
                                "registry's token), which flatten never stores; fix the server's answer"
                            )
                        meta["mac"] = _meta_mac(self._auth, name, meta)
                        with tmp.sub(work) as made:
                            made.write("meta.json", (json.dumps(meta, sort_keys=True) + "\n").encode())
                        # A damaged or untrusted entry (or a symlink) is replaced; a directory
                        # without flatten's mark is refused, never removed.
                        packages.remove(name, owned=_is_package)
                        tmp.rename(work, name, into=packages)
                    finally:
                        with contextlib.suppress(OSError):
                            tmp.remove(work)
        except OSError as exc:
            raise FetchError(
                describe_os_error(exc, doing=f"write to the module cache at {self.base}")
                + " FLATTEN_CACHE_DIR moves the cache elsewhere."
            ) from None
        # Not read back through lookup: without a key (flatten.shell.cache_auth) nothing is trusted, and
        # this build made the entry a moment ago.
        return CachedPackage(self._entry(identity) / "files", identity, digest, commit, subdir), True


def _not_flattens(base: Path) -> OSError:
    return gate.Refused(
        errno.EPERM,
        "not-owned",
        str(base),
        "the directory exists and holds files flatten did not make, so it is not used as flatten's cache",
        "Point FLATTEN_CACHE_DIR at an empty or new directory (docs/cache.md).",
    )


def _meta_mac(auth: CacheAuth | None, name: str, meta: Mapping[str, object]) -> str:
    """Return the tag of a ``meta.json`` (every field but ``mac``), as stored in its ``mac`` field
    (zeros without a key, as ``cache_auth.tag`` gives, which nothing verifies)."""
    payload = json.dumps({k: v for k, v in meta.items() if k != "mac"}, sort_keys=True).encode()
    return (auth.tag("package", name, payload) if auth is not None else bytes(32)).hex()


def _verify_meta(auth: CacheAuth | None, name: str, meta: dict[str, object], mac: str) -> bool:
    if auth is None or auth.key() is None:
        return False
    return hmac.compare_digest(_meta_mac(auth, name, meta).encode(), mac.encode("utf-8", "surrogatepass"))
