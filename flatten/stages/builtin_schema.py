"""The schema of the builtin ``terraform`` provider's ``terraform_data`` resource (issue 40).

Terraform knows this provider without downloading it (terraform.io/builtin/terraform,
internal/builtin/providers/terraform/resource_data.go): its one managed resource type,
``terraform_data``, has the arguments ``input`` and ``triggers_replace`` (both optional) and the
read-only ``id`` and ``output``; no nested block. The validate walk decodes each resource body
with its provider's schema, so a misspelt argument is HCL's "Unsupported argument" (native
syntax, hclsyntax/structure.go) or "Extraneous JSON object property" (JSON, json/structure.go),
with HCL's suggestion among the schema's attribute names. Meta-arguments and meta-blocks are
Terraform's, decoded before (internal/configs/resource.go) and not checked here.
"""

from __future__ import annotations

from flatten.lang.diagnostics import Diagnostic, Diagnostics
from flatten.lang.didyoumean import name_suggestion
from flatten.lang.model import Attribute, Block

__all__ = ["check_terraform_data", "fits"]

# configschema attributes in name order, as HCL's nameSuggestion meets them.
_ATTRIBUTES = ("id", "input", "output", "triggers_replace")
_META_ARGUMENTS = frozenset({"count", "for_each", "provider", "depends_on"})
# "dynamic" is expanded by HCL's dynblock against the schema before decoding; what it reports
# for a generated type the schema lacks is not modelled here, so a dynamic block is left alone.
_META_BLOCKS = frozenset({"lifecycle", "connection", "provisioner", "dynamic"})


def fits(attributes: tuple[str, ...], types: tuple[str, ...]) -> bool:
    """Whether a body of these attribute names and block types (``Body.item_names``) has nothing
    for ``check_terraform_data`` to report."""
    return all(n in _META_ARGUMENTS or n in _ATTRIBUTES for n in attributes) and all(
        t in _META_BLOCKS for t in types
    )


def check_terraform_data(block: Block, module: str) -> Diagnostics:
    """HCL's errors for the body of a ``resource "terraform_data"`` block served by the builtin
    provider (``module``: the module path the block's file belongs to)."""
    diags = Diagnostics()
    if fits(*block.body.item_names()):
        return diags  # the usual case, decided on the names alone (a cached body stays undecoded)
    is_json = block.range.filename.endswith(".json")
    for item in block.body.peek_items():
        if isinstance(item, Attribute):
            name = item.name
            if name in _META_ARGUMENTS or name in _ATTRIBUTES:
                continue
            near = name_suggestion(name, _ATTRIBUTES)
            hint = f' Did you mean "{near}"?' if near else ""
            if is_json:
                summary, detail = (
                    "Extraneous JSON object property",
                    f'No argument or block type is named "{name}".',
                )
            else:
                summary, detail = "Unsupported argument", f'An argument named "{name}" is not expected here.'
            diags.append(Diagnostic.error(summary, detail + hint, item.name_range, module))
        elif item.type not in _META_BLOCKS:
            summary = "Extraneous JSON object property" if is_json else "Unsupported block type"
            detail = (
                f'No argument or block type is named "{item.type}".'
                if is_json
                else f'Blocks of type "{item.type}" are not expected here.'
            )
            diags.append(Diagnostic.error(summary, detail, item.range, module))
    return diags
