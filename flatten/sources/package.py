"""Module packages: where a remote module's files came from and what exactly was installed (spec §5.7).

A *package* is the unit go-getter downloads: a registry module version, a git commit, an
archive. Every module inside it is ``root/<subdir>``; local sources inside the package move
between subdirectories of the same package and may never leave it. Nothing here touches the
filesystem or the network.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from pathlib import Path

__all__ = ["FetchError", "FetchedModule", "ModulePackage"]


@dataclass(frozen=True, slots=True)
class ModulePackage:
    """One installed package and the directory of a module inside it.

    ``address`` is the package address without any subdirectory (a registry package
    ``host/ns/name/system`` or a go-getter address such as ``git::https://h/x.git?ref=v1``);
    ``root`` the directory holding the package on disk; ``subdir`` the module's directory inside
    it ("" for the package root). ``version`` (registry), ``commit`` (git) and ``digest`` (a
    ``sha256:`` digest of the package's files) record what was resolved; ``name`` is a readable
    name for the vendored copy.
    """

    address: str
    root: Path
    subdir: str = ""
    version: str | None = None
    commit: str | None = None
    digest: str = ""
    name: str = "package"

    @property
    def directory(self) -> Path:
        """The module's directory on disk."""
        return self.root / self.subdir if self.subdir else self.root

    @property
    def source(self) -> str:
        """The module's address: the package address with ``//subdir`` before any query."""
        if not self.subdir:
            return self.address
        base, sep, query = self.address.partition("?")
        return f"{base}//{self.subdir}{sep}{query}"

    def at(self, subdir: str) -> ModulePackage:
        """Return the same package, pointing at another module directory inside it."""
        return replace(self, subdir=subdir)


@dataclass(frozen=True, slots=True)
class FetchedModule:
    """What a fetcher returns for a remote module call: its directory and the package it is in."""

    directory: Path
    package: ModulePackage


class FetchError(Exception):
    """A package could not be installed. ``str(exc)`` says why (never holding a credential).

    ``summary`` is the Terraform diagnostic summary the caller reports it under.
    """

    def __init__(self, message: str, *, summary: str = "Failed to download module") -> None:
        super().__init__(message)
        self.summary = summary


class SizeBudget:
    """How many bytes the packages of one build may still write to disk, across all of them.

    Every archive member and every git checkout takes from the one budget of the build (made by
    :class:`~flatten.sources.fetcher.RemoteFetcher`, ``ExtractLimits.max_bytes``, 1 GiB by default),
    so four 1 GiB archives cannot fill 4 GiB before each is refused on its own. Shared by the
    threads that prefetch packages, hence the lock.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._used = 0
        self._lock = threading.Lock()

    def remaining(self) -> int:
        with self._lock:
            return self.limit - self._used

    def take(self, size: int, what: str) -> None:
        """Count ``size`` more bytes written for ``what``; raise :class:`FetchError` past the limit."""
        with self._lock:
            self._used += size
            over = self._used > self.limit
        if over:
            raise FetchError(
                f"the packages of this build expand to more than {self.limit} bytes (at {what}); "
                "refusing to write more"
            )
