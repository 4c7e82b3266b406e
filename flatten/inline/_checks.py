"""A variable's ``validation`` and an output's ``precondition`` as a local that fails the plan.

Rule for the whole file: a failing validation or output precondition is an *error* in Terraform,
which a ``check`` block (a warning) is not. Terraform evaluates every local of every module
instance during plan, referenced or not, so each rule becomes one local

    <cond> ? null : tobool("<what>: <error_message>")

that is null while the condition holds, unknown while it is unknown (Terraform skips the rule
then too), and fails the plan with an error, quoting the rule's error message, when it is false
(``tobool`` of any other string than "true"/"false" is an error). A sensitive message is shown
redacted, as Terraform shows it. Nothing references the local, so no value, output or planned
action changes.

Where Terraform checks a rule only during plan, not during ``validate`` (an output's
precondition, and a variable validation that refers to other objects than the variable:
Terraform 1.9's cross-variable validations), the local is

    plantimestamp() == null ? null : (<cond> ? null : tobool(...))

``plantimestamp()`` is unknown during ``validate``, where no plan is made, and known in plan
and apply (Terraform's ``plantimestamp`` documentation; measured with Terraform 1.11), so the
rule fails at plan, as the original does.
"""

from __future__ import annotations

from flatten.lang.model import Block, JsonValue
from flatten.syntax.references import json_to_hcl, literal_to_expression

__all__ = ["failing_local"]


def failing_local(rule: Block, what: str, *, at_plan: bool = False) -> JsonValue | None:
    """Return the local's value for the (already rewritten) ``validation``/``precondition`` ``rule``.

    ``what`` names the rule in the message, e.g. ``Invalid value for variable "name" of
    module.net``. None when the rule has no condition (Terraform rejects that already).
    ``at_plan``: the rule is checked only from plan on, never by ``validate``.
    """
    cond = rule.body.attribute("condition")
    if cond is None:
        return None
    msg = rule.body.attribute("error_message")
    prefix = str(literal_to_expression(f"{what}: "))  # a template: "${" and "%{" escaped
    value = msg.value if msg is not None else ""
    # A template message joins the prefix's template; anything else is interpolated into it.
    text = prefix + value if isinstance(value, str) else f"{prefix}${{{json_to_hcl(value)}}}"
    check = f"{json_to_hcl(cond.value)} ? null : tobool({json_to_hcl(text)})"
    return f"${{plantimestamp() == null ? null : ({check})}}" if at_plan else f"${{{check}}}"
