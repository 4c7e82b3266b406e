"""Required module inputs: a module call must set every variable of the called module without a default.

Rule for the whole file: this is Terraform's ``ModuleVariableTransformer`` (docs/overrides.md,
"Required inputs and override files"). It decodes each call's arguments against a schema made
of the child's variables, where a variable with no ``default`` argument (``default = null``
counts as one) is required, and reports HCL's "Missing required argument" at the call body's
``MissingItemRange``. The arguments come from the call's block in its primary file only: the
merged body decodes its base with the full schema and its overrides with every argument made
optional, so an input set only in an override file is still missing.
"""

from __future__ import annotations

from flatten.lang.diagnostics import Diagnostic, Diagnostics
from flatten.lang.model import Body, Module
from flatten.stages.decode import missing_item_range
from flatten.stages.graph import ModuleGraph

__all__ = ["MODULE_META_ARGUMENTS", "check_module_inputs", "declared_inputs"]

#: A module call's own arguments; every other argument sets one of the called module's variables.
MODULE_META_ARGUMENTS = frozenset({"source", "version", "count", "for_each", "depends_on", "providers"})


def declared_inputs(module: Module) -> frozenset[str]:
    """The names a call of ``module`` may set: its variables."""
    return frozenset(b.labels[0] for b in module.blocks_of("variable") if b.labels)


def _unsupported(body: Body, declared: frozenset[str], module: str, *, escaped: bool) -> list[Diagnostic]:
    """HCL's errors for what a call's body holds beyond its meta-arguments and the module's variables.

    Inside the ``_`` escaping block every name is a variable's, meta-argument names included.
    """
    found: list[Diagnostic] = []
    for attr in body.attributes:
        if attr.name in declared or (not escaped and attr.name in MODULE_META_ARGUMENTS):
            continue
        if attr.name_range.filename.endswith(".json"):
            summary, detail = (
                "Extraneous JSON object property",
                f'No argument or block type is named "{attr.name}".',
            )
        else:
            summary, detail = "Unsupported argument", f'An argument named "{attr.name}" is not expected here.'
        found.append(Diagnostic.error(summary, detail, attr.name_range, module))
    for block in body.blocks:
        if block.type == "_" and not escaped:
            found.extend(_unsupported(block.body, declared, module, escaped=True))
            continue
        found.append(
            Diagnostic.error(
                "Unsupported block type",
                f'Blocks of type "{block.type}" are not expected here.',
                block.range,
                module,
            )
        )
    return found


def check_module_inputs(graph: ModuleGraph, *, unsupported: bool = True) -> Diagnostics:
    """Return a "Missing required argument" error for every required input a call leaves out.

    With ``unsupported``, also HCL's errors for arguments and blocks the module does not declare
    (Terraform's ``terraform validate``; the OpenTofu dialect follows its conformance corpus, taken
    from OpenTofu's configuration loader, which accepts them).

    Terraform stops at the first call with a missing input, and which call that is depends on
    Go's map order; flatten reports every call, in tree order, each input in declaration order.
    """
    diags = Diagnostics()
    for node in graph.walk():
        call = node.call
        parent = graph.parent(node.address)
        if call is None or parent is None or node.address in graph.dropped:
            continue  # (a module left out for its load errors declares nothing reliably)
        block = call.block
        given = parent.base_arguments.get(call.name)
        if given is None:
            given = frozenset(a.name for a in block.body.attributes)
        if unsupported and call.name not in parent.base_arguments:
            # Checked when the call has no override file: Terraform decodes an overridden call's
            # merged body without reporting, or using, arguments the module does not declare
            # (docs/overrides.md); layout drops those from the output's call.
            diags.extend(
                _unsupported(block.body, declared_inputs(node.module), parent.address, escaped=False)
            )
        for variable in node.module.blocks_of("variable"):
            if not variable.labels or variable.body.has_attribute("default"):
                continue
            name = variable.labels[0]
            if name in given:
                continue
            diags.append(
                Diagnostic.error(
                    "Missing required argument",
                    f'The argument "{name}" is required, but no definition was found.',
                    missing_item_range(block),
                    parent.address,
                )
            )
    return diags
