"""Which provider type Terraform gives each side of a ``providers`` item, with Terraform as the oracle.

Two rules of Terraform's ``configs`` package that ``scripts/difftest`` found flatten missing
(docs/providers.md, "Which type a passed configuration has"):

* ``resolveProviderTypes`` lets every child of a module type the child side of *all* that
  module's calls, and the child Go visits last wins. Go's map order is random, but for a few
  calls the call-name order is by far the most likely one, so flatten follows it.
* errors in the root module's own files do not stop ``terraform init`` from building the tree,
  resolving its provider types and validating them: "Provider type mismatch" comes beside an
  invalid default of the root.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support.files import write_tree
from support.oracle import flatten_rows, terraform, terraform_rows

from flatten.build import build
from flatten.lang.options import Options

_BUILTIN = (
    'terraform {\n  required_providers {\n    terraform = { source = "terraform.io/builtin/terraform" }\n'
    "  }\n}\n"
)
_PROXY_X = 'provider "terraform" {\n  alias = "x"\n}\n'
_USES_X = 'resource "terraform_data" "r" {\n  provider = terraform.x\n}\n'


def _call(name: str) -> str:
    return (
        f'module "{name}" {{\n  source    = "./{name}"\n  providers = {{ terraform.x = terraform.y }}\n}}\n'
    )


@pytest.mark.oracle
def test_the_child_visited_last_types_every_call_of_its_parent(tmp_path: Path) -> None:
    # Both children take `terraform.x` as a proxy block, which types it by what the child
    # knows: `a` knows only the default hashicorp/terraform, `b` requires the builtin provider.
    # Terraform gives both calls the type of the child visited last: `b` (call-name order,
    # 7 runs in 8), so nothing is wrong, or `a` (1 in 8), so both passes are type mismatches.
    # Each call typed by its own module (flatten before) is an outcome Terraform never has.
    tf = terraform()
    root = write_tree(
        tmp_path / "case",
        {
            "main.tf": _BUILTIN + 'provider "terraform" {\n  alias = "y"\n}\n' + _call("a") + _call("b"),
            "a/main.tf": _PROXY_X + _USES_X,
            "b/main.tf": _BUILTIN + _PROXY_X + _USES_X,
        },
    )
    _, diags = build(root, options=Options())
    ours = flatten_rows(diags)
    assert not diags.has_errors, ours
    # `init` checks provider types too, in the same random order: it fails in about 1 run in 8.
    inits = [tf.run("init", "-backend=false", "-input=false", "-no-color", cwd=root) for _ in range(1)]
    while inits[-1].returncode != 0 and len(inits) < 20:
        inits.append(tf.run("init", "-backend=false", "-input=false", "-no-color", cwd=root))
    assert inits[-1].returncode == 0, inits[-1].stdout
    seen = []
    for _ in range(20):  # Go's map order: run until Terraform gives its most likely outcome
        verdict = json.loads(tf.run("validate", "-json", "-no-color", cwd=root).stdout)
        theirs = terraform_rows(verdict["diagnostics"])
        if theirs == ours:
            break
        seen.append(theirs)
    else:
        pytest.fail(f"Terraform never gave flatten's diagnostics {ours}; it gave {seen}")


@pytest.mark.oracle
def test_an_error_of_the_root_module_stops_before_provider_validation(tmp_path: Path) -> None:
    # `terraform validate` stops at the root's own error (configload loadConfig: no tree is
    # built, so no "Provider type mismatch"); `terraform init` would report both.
    tf = terraform()
    root = write_tree(
        tmp_path / "case",
        {
            "main.tf": _BUILTIN
            + 'provider "terraform" {\n  alias = "y"\n}\n'
            + _call("k")
            + 'variable "bad" {\n  type    = number\n  default = "abc"\n}\n',
            "k/main.tf": _PROXY_X + _USES_X,
        },
    )
    _, diags = build(root, options=Options())
    ours = sorted((d.severity.value, d.summary) for d in diags)
    result = tf.run("validate", "-no-color", cwd=root)
    assert result.returncode == 1
    found = re.findall(r"^(?:│ )?(Error|Warning): (.+?)\s*$", result.stdout + result.stderr, re.MULTILINE)
    theirs = sorted((sev.lower(), summ) for sev, summ in found)
    assert ("error", "Invalid default value for variable") in theirs
    assert ours == theirs
