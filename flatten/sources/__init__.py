"""Module sources: parsing ``source`` addresses (spec §5).

Re-exports the public names of :mod:`flatten.sources.address`.
"""

from __future__ import annotations

from flatten.sources.address import (
    DEFAULT_REGISTRY_HOSTS,
    InvalidSourceAddress,
    LocalSource,
    RegistrySource,
    RemoteSource,
    SourceAddress,
    join_subdir,
    parse_module_source,
)

__all__ = [
    "DEFAULT_REGISTRY_HOSTS",
    "InvalidSourceAddress",
    "LocalSource",
    "RegistrySource",
    "RemoteSource",
    "SourceAddress",
    "join_subdir",
    "parse_module_source",
]
