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

from flatten.diagnostics import Diagnostic, Diagnostics
from flatten.graph import ModuleGraph
from flatten.model import Block, Module, Pos, Range

__all__ = ["MODULE_META_ARGUMENTS", "check_module_inputs", "declared_inputs"]

#: A module call's own arguments; every other argument sets one of the called module's variables.
MODULE_META_ARGUMENTS = frozenset({"source", "version", "count", "for_each", "depends_on", "providers"})


def declared_inputs(module: Module) -> frozenset[str]:
    """The names a call of ``module`` may set: its variables."""
    return frozenset(b.labels[0] for b in module.blocks_of("variable") if b.labels)


def _missing_item(block: Block) -> Range:
    """HCL's ``MissingItemRange``: a native body's opening brace, a JSON object's closing brace."""
    rng = block.body.range
    if rng is None:
        return block.range
    if rng.filename.endswith(".json"):
        end = rng.end
        return Range(rng.filename, Pos(end.line, end.column - 1, end.byte - 1), end)
    start = rng.start
    return Range(rng.filename, start, Pos(start.line, start.column + 1, start.byte + 1))


def check_module_inputs(graph: ModuleGraph) -> Diagnostics:
    """Return a "Missing required argument" error for every required input a call leaves out.

    Terraform stops at the first call with a missing input, and which call that is depends on
    Go's map order; flatten reports every call, in tree order, each input in declaration order.
    """
    diags = Diagnostics()
    for node in graph.walk():
        call = node.call
        parent = graph.parent(node.address)
        if call is None or parent is None:
            continue
        block = call.block
        given = parent.base_arguments.get(call.name)
        if given is None:
            given = frozenset(a.name for a in block.body.attributes)
        if call.name not in parent.base_arguments:
            # Checked when the call has no override file: Terraform decodes an overridden call's
            # merged body without reporting, or using, arguments the module does not declare
            # (docs/overrides.md); layout drops those from the output's call.
            declared = declared_inputs(node.module)
            for attr in block.body.attributes:
                if attr.name in MODULE_META_ARGUMENTS or attr.name in declared:
                    continue
                if attr.name_range.filename.endswith(".json"):
                    summary, detail = (
                        "Extraneous JSON object property",
                        (f'No argument or block type is named "{attr.name}".'),
                    )
                else:
                    summary, detail = (
                        "Unsupported argument",
                        f'An argument named "{attr.name}" is not expected here.',
                    )
                diags.append(Diagnostic.error(summary, detail, attr.name_range, parent.address))
        for variable in node.module.blocks_of("variable"):
            if not variable.labels or variable.body.attribute("default") is not None:
                continue
            name = variable.labels[0]
            if name in given:
                continue
            diags.append(
                Diagnostic.error(
                    "Missing required argument",
                    f'The argument "{name}" is required, but no definition was found.',
                    _missing_item(block),
                    parent.address,
                )
            )
    return diags
