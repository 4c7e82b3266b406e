"""Module packages: where a remote module's files came from and what exactly was installed (spec §5.7).

A *package* is the unit go-getter downloads: a registry module version, a git commit, an
archive. Every module inside it is ``root/<subdir>``; local sources inside the package move
between subdirectories of the same package and may never leave it. Nothing here touches the
filesystem or the network.
"""

from __future__ import annotations

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
