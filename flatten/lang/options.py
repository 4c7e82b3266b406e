"""The one options object, built once at the edge and passed keyword-only to every stage."""

from __future__ import annotations

from dataclasses import dataclass

# Dialect lives with the table of differences it answers from (flatten/lang/dialect.py).
from flatten.lang.dialect import Dialect
from flatten.lang.terraform_releases import NEWEST

__all__ = ["Dialect", "Options", "VariableArg"]

#: One ``--var NAME=VALUE`` (``("var", "NAME=VALUE")``) or ``--var-file FILE`` (``("var-file",
#: absolute path)``), in command-line order (stages/variables.py reads them).
VariableArg = tuple[str, str]


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
    terraform_version: tuple[int, int] = (
        NEWEST  # the Terraform release whose rules apply (lang/terraform_releases.py)
    )
    # Root variable values for early evaluation (OpenTofu: module source/version, backend):
    # --var/--var-file in order, and the TF_VAR_ environment variables, sorted.
    variables: tuple[VariableArg, ...] = ()
    variable_env: tuple[tuple[str, str], ...] = ()
