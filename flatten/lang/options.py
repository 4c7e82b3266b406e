"""The one options object, built once at the edge and passed keyword-only to every stage."""

from __future__ import annotations

from dataclasses import dataclass

# Dialect lives with the table of differences it answers from (flatten/lang/dialect.py).
from flatten.lang.dialect import Dialect

__all__ = ["Dialect", "Options"]


@dataclass(frozen=True, slots=True)
class Options:
    """Settings that change what a build produces."""

    dialect: Dialect = Dialect.TERRAFORM
    provenance: bool = False  # write "//" comments naming the files that made each merged block
    explicit_providers: bool = False  # write inherited provider configurations as explicit passes
    offline: bool = False  # never touch the network: remote modules only from .terraform/modules
    locked: bool = False  # refuse to build when remote modules resolve differently from the previous manifest
    inline: bool = False  # merge module calls into their callers (flatten.inline), with moved blocks
    inline_only: str | None = None  # with inline: the one call to inline (module.a.module.b)
    exclude: tuple[str, ...] = ()  # --exclude: .terraformignore patterns no module's copies take
