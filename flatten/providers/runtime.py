"""The provider errors Terraform finds only when it builds its graph, after configuration checks.

Rule for the whole file: these are the failures of Terraform's provider transformers
(``transform_provider.go``) on a configuration that passed ``validateProviderConfigs``, in the
order Terraform's graph builder meets them; each stage runs only when the one before found no
error, because the builder stops at the first failing transformer (docs/providers.md,
"Errors at graph build"):

1. ``missing provider <address>``: a ``providers`` map item whose caller-side configuration is
   no graph node: an alias the caller neither configures nor receives, or, in a module other
   than the root, a default configuration the caller only inherited (inheritance is resolved
   per resource, so it never makes a node the proxy could point at). No detail, no range.
2. "Provider configuration not present": a resource whose ``provider`` names an aliased
   configuration that exists nowhere (not configured, not passed, not in
   ``configuration_aliases``). No range.

OpenTofu's ``ProviderTransformer`` (opentofu/opentofu internal/tofu/transform_provider.go,
``ProviderTransformer.Transform``) fails the same way with the same wording; the dialect table
(``lang/dialect.py``) says where it differs: a root module's ``configuration_aliases`` are
provider nodes (``root_configuration_aliases``; context_validate_test.go,
``TestContext2Validate_providerAliasInRoot``), and stage 1 is left to ``tofu validate``
(``missing_provider_proxies``; the conformance contract pins those trees as valid).
"""

from __future__ import annotations

from flatten.lang.diagnostics import Diagnostic, Diagnostics
from flatten.lang.dialect import Dialect
from flatten.lang.model import module_address

from .addresses import ConfigAddr
from .wiring import How, ProviderWiring

__all__ = ["check_provider_graph"]

_RESOURCE_MODES = ("managed", "data", "ephemeral")


def _missing_proxies(wiring: ProviderWiring) -> Diagnostics:
    out = Diagnostics()
    for module in wiring.modules:
        for b in module.received:
            if b.how is not How.PASSED or b.parent_ref is None:
                continue
            caller = b.module[:-1]
            up = b.upstream
            if up is not None and (not caller or up.how in (How.OWN, How.PASSED)):
                continue
            decl = wiring.decls.get(caller)
            if decl is None:
                continue
            ref = b.parent_ref.compact
            addr = ConfigAddr(caller, decl.fqn(b.parent_ref.name), b.parent_ref.alias)
            here = module_address(caller) or "the root module"
            target = module_address(b.module)
            if up is None:
                why = (
                    f"{here} passes {ref} to {target}, but {here} has no provider configuration {ref}: "
                    f'declare a provider "{b.parent_ref.name}" block with alias = "{b.parent_ref.alias}" '
                    f"there, or have its caller pass {ref} to it."
                )
            else:
                why = (
                    f"{here} passes {ref} to {target}, but {here} only inherits its default "
                    f"configuration for {ref}, and Terraform cannot pass on an inherited configuration. "
                    f'Pass {ref} to {here} explicitly in the "providers" argument of its module block, '
                    f'or configure a provider "{ref}" block in {here}.'
                )
            # Terraform's summary; Terraform gives no detail or location, flatten says where and why.
            out.append(Diagnostic.error(f"missing provider {addr}", why, b.range, module_address(caller)))
    return out


def _root_aliases(wiring: ProviderWiring) -> frozenset[tuple[str, str]]:
    """The root module's ``configuration_aliases`` as (provider, alias) pairs."""
    decl = wiring.decls.get(())
    if decl is None:
        return frozenset()
    return frozenset(
        (str(req.provider), alias.alias or "")
        for req in decl.requirements
        if req.provider is not None
        for alias in req.aliases
    )


def _not_present(wiring: ProviderWiring, dialect: Dialect) -> Diagnostics:
    out = Diagnostics()
    declared = _root_aliases(wiring) if dialect.allows("root_configuration_aliases") else frozenset()
    for res in wiring.resources():
        if res.binding is not None or res.decl.mode not in _RESOURCE_MODES:
            continue
        if not res.module and (str(res.provider), res.ref.alias or "") in declared:
            continue
        config = ConfigAddr(res.module, res.provider, res.ref.alias)
        out.append(
            Diagnostic.error(
                "Provider configuration not present",
                f"To work with {res.address} its original provider configuration at {config} is "
                "required, but it has been removed. This occurs when a provider configuration is "
                "removed while objects created by that provider still exist in the state. Re-add the "
                f"provider configuration to destroy {res.address}, after which you can remove the "
                "provider configuration again.",
                res.decl.ref_range or res.decl.range,
                module_address(res.module),
            )
        )
    return out


def check_provider_graph(
    wiring: ProviderWiring, dialect: Dialect = Dialect.TERRAFORM, *, proxies: bool | None = None
) -> Diagnostics:
    """Return the graph-build provider errors of a configuration that passed validation.

    Terraform reports the first stage that fails (and of "missing provider" only the first one
    it meets, in Go's map order); flatten reports every error of that stage. ``proxies`` says
    whether stage 1 runs (default: as the dialect has it; ``--checks``, lang/options.py).
    """
    if dialect.allows("missing_provider_proxies") if proxies is None else proxies:
        missing = _missing_proxies(wiring)
        if missing.has_errors:
            return missing
    return _not_present(wiring, dialect)
