"""Provider wiring (spec §4.2, §4.7–§4.8): resolution, validation diagnostics, audit, explicit rewrite.

Each directory under ``tests/data/providers/`` is a root module; ``# ERROR: summary`` and
``# WARNING: summary`` mark the line a diagnostic must start on, and a case without markers must
produce no diagnostics. Cases named ``tofu-*`` use the OpenTofu dialect.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cases import case_dirs, expected_diagnostics
from support.paths import DATA as TEST_DATA
from support.paths import SAMPLES
from typer.testing import CliRunner

from flatten.build import build
from flatten.cli import app
from flatten.lang.diagnostics import Diagnostics, Severity
from flatten.lang.model import Expr, Range
from flatten.lang.options import Dialect, Options
from flatten.providers import How, wire_providers
from flatten.providers.addresses import ConfigRef, Naming, Provider, implied_local_name, parse_config_ref
from flatten.providers.audit import audit_json, explain
from flatten.providers.validate import for_each_identical
from flatten.stages.graph import build_graph

DATA = TEST_DATA / "providers"
CASES = [p.name for p in case_dirs(DATA)]
AWS = 'provider["registry.terraform.io/hashicorp/aws"]'


def _dialect(case: str) -> Dialect:
    return Dialect.OPENTOFU if case.startswith("tofu-") else Dialect.TERRAFORM


def _expected(root: Path) -> set[tuple[str, str, str, int]]:
    return {(e.severity, e.summary, e.file, e.line) for e in expected_diagnostics(root, nested=True)}


def _wire(root: Path, dialect: Dialect = Dialect.TERRAFORM):  # type: ignore[no-untyped-def]
    options = Options(dialect=dialect)
    graph, diags = build_graph(root, options=options)
    assert not diags.has_errors, diags
    return wire_providers(graph, options=options)


@pytest.mark.parametrize("case", CASES)
def test_case_diagnostics(case: str) -> None:
    root = DATA / case
    _, diags = build(root, options=Options(dialect=_dialect(case)))
    got = {
        (
            d.severity.value,
            d.summary,
            d.range.filename if d.range else "",
            d.range.start.line if d.range else 0,
        )
        for d in diags
    }
    assert got == _expected(root)


def test_module_paths_on_diagnostics() -> None:
    _, diags = _wire(DATA / "empty-proxy-blocks")
    assert [d.module for d in diags] == ["module.child"]
    _, diags = _wire(DATA / "override-config")
    assert [d.module for d in diags] == [""]  # the range is the caller's providers item


def test_tofu_wording_of_incompatible_module() -> None:
    _, diags = _wire(DATA / "legacy-count", Dialect.OPENTOFU)
    assert [d.summary for d in diags] == [
        "Module is incompatible with count, for_each, enabled and depends_on"
    ]


def test_multi_region_sample_resolution() -> None:
    wiring, diags = _wire(SAMPLES / "multi-region")
    assert not diags
    got = {r.address: str(r.config) for r in wiring.resources()}
    assert got == {
        "module.bucket_w1.aws_s3_bucket.this": f"{AWS}.usw2",
        "module.bucket_w1.aws_s3_bucket_policy.this": f"{AWS}.usw2",
        "module.bucket_w2.aws_s3_bucket.this": f"{AWS}.euw1",
        "module.bucket_w2.aws_s3_bucket_policy.this": f"{AWS}.euw1",
        "module.tunnel.aws_vpc.src": f"{AWS}.usw2",
        "module.tunnel.aws_vpc.dst": f"{AWS}.euw1",
        "module.tunnel.aws_vpc_peering_connection.this": f"{AWS}.usw2",
        "module.tunnel.aws_vpc_peering_connection_accepter.this": f"{AWS}.euw1",
    }
    tunnel = wiring.module("module.tunnel")
    assert tunnel is not None
    hows = {b.key: b.how for b in tunnel.received}
    assert hows == {"aws.src": How.PASSED, "aws.dst": How.PASSED, "aws": How.INHERITED}
    src = next(b for b in tunnel.received if b.key == "aws.src")
    assert src.range is not None and (src.range.filename, src.range.start.line) == ("main.tf", 45)


def test_legacy_module_declares_its_own_configuration() -> None:
    wiring, diags = _wire(SAMPLES / "legacy")
    assert [d.summary for d in diags] == []
    (res,) = [r for r in wiring.resources()]
    assert str(res.config) == f"module.legacy.{AWS}"
    assert res.declared_in == ("legacy",)


def test_providers_map_does_not_cancel_inheritance() -> None:
    wiring, _ = _wire(DATA / "inherit-and-pass")
    got = {r.address: str(r.config) for r in wiring.resources()}
    google = 'provider["registry.terraform.io/hashicorp/google"]'
    assert got == {
        "module.child.aws_vpc.x": f"{AWS}.west",
        "module.child.google_compute_network.y": google,
        "module.child.module.grandchild.aws_vpc.z": f"{AWS}.west",
        "module.child.module.grandchild.data.google_client_config.c": google,
    }


def test_empty_block_not_passed_blocks_inheritance(tree) -> None:  # type: ignore[no-untyped-def]
    root = tree(
        {
            "main.tf": 'provider "aws" {\n  region = "x"\n}\nmodule "c" {\n  source = "./c"\n}\n',
            "c/main.tf": 'provider "aws" {}\nresource "aws_vpc" "v" {}\n',
        }
    )
    wiring, diags = _wire(root)
    assert [d.summary for d in diags] == ["Redundant empty provider block"]
    (res,) = list(wiring.resources())
    assert str(res.config) == f"module.c.{AWS}"


def test_implicit_root_configuration_and_dialect_host(tree) -> None:  # type: ignore[no-untyped-def]
    root = tree(
        {"main.tf": 'module "c" {\n  source = "./c"\n}\n', "c/main.tf": 'resource "null_resource" "n" {}\n'}
    )
    wiring, _ = _wire(root, Dialect.OPENTOFU)
    (res,) = list(wiring.resources())
    assert str(res.config) == 'provider["registry.opentofu.org/hashicorp/null"]'
    assert res.binding is not None and res.binding.how is How.IMPLICIT


def test_missing_alias_resolves_to_none() -> None:
    wiring, _ = _wire(DATA / "tunnel-missing-alias")
    res = wiring.resource("module.tunnel.aws_vpc.dst")
    assert res is not None and res.config is None


def test_explain_chain() -> None:
    wiring, _ = _wire(SAMPLES / "multi-region")
    text = explain(wiring, "module.tunnel.aws_vpc.src")
    assert text is not None
    assert "passed as aws.usw2 by the root module (main.tf:45)" in text
    assert text.rstrip().endswith(f"=> {AWS}.usw2")
    assert explain(wiring, "nope.nope") is None


def test_audit_json_shape() -> None:
    wiring, diags = _wire(SAMPLES / "multi-region")
    doc = audit_json(wiring, diags)
    modules = {m["address"]: m for m in doc["modules"]}  # type: ignore[index, union-attr]
    assert set(modules) == {"", "module.bucket_w1", "module.bucket_w2", "module.tunnel"}
    reqs = modules[""]["requirements"]
    assert reqs == [
        {
            "provider": "registry.terraform.io/hashicorp/aws",
            "constraints": [">= 5.0, < 6.0"],
            "version": ">= 5.0.0, < 6.0.0",  # as `terraform providers` shows it
        }
    ]


def test_cli_providers_shows_errors_inline() -> None:
    result = CliRunner().invoke(app, ["providers", str(DATA / "legacy-count")])
    assert result.exit_code == 1
    assert "! Error: Module is incompatible with count, for_each, and depends_on (main.tf:4)" in result.stdout
    result = CliRunner().invoke(app, ["providers", str(SAMPLES / "multi-region"), "--json"])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["valid"] is True
    result = CliRunner().invoke(
        app, ["providers", str(SAMPLES / "multi-region"), "--explain", "module.bucket_w2.aws_s3_bucket.this"]
    )
    assert result.exit_code == 0 and f"=> {AWS}.euw1" in result.stdout


def test_explicit_providers_rewrite() -> None:
    root = DATA / "inherit-and-pass"
    result, diags = build(root, options=Options(explicit_providers=True))
    assert not diags.has_errors
    doc = json.loads(result.files["main.tf.json"])
    assert doc["module"]["child"]["providers"] == {"aws": "aws.west", "google": "google"}
    child = json.loads(result.files["modules/child/main.tf.json"])
    assert child["module"]["grandchild"]["providers"] == {"aws": "aws", "google": "google"}


def test_explicit_providers_declares_configuration_aliases(tree) -> None:  # type: ignore[no-untyped-def]
    root = tree(
        {
            "main.tf": 'provider "aws" {\n  alias = "w"\n  region = "x"\n}\n'
            'module "c" {\n  source = "./c"\n  providers = {\n    aws.dst = aws.w\n  }\n}\n',
            "c/main.tf": 'provider "aws" {\n  alias = "dst"\n}\n'
            'resource "aws_vpc" "v" {\n  provider = aws.dst\n}\n',
        }
    )
    result, diags = build(root, options=Options(explicit_providers=True))
    assert not diags.has_errors
    child = json.loads(next(v for k, v in result.files.items() if k.endswith("c/main.tf.json")))
    assert "provider" not in child
    assert child["terraform"]["required_providers"][0]["aws"] == {
        "configuration_aliases": ["aws.dst"],
        "source": "hashicorp/aws",
    }


@pytest.mark.parametrize(
    ("text", "ref"),
    [
        ("aws", ConfigRef("aws")),
        ("aws.west", ConfigRef("aws", "west")),
        ("null.blah[each.key]", ConfigRef("null", "blah", "each.key")),
        ("${aws.west}", ConfigRef("aws", "west")),
    ],
)
def test_parse_config_ref(text: str, ref: ConfigRef) -> None:
    assert parse_config_ref(text) == ref


@pytest.mark.parametrize(
    ("type_", "name"), [("aws_instance", "aws"), ("google_beta_x", "google"), ("null", "null")]
)
def test_implied_local_name(type_: str, name: str) -> None:
    assert implied_local_name(type_) == name


def test_naming() -> None:
    tf, tofu = Naming(Dialect.TERRAFORM), Naming(Dialect.OPENTOFU)
    assert str(tf.implied("terraform")) == "terraform.io/builtin/terraform"
    assert str(tf.default("terraform")) == "registry.terraform.io/hashicorp/terraform"
    assert str(tofu.implied("aws")) == "registry.opentofu.org/hashicorp/aws"
    assert tf.parse_source("acme/aws") == Provider("registry.terraform.io", "acme", "aws")
    assert tf.parse_source("terraform-provider-x") is None


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("${local.stuff}", "${(local.stuff)}", True),
        ("${local.a ? {} : {}}", "${local.a ? {} : {}}", True),
        ('${toset(["a"])}', '${toset(["a"])}', False),  # constant: no variables
        ("${local.a}", "${local.b}", False),
    ],
)
def test_for_each_identical(a: str, b: str, same: bool) -> None:
    r = Range.point("main.tf")
    assert for_each_identical(Expr(a, r), Expr(b, r)) is same


def test_severities_are_typed() -> None:
    _, diags = _wire(DATA / "type-mismatch")
    assert [d.severity for d in diags] == [Severity.ERROR]


# -- provider-validation variants no OpenTofu fixture covers (conformance README, "Known gaps") --


def _marked(
    root: Path, dialect: Dialect = Dialect.TERRAFORM
) -> tuple[set[tuple[str, str, str, int]], Diagnostics]:
    """Return (diagnostics as marker tuples, diagnostics) of building ``root``."""
    _, diags = build(root, options=Options(dialect=dialect))
    got = {
        (
            d.severity.value,
            d.summary,
            d.range.filename if d.range else "",
            d.range.start.line if d.range else 0,
        )
        for d in diags
    }
    return got, diags


def test_type_mismatch_suggests_the_childs_name_for_the_type(tree) -> None:  # type: ignore[no-untyped-def]
    root = tree(
        {
            "main.tf": 'terraform {\n  required_providers {\n    foo = {\n      source = "hashicorp/foo"\n'
            '    }\n  }\n}\nprovider "foo" {\n  x = 1\n}\nmodule "child" {\n  source = "./child"\n'
            "  providers = {\n    foo = foo # ERROR: Provider type mismatch\n  }\n}\n",
            "child/main.tf": 'terraform {\n  required_providers {\n    foo = {\n      source = "acme/foo"\n'
            '    }\n    hfoo = {\n      source = "hashicorp/foo"\n    }\n  }\n}\n',
        }
    )
    got, diags = _marked(root)
    assert got == _expected(root)
    (diag,) = diags
    assert diag.detail.startswith(
        'The assigned configuration is for provider "hashicorp/foo", but local name "foo" in the root '
        'module represents "acme/foo".'
    )
    assert diag.detail.endswith('use the local name "hfoo" instead.')
    assert diag.range is not None and diag.range.start.column == 5  # the child-side key


def test_undefined_provider_with_a_non_default_type_is_an_error(tree) -> None:  # type: ignore[no-untyped-def]
    root = tree(
        {
            "main.tf": 'terraform {\n  required_providers {\n    foo = {\n      source = "acme/foo"\n'
            '    }\n  }\n}\nprovider "foo" {\n  x = 1\n}\nmodule "child" {\n  source = "./child"\n'
            "  providers = {\n    foo.extra = foo # ERROR: Reference to undefined provider\n  }\n}\n",
            # The child requires foo, but declares no configuration alias foo.extra.
            "child/main.tf": 'terraform {\n  required_providers {\n    foo = {\n      source = "acme/foo"\n'
            "    }\n  }\n}\n",
        }
    )
    got, diags = _marked(root)
    assert got == _expected(root)
    assert diags[0].severity is Severity.ERROR
    assert 'does not declare any provider requirement with the local name "foo.extra"' in diags[0].detail


LEGACY_CHILD = 'provider "aws" {\n  region = "us-east-1"\n}\nresource "aws_vpc" "v" {}\n'


@pytest.mark.parametrize(
    ("dialect", "argument", "summary"),
    [
        (
            Dialect.TERRAFORM,
            "  depends_on = [null_resource.x] # ERROR: {}\n",
            "Module is incompatible with count, for_each, and depends_on",
        ),
        (
            Dialect.OPENTOFU,
            "  lifecycle {\n    enabled = true # ERROR: {}\n  }\n",
            "Module is incompatible with count, for_each, enabled and depends_on",
        ),
        (
            Dialect.OPENTOFU,
            '  for_each = toset(["a"]) # ERROR: {}\n',
            "Module is incompatible with count, for_each, enabled and depends_on",
        ),
    ],
)
def test_legacy_module_is_incompatible_with_each_repetition_argument(  # type: ignore[no-untyped-def]
    tree, dialect: Dialect, argument: str, summary: str
) -> None:
    root = tree(
        {
            "main.tf": 'resource "null_resource" "x" {}\nmodule "legacy" {\n  source = "./legacy"\n'
            + argument.replace("{}", summary)
            + "}\n",
            "legacy/main.tf": LEGACY_CHILD,
        }
    )
    got, diags = _marked(root, dialect)
    assert got == _expected(root)
    assert diags[0].module == ""  # reported on the caller's argument


def test_invalid_instance_key_variants(tree) -> None:  # type: ignore[no-untyped-def]
    root = tree(
        {
            "main.tf": 'provider "aws" {\n  alias    = "multi"\n  for_each = toset(["a"])\n'
            '  region   = "x"\n}\n'
            'provider "aws" {\n  alias  = "single"\n  region = "y"\n}\n'
            'resource "aws_vpc" "no_alias" {\n  for_each = toset(["a"])\n'
            "  provider = aws[each.key] # ERROR: Invalid resource provider configuration\n}\n"
            'resource "aws_vpc" "single" {\n  for_each = toset(["a"])\n'
            "  provider = aws.single[each.key] # ERROR: Invalid resource provider configuration\n}\n"
            'resource "aws_vpc" "no_key" {\n'
            "  provider = aws.multi # ERROR: Invalid resource provider configuration\n}\n"
            'module "child" {\n  source = "./child"\n  providers = {\n'
            '    aws.x["a"] = aws.single # ERROR: Invalid module provider configuration\n  }\n}\n',
            "child/main.tf": "terraform {\n  required_providers {\n    aws = {\n"
            '      source = "hashicorp/aws"\n      configuration_aliases = [aws.x]\n    }\n  }\n}\n',
        }
    )
    got, diags = _marked(root, Dialect.OPENTOFU)
    assert got == _expected(root)
    details = [d.detail for d in diags]
    assert any("can be used only with a provider configuration that has an alias" in d for d in details)
    assert any("does not use for_each, so it has no instances" in d for d in details)
    assert any("requires an instance key" in d for d in details)
    assert any("not allowed on the left side" in d for d in details)


# --- issue 14: what Terraform finds after validation (flatten/providers/checks.py) ---------------


def test_providers_command_fails_on_a_configuration_that_exists_nowhere(tree) -> None:  # type: ignore[no-untyped-def]
    root = tree({"main.tf": 'resource "terraform_data" "a" {\n  provider = terraform.nowhere\n}\n'})
    result = CliRunner().invoke(app, ["providers", str(root)])
    assert result.exit_code == 1
    assert "MISSING" in result.stdout
    assert "! Error: Provider configuration not present (main.tf:2)" in result.stdout
    _, diags = build(root, options=Options())
    (diag,) = diags
    assert 'provider["terraform.io/builtin/terraform"].nowhere is required' in diag.detail


def test_every_call_with_a_missing_input_is_reported(tree) -> None:  # type: ignore[no-untyped-def]
    # Terraform stops at one call (chosen by Go's map order); flatten reports each, in tree order.
    root = tree(
        {
            "main.tf": 'module "a" {\n  source = "./m"\n}\nmodule "b" {\n  source = "./m"\n  x = 1\n}\n',
            "m/main.tf": 'variable "x" {}\nvariable "y" {}\nvariable "z" {\n  default = null\n}\n',
        }
    )
    _, diags = build(root, options=Options())
    got = [(d.summary, d.detail, str(d.range)) for d in diags]
    assert got == [
        (
            "Missing required argument",
            'The argument "x" is required, but no definition was found.',
            "main.tf:1,12-13",
        ),
        (
            "Missing required argument",
            'The argument "y" is required, but no definition was found.',
            "main.tf:1,12-13",
        ),
        (
            "Missing required argument",
            'The argument "y" is required, but no definition was found.',
            "main.tf:4,12-13",
        ),
    ]


def test_missing_provider_is_reported_for_every_module_that_passes_an_inherited_default(tree) -> None:  # type: ignore[no-untyped-def]
    builtin = '    terraform = {\n      source = "terraform.io/builtin/terraform"\n'
    aliases = "      configuration_aliases = [terraform.x]\n"
    k = f"terraform {{\n  required_providers {{\n{builtin}{aliases}    }}\n  }}\n}}\n"
    m = f"terraform {{\n  required_providers {{\n{builtin}    }}\n  }}\n}}\n"
    root = tree(
        {
            "main.tf": 'module "m" {\n  source = "./m"\n}\nmodule "n" {\n  source = "./m"\n}\n',
            "m/main.tf": m + 'module "k" {\n  source = "./k"\n  providers = { terraform.x = terraform }\n}\n',
            "m/k/main.tf": k,
        }
    )
    _, diags = build(root, options=Options())
    errors = [(d.summary, d.module, str(d.range)) for d in diags.errors]
    fqn = 'provider["terraform.io/builtin/terraform"]'
    assert errors == [
        (f"missing provider module.m.{fqn}", "module.m", "m/main.tf:10,17-40"),
        (f"missing provider module.n.{fqn}", "module.n", "m/main.tf:10,17-40"),
    ]
    assert "only inherits its default configuration" in diags.errors[0].detail
