"""What ``validate`` finds without a provider schema (issue 29, item 6) and OpenTofu's graph checks (item 1).

The wording, ranges and verdicts below are Terraform 1.11's ``terraform validate`` on the same
files (each was run with the binary; tests/oracle/test_difftest.py compares generated trees with
it directly). The graph cases of the shared conformance corpus run in both dialects: its runner
only asks for the OpenTofu dialect, and each case records Terraform 1.11's verdict too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.files import write_tree
from support.paths import REPO, SHARED
from typer.testing import CliRunner

from flatten.build import build
from flatten.cli import app
from flatten.lang.options import Dialect, Options

DIALECTS = [Dialect.TERRAFORM, Dialect.OPENTOFU]
CHILD = {
    "c/main.tf": (
        'variable "m" {\n  type = map(string)\n  default = {}\n}\n'
        'variable "n" {\n  type = number\n  default = 1\n}\n'
        'output "o" { value = 1 }\n'
    )
}


def _errors(root: Path, dialect: Dialect = Dialect.TERRAFORM) -> list[tuple[str, str, int, int]]:
    _, diags = build(root, options=Options(dialect=dialect))
    return [
        (d.summary, d.detail, d.range.start.line if d.range else 0, d.range.start.column if d.range else 0)
        for d in diags.errors
    ]


# (main.tf, [(summary, detail, line, column)]) as terraform validate 1.11 reports them.
MODULE_CASES = {
    "undeclared-module": (
        'output "x" { value = module.nope.x }\nmodule "nop" { source = "./c" }\n',
        [
            (
                "Reference to undeclared module",
                'No module call named "nope" is declared in the root module. Did you mean "nop"?',
                1,
                22,
            )
        ],
    ),
    # Two near names: Terraform sorts the call names and suggests the first within distance 2
    # ("aab"), not the nearest ("abc") nor the first declared (evaluate_valid.go).
    "suggestion-sorted": (
        (
            'module "abc" { source = "./c" }\nmodule "aab" { source = "./c" }\n'
            'output "x" { value = module.abd }\n'
        ),
        [
            (
                "Reference to undeclared module",
                'No module call named "abd" is declared in the root module. Did you mean "aab"?',
                3,
                22,
            )
        ],
    ),
    "undeclared-output": (
        'module "c" { source = "./c" }\noutput "x" { value = module.c.bad }\n',
        [("Unsupported attribute", 'This object does not have an attribute named "bad".', 2, 30)],
    ),
    "count-string": (
        'module "c" {\n  source = "./c"\n  count = "abc"\n}\n',
        [("Incorrect value type", "Invalid expression value: a number is required.", 3, 11)],
    ),
    "count-fraction": (
        'module "c" {\n  source = "./c"\n  count = 1.5\n}\n',
        [
            (
                "Invalid count argument",
                'The given "count" argument value is unsuitable: value must be a whole number, between '
                "-9223372036854775808 and 9223372036854775807.",
                3,
                11,
            )
        ],
    ),
    "count-null": (
        'module "c" {\n  source = "./c"\n  count = null\n}\n',
        [
            (
                "Invalid count argument",
                'The given "count" argument value is null. An integer is required.',
                3,
                11,
            )
        ],
    ),
    "for-each-string": (
        'module "c" {\n  source = "./c"\n  for_each = "x"\n}\n',
        [
            (
                "Invalid for_each argument",
                'The given "for_each" argument value is unsuitable: the "for_each" argument must be a map, '
                "or set of strings, and you have provided a value of type string.",
                3,
                14,
            )
        ],
    ),
    "input-constants": (
        'module "c" {\n  source = "./c"\n  m = "str"\n  n = "abc"\n}\n',
        [
            (
                "Invalid value for input variable",
                "The given value is not suitable for module.c.var.m declared at c/main.tf:1,1-13: map of "
                "string required.",
                3,
                7,
            ),
            (
                "Invalid value for input variable",
                "The given value is not suitable for module.c.var.n declared at c/main.tf:5,1-13: a number "
                "is required.",
                4,
                7,
            ),
        ],
    ),
    "input-typed-variable": (
        'variable "s" {\n  type = string\n}\nmodule "c" {\n  source = "./c"\n  m = var.s\n  n = var.s\n}\n',
        # An unknown string may convert to a number: only the map is an error.
        [
            (
                "Invalid value for input variable",
                "The given value is not suitable for module.c.var.m declared at c/main.tf:1,1-13: map of "
                "string required.",
                6,
                7,
            )
        ],
    ),
    "counted-output": (
        'module "c" {\n  source = "./c"\n  count = 2\n}\noutput "x" { value = module.c[0].bad }\n',
        [("Unsupported attribute", 'This object does not have an attribute named "bad".', 5, 33)],
    ),
    # A count the static evaluator reads through length(): the call is a list of objects.
    "counted-by-length": (
        'module "c" {\n  source = "./c"\n  count = length(["a", "b"])\n}\n'
        'output "x" { value = module.c.o }\n',
        [
            (
                "Unsupported attribute",
                'Can\'t access attributes on a list of objects. Did you mean to access attribute "o" for '
                "a specific element of the list, or across all elements of the list?",
                5,
                30,
            )
        ],
    ),
}


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("case", sorted(MODULE_CASES))
def test_module_mistakes_are_reported_as_validate_does(case: str, dialect: Dialect, tmp_path: Path) -> None:
    main, want = MODULE_CASES[case]
    root = write_tree(tmp_path, {"main.tf": main, **CHILD})
    assert sorted(_errors(root, dialect)) == sorted(want)


OBJECT_CASES = {
    "variable": (
        'output "x" { value = var.nope }\nvariable "nop" {}\n',
        [
            (
                "Reference to undeclared input variable",
                'An input variable with the name "nope" has not been declared. Did you mean "nop"?',
                1,
                22,
            )
        ],
    ),
    # Two near names: Go's map order, most likely declaration order (11 and 10 of 12 runs of
    # terraform 1.11.4 gave "aab"), not the nearest ("abc").
    "suggestion-declared-first": (
        'variable "aab" {}\nvariable "abc" {}\nlocals {\n  aab = 1\n  abc = 2\n}\n'
        'output "x" { value = var.abd }\noutput "y" { value = local.abd }\n',
        [
            (
                "Reference to undeclared input variable",
                'An input variable with the name "abd" has not been declared. Did you mean "aab"?',
                7,
                22,
            ),
            (
                "Reference to undeclared local value",
                'A local value with the name "abd" has not been declared. Did you mean "aab"?',
                8,
                22,
            ),
        ],
    ),
    "local": (
        'output "x" { value = local.nope }\n',
        [
            (
                "Reference to undeclared local value",
                'A local value with the name "nope" has not been declared.',
                1,
                22,
            )
        ],
    ),
    # Static validation fails first: the variable and the local of the same body are not evaluated.
    "resource-body": (
        'resource "terraform_data" "r" {\n  input = [var.nope, local.nope, terraform_data.nope.id, '
        "data.terraform_remote_state.nope.outputs, module.nope]\n}\n",
        [
            (
                "Reference to undeclared resource",
                'A managed resource "terraform_data" "nope" has not been declared in the root module.',
                2,
                11,
            ),
            (
                "Reference to undeclared resource",
                'A data resource "terraform_remote_state" "nope" has not been declared in the root module.',
                2,
                11,
            ),
            (
                "Reference to undeclared module",
                'No module call named "nope" is declared in the root module.',
                2,
                11,
            ),
        ],
    ),
    "module-depends-on": (
        'module "c" {\n  source = "./c"\n'
        "  depends_on = [terraform_data.nope, var.x, terraform_data.r.id]\n}\n"
        'resource "terraform_data" "r" {}\n',
        [
            (
                "Reference to undeclared resource",
                'A managed resource "terraform_data" "nope" has not been declared in the root module.',
                3,
                16,
            ),
            (
                "Invalid depends_on reference",
                "References in depends_on must be to a whole object (resource, etc), not to an attribute of "
                "an object.",
                3,
                16,
            ),
        ],
    ),
}


@pytest.mark.parametrize("case", sorted(OBJECT_CASES))
def test_object_references_are_reported_in_the_terraform_dialect(case: str, tmp_path: Path) -> None:
    main, want = OBJECT_CASES[case]
    root = write_tree(tmp_path, {"main.tf": main, **CHILD})
    assert sorted(_errors(root)) == sorted(want)


def test_object_references_follow_the_conformance_contract_in_the_opentofu_dialect(tmp_path: Path) -> None:
    # The OpenTofu corpus pins trees with such references as valid (lang/dialect.py,
    # "object_reference_checks"); module references are still checked.
    root = write_tree(tmp_path, {"main.tf": 'output "x" { value = [local.nope, module.nope] }\n'})
    assert [e[0] for e in _errors(root, Dialect.OPENTOFU)] == ["Reference to undeclared module"]


VALID = {
    "main.tf": """
variable "v" {
  type = list(string)
  default = []
  validation {
    condition     = length(var.v) < 3
    error_message = "short"
  }
}
locals { l = { a = 1 } }
module "c" {
  source   = "./c"
  for_each = local.l
  m        = { k = each.key }
}
module "d" {
  source = "./c"
  count  = 2
  n      = count.index
}
resource "terraform_data" "r" {
  count = 1
  input = [count.index, path.module, path.root, terraform.workspace, [for x in var.v : x],
           "%{for s in var.v}${s}%{endfor}", module.c["a"].o, module.d[0].o, module.d[*].o]
  provisioner "local-exec" {
    command = "echo ${self.id}"
  }
  lifecycle {
    ignore_changes       = [input]
    replace_triggered_by = [terraform_data.s]
  }
}
resource "terraform_data" "s" {
  for_each = toset(var.v)
  input    = { k = each.key, v = each.value, f = provider::terraform::encode_tfvars({ a = 1 }) }
}
terraform {
  required_providers {
    terraform = { source = "terraform.io/builtin/terraform" }
  }
}
check "health" {
  data "terraform_remote_state" "probe" {
    backend = "local"
  }
  assert {
    condition     = data.terraform_remote_state.probe.outputs != null
    error_message = "down"
  }
}
moved {
  from = terraform_data.old
  to   = terraform_data.s
}
removed {
  from = module.gone
  lifecycle { destroy = false }
}
output "o" { value = [terraform_data.r[0].output, module.c, local.l.a, var.v] }
""",
    **CHILD,
}


@pytest.mark.parametrize("dialect", DIALECTS)
def test_references_terraform_accepts_are_never_flagged(dialect: Dialect, tmp_path: Path) -> None:
    root = write_tree(tmp_path, VALID)
    assert _errors(root, dialect) == []


def test_opentofu_reports_a_misspelt_alias_as_terraform_does(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path,
        {
            "main.tf": 'provider "aws" {\n  alias = "replica"\n}\n'
            'resource "aws_s3_bucket" "b" {\n  provider = aws.replcia\n}\n'
        },
    )
    assert [e[0] for e in _errors(root, Dialect.OPENTOFU)] == ["Provider configuration not present"]
    result = CliRunner().invoke(app, ["providers", str(root), "--dialect", "opentofu"])
    assert result.exit_code == 1
    assert "aws.replcia => MISSING" in result.output


def test_root_configuration_aliases_are_configurations_in_opentofu_only(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path,
        {
            "main.tf": 'terraform {\n  required_providers {\n    test = {\n      source = "hashicorp/test"\n'
            "      configuration_aliases = [test.alias]\n    }\n  }\n}\n"
            'resource "test_object" "t" {\n  provider = test.alias\n}\n'
        },
    )
    assert _errors(root, Dialect.OPENTOFU) == []
    assert [e[0] for e in _errors(root)] == ["Provider configuration not present"]


def _corpus() -> Path | None:
    for shared in (SHARED, REPO.parent.parent / "shared"):
        if (shared / "conformance" / "cases.json").is_file():
            return shared / "conformance"
    return None


def _graph_cases() -> list[tuple[str, Dialect]]:
    corpus = _corpus()
    if corpus is None:
        return []
    out = []
    for case in json.loads((corpus / "cases.json").read_text(encoding="utf-8")):
        if case["category"] != "graph":
            continue
        out.append((case["case"], Dialect.OPENTOFU))
        if case.get("terraform_1_11") not in (None, "n/a"):
            out.append((case["case"], Dialect.TERRAFORM))
    return out


@pytest.mark.skipif(
    _corpus() is None, reason="the shared conformance corpus (../shared/conformance) is missing"
)
@pytest.mark.parametrize(("case", "dialect"), _graph_cases())
def test_graph_cases_in_both_dialects(case: str, dialect: Dialect) -> None:
    corpus = _corpus()
    assert corpus is not None
    entry = next(
        c for c in json.loads((corpus / "cases.json").read_text(encoding="utf-8")) if c["case"] == case
    )
    _, diags = build(corpus / "cases" / case, options=Options(dialect=dialect))
    errors = {d.summary for d in diags.errors}
    warnings = {d.summary for d in diags.warnings}
    if dialect is Dialect.TERRAFORM:
        assert errors == set(entry["terraform_1_11"])
        assert warnings == set(entry.get("terraform_1_11_warnings") or [])
        return
    if entry["expect"] == "error" and not entry["errors"]:
        assert errors
    else:
        assert errors == set(entry["errors"])
    if "warnings" in (entry.get("partial") or []):
        assert set(entry["warnings"]) <= warnings
    else:
        assert warnings == set(entry["warnings"])


def test_dynamic_iterators_are_not_resources(tmp_path: Path) -> None:
    # A provider's schema (aws_security_group's ingress) is not needed to know `rule` and
    # `egress` are the iterators of their dynamic blocks, in native and JSON syntax.
    root = write_tree(
        tmp_path,
        {
            "main.tf": 'variable "v" {\n  default = []\n}\n'
            'resource "aws_security_group" "g" {\n  dynamic "ingress" {\n    for_each = var.v\n'
            "    iterator = rule\n    content { from_port = rule.value }\n  }\n}\n",
            "more.tf.json": json.dumps(
                {
                    "resource": {
                        "aws_security_group": {
                            "h": {
                                "dynamic": {
                                    "egress": {
                                        "for_each": "${var.v}",
                                        "content": {"to_port": "${egress.value}"},
                                    }
                                }
                            }
                        }
                    }
                }
            ),
        },
    )
    assert _errors(root) == []
    assert _errors(write_tree(tmp_path / "bad", {"main.tf": 'output "x" { value = rule.value }\n'})) == [
        (
            "Reference to undeclared resource",
            'A managed resource "rule" "value" has not been declared in the root module.',
            1,
            22,
        )
    ]


def test_a_text_checked_once_is_checked_again_where_its_names_differ(tmp_path: Path) -> None:
    # The checks remember, per module, each text that reported nothing (references_check.py
    # ``_Checker._clean``): the same text is still an error where the names it reads differ, under
    # another dynamic iterator (g, then h) and in another module (the root declares local.a, the
    # child does not). Terraform 1.11's validate reports both, as the other cases here word them.
    sg = 'resource "aws_security_group" "{0}" {{\n  {1}\n}}\n'
    dynamic = (
        'dynamic "ingress" {\n    for_each = []\n    iterator = rule\n'
        "    content { from_port = rule.value }\n  }"
    )
    root = write_tree(
        tmp_path,
        {
            "main.tf": sg.format("g", dynamic)
            + sg.format("h", "description = rule.value")
            + 'locals {\n  a = 1\n}\noutput "x" { value = local.a }\nmodule "c" { source = "./c" }\n',
            "c/main.tf": 'output "y" { value = local.a }\n',
        },
    )
    assert _errors(root) == [
        (
            "Reference to undeclared resource",
            'A managed resource "rule" "value" has not been declared in the root module.',
            9,
            17,
        ),
        (
            "Reference to undeclared local value",
            'A local value with the name "a" has not been declared.',
            1,
            22,
        ),
    ]


def test_texts_of_one_shape_are_checked_once_per_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Texts that differ only by literal text ("${var.name}-1", "${var.name}-2") read the same
    # names: the checks remember the shape (references_check.py ``_Checker._shape``), so twenty
    # resources of one shape are checked as one (issue 41), and a text that reads another name is
    # still checked and still an error where it is one.
    from flatten.stages import references_check

    resource = 'resource "terraform_data" "r{0}" {{\n  input = "${{var.name}}-{0}-${{upper(local.x)}}"\n}}\n'
    files = {
        "main.tf": 'variable "name" {\n  default = "a"\n}\nlocals {\n  x = "b"\n}\n'
        + "".join(resource.format(i) for i in range(20))
        + 'resource "terraform_data" "bad" {\n  input = "${var.name}-${local.y}"\n}\n'
    }
    root = write_tree(tmp_path, files)
    asked: list[str] = []
    real = references_check._Checker.static

    def counting(self: object, ref: object, rng: object, located: object) -> bool:
        asked.append(f"{ref.root}.{ref.name(1)}")  # type: ignore[attr-defined]
        return real(self, ref, rng, located)  # type: ignore[arg-type]

    monkeypatch.setattr(references_check._Checker, "static", counting)
    assert _errors(root) == [
        (
            "Reference to undeclared local value",
            'A local value with the name "y" has not been declared. Did you mean "x"?',
            68,
            26,
        )
    ]
    # var.name and local.x once for the twenty, then the bad resource's two.
    assert sorted(asked) == ["local.x", "local.y", "var.name", "var.name"]


@pytest.mark.parametrize(
    ("override", "want"),
    [
        # A list: the override sets depends_on, which Terraform refuses.
        ('{"module": {"c": {"depends_on": ["terraform_data.a"]}}}', ["Unsupported override"]),
        # Not a list: the decoder's error alone (seed 266 of scripts/difftest --mistakes).
        ('{"module": {"c": {"depends_on": "[terraform_data.a]"}}}', ["Invalid expression"]),
    ],
)
def test_an_overridden_depends_on_is_refused_only_when_it_is_a_list(
    tmp_path: Path, override: str, want: list[str]
) -> None:
    main = 'resource "terraform_data" "a" {}\nmodule "c" {\n  source = "./c"\n}\n'
    root = write_tree(tmp_path, {"main.tf": main, "z_override.tf.json": override, **CHILD})
    assert [e[0] for e in _errors(root)] == want
