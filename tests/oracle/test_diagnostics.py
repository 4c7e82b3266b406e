"""Terraform as the oracle for diagnostics: flatten reports what ``terraform validate`` reports.

Each case is a small tree that Terraform warns about or rejects; flatten's diagnostics (summary,
severity and detail) must equal Terraform's (issue 14).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support.files import write_tree
from support.oracle import engines, flatten_rows, terraform, terraform_rows, validate_json

from flatten.build import build
from flatten.lang.options import Options
from flatten.lang.terraform_releases import KNOWN

_BUILTIN = (
    'terraform {\n  required_providers {\n    terraform = { source = "terraform.io/builtin/terraform" }\n'
    "  }\n}\n"
)
_ALIAS_X = (
    "terraform {\n  required_providers {\n    terraform = {\n"
    '      source = "terraform.io/builtin/terraform"\n'
    "      configuration_aliases = [terraform.x]\n    }\n  }\n}\n"
)
_USES_X = 'resource "terraform_data" "a" {\n  provider = terraform.x\n}\n'
_CALL_M = 'module "m" {\n  source = "./m"\n}\n'
_VARIABLES = 'variable "x" {}\nvariable "y" {\n  type = string\n}\nvariable "z" {\n  default = null\n}\n'
_PASS_Y = 'module "a" {\n  source = "./a"\n  providers = { terraform.x = terraform.y }\n}\n'

CASES: dict[str, dict[str, str]] = {
    # Terraform names itself in this warning; the OpenTofu dialect names OpenTofu.
    "backend-in-child": {
        "main.tf": 'module "m" {\n  source = "./m"\n}\n',
        "m/main.tf": 'terraform {\n  backend "local" {}\n}\n',
    },
    # A legacy index step is native syntax only: in JSON Terraform wants `a[0]`.
    "legacy-index-in-json": {
        "main.tf.json": json.dumps(
            {
                "resource": {
                    "terraform_data": {
                        "a": {"count": 1},
                        "b": {"depends_on": ["terraform_data.a.0"]},
                    }
                }
            }
        ),
    },
    # Item 6: a sibling's required_providers types the child side of every call of the caller
    # (resolveProviderTypes' "fill in parent module calls too"): the same providers item is an
    # error with the sibling and a warning without it.
    "sibling-types-other-calls": {
        "main.tf": 'provider "terraform" {\n  alias = "y"\n}\n'
        + _PASS_Y
        + 'module "s" {\n  source = "./s"\n}\n',
        "a/main.tf": _USES_X,
        "s/main.tf": _BUILTIN,
    },
    "no-sibling-only-warns": {
        "main.tf": 'provider "terraform" {\n  alias = "y"\n}\n' + _PASS_Y,
        "a/main.tf": _USES_X,
    },
    # Item 4: required inputs, checked against the call's block in its primary file only.
    "missing-required-inputs": {"main.tf": _CALL_M, "m/main.tf": _VARIABLES},
    "input-set-only-in-override": {
        "main.tf": 'module "m" {\n  source = "./m"\n  y      = "a"\n}\n',
        "main_override.tf": 'module "m" {\n  x = "a"\n}\n',
        "m/main.tf": _VARIABLES,
    },
    "override-of-a-set-input": {
        "main.tf": 'module "m" {\n  source = "./m"\n  x      = "a"\n  y      = "b"\n}\n',
        "main_override.tf": 'module "m" {\n  x = "c"\n}\n',
        # The input is set in both files, so it is not missing; the backend warning is there so
        # that Terraform says something about the tree at all.
        "m/main.tf": _VARIABLES + 'terraform {\n  backend "local" {}\n}\n',
    },
    "missing-input-json-call": {
        "main.tf.json": '{"module": {"m": {"source": "./m",\n  "x": 1}}}\n',
        "main_override.tf": 'module "m" {\n  y = 1\n}\n',
        "m/main.tf": _VARIABLES,
    },
    # Terraform's graph builder stops at the missing input, before any provider error.
    "missing-input-before-provider-errors": {
        "main.tf": _CALL_M,
        "m/main.tf": 'variable "x" {}\nresource "terraform_data" "a" {\n  provider = terraform.nowhere\n}\n',
    },
    # Item 4a: an aliased configuration that exists nowhere.
    "configuration-not-present": {
        "main.tf": _CALL_M
        + 'ephemeral "terraform_data" "e" {\n  provider = terraform.eph\n}\n'
        + 'resource "terraform_data" "r" {\n  provider = terraform.nowhere\n}\n',
        "m/main.tf": 'data "terraform_remote_state" "b" {\n  provider = terraform.gone\n'
        '  backend  = "local"\n}\n',
    },
    # Item 5: a module passes on a configuration it only inherited.
    "pass-on-inherited-declared": {
        "main.tf": _CALL_M,
        "m/main.tf": _BUILTIN
        + 'module "k" {\n  source = "./k"\n  providers = { terraform.x = terraform }\n}\n',
        "m/k/main.tf": _ALIAS_X + _USES_X,
    },
    "pass-on-inherited-undeclared": {
        "main.tf": _CALL_M,
        "m/main.tf": 'module "k" {\n  source = "./k"\n  providers = { terraform.x = terraform }\n}\n',
        "m/k/main.tf": _USES_X,
    },
    "pass-on-inherited-default": {
        "main.tf": _CALL_M,
        "m/main.tf": 'module "k" {\n  source = "./k"\n  providers = { terraform = terraform }\n}\n',
        "m/k/main.tf": 'resource "terraform_data" "a" {\n}\n',
    },
    "pass-on-missing-alias": {
        "main.tf": _CALL_M,
        "m/main.tf": _BUILTIN
        + 'module "k" {\n  source = "./k"\n  providers = { terraform.x = terraform.y }\n}\n',
        "m/k/main.tf": _ALIAS_X + _USES_X,
    },
    # Item 7: a load error in a child module leaves provider types unresolved, so an aliased pass
    # into a module that requires the builtin provider is a type mismatch as well.
    # A call setting an argument its module does not declare (the differential tester's class C).
    "unsupported-module-argument": {
        "main.tf": 'module "m" {\n  source = "./m"\n  bogus  = 1\n}\n',
        "m/main.tf": _VARIABLES,
    },
    "extraneous-module-argument-json": {
        "main.tf.json": '{"module": {"m": {"source": "./m", "x": 1, "y": "a", "bogus": 1}}}\n',
        "m/main.tf": _VARIABLES,
    },
    # The "_" escaping block: its names are the module's variables, meta-argument names included.
    "escaping-block-module-arguments": {
        "main.tf": 'module "m" {\n  source = "./m"\n  count  = 1\n  x      = 1\n  y      = "a"\n'
        "  blk {}\n  _ {\n    count = 2\n    other = 3\n    lifecycle {}\n  }\n}\n",
        "m/main.tf": _VARIABLES + 'variable "count" {\n  default = 0\n}\n',
    },
    "load-error-then-type-mismatch": {
        "main.tf": _BUILTIN
        + 'provider "terraform" {\n  alias = "y"\n}\n'
        + 'module "k" {\n  source = "./k"\n  providers = { terraform.x = terraform.y }\n}\n'
        + 'module "bad" {\n  source = "./bad"\n}\n',
        "k/main.tf": _ALIAS_X + _USES_X,
        "bad/main.tf": 'variable "v" {}\nvariable "v" {}\n',
    },
}


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(CASES))
def test_diagnostics_equal_terraform_validate(name: str, tmp_path: Path) -> None:
    tf = terraform()
    root = write_tree(tmp_path / name, CASES[name])
    # Built with the rules of the Terraform release that answers (flatten's default is the newest).
    release = next((r for t, r in engines() if t.description == tf.description), None)
    _, diags = build(root, options=Options(terraform_version=release) if release in KNOWN else Options())
    ours = flatten_rows(diags)

    verdict = validate_json(tf, root)
    theirs = terraform_rows(verdict["diagnostics"])
    assert theirs, "the case must make Terraform say something"
    # Where Terraform gives no detail or no location ("missing provider ...", "Provider
    # configuration not present"), flatten adds its own; only what Terraform gives is compared.
    bare = {(sev, summ) for sev, summ, detail, _ in theirs if not detail}
    unplaced = {(sev, summ) for sev, summ, _, where in theirs if not where}
    ours = sorted(
        (sev, summ, "" if (sev, summ) in bare else detail, "" if (sev, summ) in unplaced else where)
        for sev, summ, detail, where in ours
    )
    assert ours == theirs


@pytest.mark.oracle
def test_root_errors_stop_the_loading_of_children_as_terraform_validate_does(tmp_path: Path) -> None:
    # `terraform validate` (and plan/apply) load through configload's LoadConfig, which returns
    # the root alone when the root's own files have errors (internal/configs/configload/
    # loader_load.go), so no child is read; `terraform init`'s installer reads every call and
    # reports the children's errors too. A flattened tree stands in front of validate/plan/apply,
    # so flatten follows validate (docs/syntax-errors.md, "Loading order").
    tf = terraform()
    root = write_tree(
        tmp_path / "root-and-module-errors",
        {
            "main.tf": 'variable "v" {}\nvariable "v" {}\n'
            'module "gone" {\n  source = "./nowhere"\n}\nmodule "ok" {\n  source = "./ok"\n}\n',
            "ok/main.tf": 'output "o" {\n  value = 1\n}\noutput "o" {\n  value = 2\n}\n',
        },
    )
    _, diags = build(root, options=Options())
    ours = {d.summary for d in diags.errors}

    def errors(*args: str) -> tuple[int, set[str]]:
        result = tf.run(*args, "-no-color", cwd=root)
        found = re.findall(r"^(?:│ )?Error: (.+?)\s*$", result.stdout + result.stderr, re.MULTILINE)
        return result.returncode, set(found)

    assert errors("validate") == (1, {"Duplicate variable declaration"})
    # init reads the children, and says so; validate after it still reports the root alone.
    assert errors("init", "-backend=false", "-input=false") == (
        1,
        {"Duplicate variable declaration", "Unreadable module directory", "Duplicate output definition"},
    )
    assert errors("validate") == (1, {"Duplicate variable declaration"})
    assert ours == {"Duplicate variable declaration"}
