"""The one options object, built once at the edge and passed keyword-only to every stage."""

from __future__ import annotations

import enum
from dataclasses import dataclass

# Dialect lives with the table of differences it answers from (flatten/lang/dialect.py).
from flatten.lang.dialect import Dialect
from flatten.lang.terraform_releases import NEWEST

__all__ = ["Checks", "Dialect", "Options", "VariableArg"]

#: One ``--var NAME=VALUE`` (``("var", "NAME=VALUE")``) or ``--var-file FILE`` (``("var-file",
#: absolute path)``), in command-line order (stages/variables.py reads them).
VariableArg = tuple[str, str]


class Checks(enum.StrEnum):
    """How much of what the engine reports before ``plan`` a build checks (``--checks``).

    ``init`` is what ``terraform init``/``tofu init`` reports: loading every file and module,
    module sources and versions, and the provider configuration checks of config loading
    (``validateProviderConfigs``). ``validate`` adds what ``validate`` reports once it builds
    its graph without a provider schema (docs/providers.md, "Errors at graph build"; docs/
    validate.md): module call arguments, provider configurations that are not there, references.
    Without ``--checks`` a build makes every ``validate`` check in the terraform dialect and,
    in the opentofu dialect, those the OpenTofu conformance contract leaves in (the dialect
    table's ``unsupported_module_inputs``, ``missing_provider_proxies`` and
    ``object_reference_checks`` rows, lang/dialect.py).
    """

    INIT = "init"
    VALIDATE = "validate"


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
    checks: Checks | None = None  # --checks; None: the dialect's default (``Checks``)

    def graph_checks(self) -> bool:
        """Whether the checks ``validate`` makes once it builds its graph run at all."""
        return self.checks is not Checks.INIT

    def graph_check(self, name: str) -> bool:
        """Whether the graph check the dialect table names ``name`` runs: all of them with
        ``--checks validate``, none with ``--checks init``, else as the dialect has it."""
        if self.checks is not None:
            return self.checks is Checks.VALIDATE
        defaults = {
            "unsupported_module_inputs": self.dialect.allows("unsupported_module_inputs"),
            "missing_provider_proxies": self.dialect.allows("missing_provider_proxies"),
            "object_reference_checks": self.dialect.allows("object_reference_checks"),
            "provider_graph_checks": self.dialect.allows("provider_graph_checks"),
        }
        return defaults[name]
