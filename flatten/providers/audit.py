"""The ``flatten providers`` audit report: the wiring of every module, as text or JSON.

Rule for the whole file: the report is a pure function of the ``ProviderWiring`` and the
diagnostics (no I/O, sorted, no absolute paths). For each module path, in tree order: the
provider requirements (as ``terraform providers`` lists them), the configurations it receives
and from where (passed by the call, with the file and line of the ``providers`` item, or
inherited from an ancestor), its own configurations, each resource's resolved configuration, and
the diagnostics whose module it is. ``explain`` follows one resource's chain back to the
configuration it ends at.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from flatten.lang.diagnostics import Diagnostic, range_json
from flatten.lang.model import JsonValue, Range, module_address
from flatten.lang.printable import printable
from flatten.lang.redact import redact_url

from .addresses import Provider
from .constraints import canonical_constraints
from .declarations import ModuleDecl
from .wiring import Binding, How, ModuleWiring, ProviderWiring, ResourceWiring

__all__ = ["Requirement", "audit_json", "audit_text", "explain", "module_requirements"]


@dataclass(frozen=True, slots=True)
class Requirement:
    """A provider a module requires, with the version constraints written for it."""

    provider: Provider
    constraints: tuple[str, ...]


def module_requirements(decl: ModuleDecl, module: ModuleWiring) -> tuple[Requirement, ...]:
    """Return what the module requires, as ``terraform providers`` lists it (sorted by provider).

    The sources are Terraform's: ``required_providers`` entries (with ``version``), provider
    blocks (with the deprecated ``version`` argument), and the provider every resource uses.
    """
    found: dict[Provider, list[str]] = {}
    for req in decl.requirements:
        found.setdefault(req.provider, [])
        if req.version:
            found[req.provider].append(req.version)
    for block in decl.blocks:
        fqn = decl.fqn(block.name)
        found.setdefault(fqn, [])
        if block.version:
            found[fqn].append(block.version)
    for res in module.resources:
        found.setdefault(res.provider, [])
    return tuple(Requirement(p, tuple(c)) for p, c in sorted(found.items()))


def _where(rng: Range | None) -> str:
    return f"{rng.filename}:{rng.start.line}" if rng is not None else ""


def _module_name(path: tuple[str, ...]) -> str:
    return module_address(path) or "the root module"


def _describe(binding: Binding) -> str:
    """One line saying where a received configuration comes from."""
    if binding.how is How.PASSED:
        caller = _module_name(binding.module[:-1])
        ref = binding.parent_ref.compact if binding.parent_ref is not None else "?"
        return f"passed as {ref} by {caller} ({_where(binding.range)})"
    if binding.how is How.INHERITED:
        return f"inherited from {_module_name(binding.addr.module)}"
    if binding.how is How.IMPLICIT:
        return "implicit empty configuration in the root module"
    return f"configured here ({_where(binding.range)})"


def _target(binding: Binding | None) -> str:
    target = binding.target if binding is not None else None
    return str(target) if target is not None else "MISSING (no configuration declared or passed)"


def _diag_line(d: Diagnostic) -> str:
    where = f" ({_where(d.range)})" if d.range is not None else ""
    return f"{d.severity.value.capitalize()}: {redact_url(d.summary)}{where}"


def audit_text(wiring: ProviderWiring, diags: Sequence[Diagnostic]) -> str:
    """Return the human-readable audit report: one section per module path, indented by depth."""
    lines: list[str] = []
    for module in wiring.modules:
        depth = len(module.path)
        pad = "  " * depth
        title = module.address or "root module"
        lines.append(f"{pad}{title} ({module.directory})")
        decl = wiring.decls.get(module.path)
        if decl is not None:
            reqs = module_requirements(decl, module)
            if reqs:
                lines.append(f"{pad}  requires:")
                for req in reqs:
                    version = f" {canonical_constraints(req.constraints)}" if req.constraints else ""
                    lines.append(f"{pad}    provider[{req.provider}]{version}")
        if module.received:
            lines.append(f"{pad}  receives:")
            width = max(len(b.key) for b in module.received)
            for b in sorted(module.received, key=lambda b: (b.how is not How.PASSED, b.key)):
                lines.append(f"{pad}    {b.key:<{width}}  {_describe(b)}")
                lines.append(f"{pad}    {'':<{width}}  => {_target(b)}")
        if module.own:
            lines.append(f"{pad}  configures:")
            width = max(len(b.key) for b in module.own)
            for b in module.own:
                note = " (empty block)" if b.empty else ""
                if b.how is How.IMPLICIT:
                    note = "(implicit: required_providers entry without a provider block)"
                lines.append(f"{pad}    {b.key:<{width}}  {b.addr}  {_where(b.range)}{note}")
        if module.resources:
            lines.append(f"{pad}  resources:")
            width = max(len(r.decl.address) for r in module.resources)
            for r in module.resources:
                lines.append(f"{pad}    {r.decl.address:<{width}}  {r.ref} => {_target(r.binding)}")
        for d in diags:
            if d.module == module.address:
                lines.append(f"{pad}  ! {_diag_line(d)}")
    orphans = [d for d in diags if wiring.module(d.module) is None]
    for d in orphans:
        lines.append(f"! {_diag_line(d)}")
    # Each entry is one line; names in it (directories, files) may hold anything: lang/printable.py.
    return "\n".join(printable(line) for line in lines) + "\n"


def _binding_json(b: Binding) -> dict[str, JsonValue]:
    target = b.target
    out: dict[str, JsonValue] = {
        "key": b.key,
        "how": b.how.value,
        "address": str(b.addr),
        "resolved": str(target) if target is not None else None,
    }
    if b.how is How.PASSED:
        out["from_module"] = module_address(b.module[:-1])
        out["from_reference"] = b.parent_ref.compact if b.parent_ref is not None else None
    elif b.how is How.INHERITED:
        out["from_module"] = module_address(b.addr.module)
    if b.range is not None:
        out["range"] = _range(b.range)
    if b.how is How.OWN:
        out["empty"] = b.empty
    return out


def _resource_json(r: ResourceWiring) -> dict[str, JsonValue]:
    config = r.config
    return {
        "address": r.address,
        "mode": r.decl.mode,
        "reference": str(r.ref),
        "explicit": r.decl.ref is not None,
        "provider": str(r.provider),
        "config": str(config) if config is not None else None,
        "declared_in": module_address(config.module) if config is not None else None,
        "range": _range(r.decl.range),
    }


def _range(rng: Range) -> JsonValue:
    """A range in the JSON report: the object ``build --format json`` gives a diagnostic's range
    (``terraform validate -json``'s), so one reader serves both."""
    return cast(JsonValue, range_json(rng))


def _diag_json(d: Diagnostic) -> dict[str, JsonValue]:
    return {
        "severity": d.severity.value,
        "summary": redact_url(d.summary),
        "detail": redact_url(d.detail),
        "module": d.module,
        "range": _range(d.range) if d.range is not None else None,
    }


def audit_json(wiring: ProviderWiring, diags: Sequence[Diagnostic]) -> dict[str, JsonValue]:
    """Return the audit report as a JSON document (``flatten providers --json``)."""
    modules: list[JsonValue] = []
    for module in wiring.modules:
        decl = wiring.decls.get(module.path)
        reqs = module_requirements(decl, module) if decl is not None else ()
        modules.append(
            {
                "address": module.address,
                "directory": module.directory,
                "source": redact_url(module.source),  # a URL's userinfo is never shown
                "requirements": [
                    {
                        "provider": str(r.provider),
                        "constraints": list(r.constraints),
                        "version": canonical_constraints(r.constraints),
                    }
                    for r in reqs
                ],
                "receives": [_binding_json(b) for b in module.received],
                "configurations": [_binding_json(b) for b in module.own],
                "resources": [_resource_json(r) for r in module.resources],
                "diagnostics": [_diag_json(d) for d in diags if d.module == module.address],
            }
        )
    errors = sum(1 for d in diags if d.severity.value == "error")
    return {
        # 2.0: ranges are objects, as in `build --format json` (1.0: "file:line" strings).
        "format_version": "2.0",
        "valid": errors == 0,
        "modules": modules,
        "diagnostics": [_diag_json(d) for d in diags],
    }


def explain(wiring: ProviderWiring, address: str) -> str | None:
    """Return the chain from the root to the configuration ``address`` uses, or None if unknown.

    >>> # explain(wiring, "module.tunnel.aws_vpc.src")  # doctest: +SKIP
    """
    res = wiring.resource(address)
    if res is None:
        return None
    lines = [f"{res.address} ({_where(res.decl.range)})"]
    how = "provider argument" if res.decl.ref is not None else "implied by the resource type"
    lines.append(
        f"  uses {res.ref} ({how}); in {_module_name(res.module)} that means provider {res.provider}"
    )
    if res.binding is None:
        lines.append(
            f"  {res.ref.compact} is neither configured in {_module_name(res.module)} nor passed by its "
            "caller: the configuration is missing"
        )
        return "\n".join(lines) + "\n"
    for b in res.binding.chain():
        if b.how is How.PASSED:
            caller = _module_name(b.module[:-1])
            ref = b.parent_ref.compact if b.parent_ref is not None else "?"
            lines.append(
                f"  {_module_name(b.module)}: {b.key} is {b.addr}, passed as {ref} by {caller} "
                f"({_where(b.range)})"
            )
        elif b.how is How.INHERITED:
            lines.append(
                f"  {_module_name(b.module)}: {b.key} is not configured or passed here; the default "
                f"configuration is inherited from {_module_name(b.addr.module)}"
            )
        elif b.how is How.IMPLICIT:
            lines.append(
                f"  the root module: {b.addr} is an implicit empty configuration (no provider block)"
            )
        else:
            empty = ", an empty block" if b.empty else ""
            lines.append(f"  {_module_name(b.module)}: {b.key} is configured by {_where(b.range)}{empty}")
    lines.append(f"  => {_target(res.binding)}")
    return "\n".join(lines) + "\n"
