"""When an inlined rule fails: at ``validate`` or at ``plan``, as in the original (issue 31 item 7).

Terraform checks a variable validation that reads only its own variable during ``validate``,
and a cross-variable validation (Terraform 1.9+) and an output precondition only from ``plan``
on. The inlined output's rules fail at the same step, with the rule's message.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support.files import write_tree
from support.oracle import terraform

_ROOT = """
module "m" {
  source = "./m"
  a      = 5
  b      = 3
}
"""
_RULES = {
    "cross": ("var.b > var.a", "b must exceed a."),
    "own": ("var.b > 4", "b must exceed 4."),
}


def _child(condition: str, message: str, precondition: bool) -> str:
    rule = f'    condition     = {condition}\n    error_message = "{message}"\n'
    text = 'variable "a" {\n  type = number\n}\n'
    if precondition:
        text += 'variable "b" {\n  type = number\n}\n'
        text += f'output "o" {{\n  value = var.b\n  precondition {{\n{rule}  }}\n}}\n'
    else:
        text += f'variable "b" {{\n  type = number\n  validation {{\n{rule}  }}\n}}\n'
    return text + 'resource "terraform_data" "r" {\n  input = var.b\n}\n'


def _steps(tf: object, where: Path) -> tuple[int, int, str]:
    run = tf.run  # type: ignore[attr-defined]
    assert run("init", "-input=false", "-no-color", cwd=where).returncode == 0
    validate = run("validate", "-no-color", cwd=where)
    plan = run("plan", "-input=false", "-no-color", cwd=where)
    return validate.returncode, plan.returncode, " ".join((validate.stderr + plan.stderr).split())


@pytest.mark.oracle
@pytest.mark.parametrize(
    ("rule", "precondition", "fails_at"),
    [("cross", False, "plan"), ("own", False, "validate"), ("own", True, "plan")],
)
def test_inlined_rule_fails_at_the_same_step(
    rule: str, precondition: bool, fails_at: str, tmp_path: Path
) -> None:
    condition, message = _RULES[rule]
    src = write_tree(
        tmp_path / "src", {"main.tf": _ROOT, "m/main.tf": _child(condition, message, precondition)}
    )
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "flatten", "build", "--inline", "--out", str(out), str(src)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    tf = terraform()
    original, inlined = _steps(tf, src), _steps(tf, out)
    expected = (1, 1) if fails_at == "validate" else (0, 1)
    assert original[:2] == expected, original
    assert inlined[:2] == expected, inlined
    assert message in inlined[2]
