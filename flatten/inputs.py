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
from flatten.model import Block, Pos, Range

__all__ = ["check_module_inputs"]


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
