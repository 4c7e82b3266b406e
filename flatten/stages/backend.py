"""The root module's backend as ``tofu init`` evaluates it (opentofu dialect): checked, never
substituted.

OpenTofu decodes a ``backend`` (and ``cloud``) block's arguments with its static evaluator
(internal/configs/backend.go, ``Backend.Decode`` with the module's ``StaticEvaluator``), so
``path = "state/${var.env}.tfstate"`` reads the root variables' values from the sources ``tofu
init`` reads (stages/variables.py). flatten evaluates each such argument the same way, for
OpenTofu's errors ("Unable to compute static value", a variable with no value), but writes the
argument as the author wrote it: a variable reference, which ``tofu init`` in the output evaluates
again from the values it is given then (``-var``, ``TF_VAR_``, the root's ``*.tfvars`` files,
which the output carries) or which ``-backend-config`` overrides. Writing the value instead would
put whatever the variable held (an access key, a token, ``sensitive`` or not) into a file teams
commit (issue 38, "Secrets never written"; docs/dialects.md, "The backend").
"""

from __future__ import annotations

from types import MappingProxyType

from flatten.lang.diagnostics import Diagnostic, Diagnostics
from flatten.lang.model import Attribute, Block, JsonValue, Module, Range
from flatten.syntax.evaluate import Failed, Ident, Scope, Unsupported

__all__ = ["BACKEND_TYPES", "REMOVED_BACKENDS", "check_backend_type", "static_backend"]

_EVALUATED = ("backend", "cloud")


def _static(value: JsonValue) -> bool:
    """Whether a stored value is already a literal (nothing to evaluate)."""
    if isinstance(value, str):
        return "${" not in value.replace("$${", "") and "%{" not in value.replace("%%{", "")
    if isinstance(value, list):
        return all(_static(v) for v in value)
    if isinstance(value, dict):
        return all(_static(v) for v in value.values())
    return True


def _check(block: Block, scope: Scope, diags: Diagnostics) -> None:
    kind = f"{block.type}.{block.labels[0]}" if block.labels else block.type
    for item in block.body.items:
        if isinstance(item, Attribute) and not _static(item.value):
            decl = Range(item.name_range.filename, item.name_range.start, item.expr.range.end)
            # Evaluated for OpenTofu's diagnostics (and the manifest's record of which variables
            # were read); the value is never written (see above).
            try:
                scope.evaluate(item, Ident("", f"{kind}.{item.name}", decl))
            except (Failed, Unsupported):
                pass  # reported through scope.diags (Failed) or left to OpenTofu (Unsupported)
            finally:
                diags.extend(scope.diags)
                scope.diags.clear()


def static_backend(module: Module, scope: Scope) -> tuple[Module, Diagnostics]:
    """Return the root ``module`` as it is written (its backend/cloud arguments as the author
    wrote them) and the diagnostics of evaluating them as ``tofu init`` does (OpenTofu's static
    evaluator errors)."""
    diags = Diagnostics()
    for block in module.blocks:
        if block.type == "terraform":
            for inner in block.body.blocks:
                if inner.type in _EVALUATED:
                    _check(inner, scope, diags)
    return module, diags


# Terraform's built-in backends (terraform internal/backend/init/init.go, ``Init``: the
# ``backends`` map, "oci" since 1.12.0) and the removed names it still explains
# (``RemovedBackends``), as of 1.15.
BACKEND_TYPES = frozenset(
    (
        "local",
        "remote",
        "azurerm",
        "consul",
        "cos",
        "gcs",
        "http",
        "inmem",
        "kubernetes",
        "oci",
        "oss",
        "pg",
        "s3",
        "cloud",
    )
)
REMOVED_BACKENDS = MappingProxyType(
    {
        "artifactory": 'The "artifactory" backend is not supported in Terraform v1.3 or later.',
        "azure": 'The "azure" backend name has been removed, please use "azurerm".',
        "etcd": 'The "etcd" backend is not supported in Terraform v1.3 or later.',
        "etcdv3": 'The "etcdv3" backend is not supported in Terraform v1.3 or later.',
        "manta": 'The "manta" backend is not supported in Terraform v1.3 or later.',
        "swift": 'The "swift" backend is not supported in Terraform v1.3 or later.',
    }
)


def check_backend_type(module: Module) -> Diagnostics:
    """``terraform validate``'s check of the root module's backend type (from 1.15.0: "The
    validate command now checks the backend block", #38021; terraform internal/command/validate.go
    ``validateBackend``): a name that is no built-in backend is "Unsupported backend type" at
    the name. Its arguments are not checked against the backend's schema (not modelled)."""
    diags = Diagnostics()
    for block in module.blocks:
        if block.type != "terraform":
            continue
        for inner in block.body.blocks_of("backend"):
            if not inner.labels or inner.labels[0] in BACKEND_TYPES:
                continue
            name = inner.labels[0]
            detail = REMOVED_BACKENDS.get(name, f'There is no backend type named "{name}".')
            at = inner.label_ranges[0] if inner.label_ranges else inner.range
            diags.append(Diagnostic.error("Unsupported backend type", detail, at))
    return diags
