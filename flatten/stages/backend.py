"""The root module's backend as ``tofu init`` evaluates it (opentofu dialect).

Rule for the whole file: OpenTofu decodes a ``backend`` (and ``cloud``) block's arguments with its
static evaluator (internal/configs/backend.go, ``Backend.Decode`` with the module's
``StaticEvaluator``), so ``path = "state/${var.env}.tfstate"`` reads the root variables' values
from the sources ``tofu init`` reads (stages/variables.py). The output holds the *value*, written
as a literal: the output's module tree was fixed by the same values (each call's source is the
directory they chose), so the backend must be the one those values chose too. Keeping the
expression would tie the output's state location to whatever values a later ``tofu init`` is
given, and --var/--var-file/TF_VAR_ values are not part of the output; a substituted literal
loads the same under every later value. An expression flatten cannot evaluate is kept as written.
"""

from __future__ import annotations

from dataclasses import replace

from flatten.lang.diagnostics import Diagnostics
from flatten.lang.model import Attribute, Block, Body, Expr, JsonValue, Module, Range
from flatten.syntax.evaluate import Failed, Ident, Scope, Unsupported

__all__ = ["static_backend"]

_EVALUATED = ("backend", "cloud")


def _literal(value: JsonValue) -> JsonValue:
    """A value in Terraform's JSON form: a string's ``${``/``%{`` escaped, so it stays a literal."""
    if isinstance(value, str):
        return value.replace("${", "$${").replace("%{", "%%{")
    if isinstance(value, list):
        return [_literal(v) for v in value]
    if isinstance(value, dict):
        return {k: _literal(v) for k, v in value.items()}
    return value


def _static(value: JsonValue) -> bool:
    """Whether a stored value is already a literal (nothing to evaluate)."""
    if isinstance(value, str):
        return "${" not in value.replace("$${", "") and "%{" not in value.replace("%%{", "")
    if isinstance(value, list):
        return all(_static(v) for v in value)
    if isinstance(value, dict):
        return all(_static(v) for v in value.values())
    return True


def _block(block: Block, scope: Scope, diags: Diagnostics) -> Block:
    kind = f"{block.type}.{block.labels[0]}" if block.labels else block.type
    items: list[Attribute | Block] = []
    for item in block.body.items:
        if isinstance(item, Attribute) and not _static(item.value):
            decl = Range(item.name_range.filename, item.name_range.start, item.expr.range.end)
            try:
                value = scope.evaluate(item, Ident("", f"{kind}.{item.name}", decl))
            except Failed:
                pass
            except Unsupported:
                pass  # kept as written: OpenTofu evaluates it (docs/dialects.md)
            else:
                item = replace(item, expr=Expr(_literal(value.value), item.expr.range))
            finally:
                diags.extend(scope.diags)
                scope.diags.clear()
        items.append(item)
    return replace(block, body=Body(tuple(items), block.body.range))


def static_backend(module: Module, scope: Scope) -> tuple[Module, Diagnostics]:
    """Return the root ``module`` with its backend/cloud arguments evaluated to literals, and the
    evaluation's diagnostics (OpenTofu's static evaluator errors)."""
    diags = Diagnostics()
    changed = False
    blocks: list[Block] = []
    for block in module.blocks:
        if block.type == "terraform" and any(b.type in _EVALUATED for b in block.body.blocks):
            items = tuple(
                _block(i, scope, diags) if isinstance(i, Block) and i.type in _EVALUATED else i
                for i in block.body.items
            )
            if items != block.body.items:
                block = replace(block, body=Body(items, block.body.range))
                changed = True
        blocks.append(block)
    return (replace(module, blocks=tuple(blocks)) if changed else module), diags
