"""Early evaluation with the values ``tofu init`` reads (opentofu dialect): every source of root
variable values, their precedence (internal/command/meta_vars.go), the backend and the manifest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flatten.cli import app

MAIN = (
    'variable "env" {\n  default = "dev"\n}\n'
    'module "c" {\n  source = "./modules/${var.env}"\n}\n'
    'terraform {\n  backend "local" {\n    path = "state/${var.env}.tfstate"\n  }\n}\n'
)


def _tree(tree, **extra: str) -> Path:
    files = {
        "main.tf": MAIN,
        **{
            f"modules/{e}/main.tf": f'output "which" {{ value = "{e}" }}\n'
            for e in ("dev", "prod", "stage", "qa", "cli")
        },
    }
    files.update({name.replace("__", "."): text for name, text in extra.items()})
    return tree(files)


def _build(root: Path, out: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(
        app, ["build", str(root), "--out", str(out), "--dialect", "opentofu", *args], env=env or {}
    )
    return result.exit_code, result.output


def _chosen(out: Path) -> tuple[str, str, dict[str, object]]:
    main = json.loads((out / "main.tf.json").read_text())
    manifest = json.loads((out / "flatten.manifest.json").read_text())
    return (
        main["module"]["c"]["source"],
        main["terraform"]["backend"][0]["local"]["path"],
        manifest["variables"],
    )


def test_default_when_nothing_sets_it(tree, tmp_path: Path) -> None:
    code, output = _build(_tree(tree), tmp_path / "out")
    assert code == 0, output
    assert _chosen(tmp_path / "out") == (
        "./modules/dev",
        "state/${var.env}.tfstate",  # a reference: tofu init in the output evaluates it again
        {"env": {"source": "default"}},
    )


@pytest.mark.parametrize(
    ("files", "args", "env", "winner", "source"),
    [
        # Each source alone.
        ({}, [], {"TF_VAR_env": "qa"}, "qa", "TF_VAR_env"),
        ({"terraform__tfvars": 'env = "prod"\n'}, [], {}, "prod", "terraform.tfvars"),
        ({"terraform__tfvars__json": '{"env": "prod"}'}, [], {}, "prod", "terraform.tfvars.json"),
        ({"a__auto__tfvars": 'env = "stage"\n'}, [], {}, "stage", "a.auto.tfvars"),
        ({}, ["--var", "env=cli"], {}, "cli", "--var"),
        # TF_VAR_ is read first, so every file beats it.
        ({"terraform__tfvars": 'env = "prod"\n'}, [], {"TF_VAR_env": "qa"}, "prod", "terraform.tfvars"),
        # terraform.tfvars.json after terraform.tfvars; *.auto.tfvars after both, in lexical order.
        (
            {"terraform__tfvars": 'env = "prod"\n', "terraform__tfvars__json": '{"env": "qa"}'},
            [],
            {},
            "qa",
            "terraform.tfvars.json",
        ),
        (
            {
                "terraform__tfvars": 'env = "prod"\n',
                "b__auto__tfvars": 'env = "stage"\n',
                "a__auto__tfvars__json": '{"env": "qa"}',
            },
            [],
            {},
            "stage",
            "b.auto.tfvars",
        ),
        # The command line beats every file and the environment.
        ({"z__auto__tfvars": 'env = "stage"\n'}, ["--var", "env=cli"], {"TF_VAR_env": "qa"}, "cli", "--var"),
    ],
)
def test_each_source_and_precedence(tree, tmp_path: Path, files, args, env, winner, source) -> None:
    root = _tree(tree, **files)
    code, output = _build(root, tmp_path / "out", *args, env=env)
    assert code == 0, output
    assert _chosen(tmp_path / "out") == (
        f"./modules/{winner}",
        "state/${var.env}.tfstate",
        {"env": {"source": source}},
    )


def test_var_and_var_file_apply_in_command_line_order(tree, tmp_path: Path) -> None:
    root = _tree(tree)
    var_file = tmp_path / "extra.tfvars"
    var_file.write_text('env = "stage"\n')
    code, output = _build(root, tmp_path / "a", "--var", "env=cli", "--var-file", str(var_file))
    assert code == 0, output
    assert _chosen(tmp_path / "a")[0] == "./modules/stage"
    code, output = _build(root, tmp_path / "b", "--var-file", str(var_file), "--var", "env=cli")
    assert code == 0, output
    assert _chosen(tmp_path / "b")[0] == "./modules/cli"


def test_a_required_root_variable_without_a_value_is_opentofus_error(tree, tmp_path: Path) -> None:
    root = tree(
        {"main.tf": 'variable "env" {}\nmodule "c" {\n  source = "./m/${var.env}"\n}\n', "m/x/main.tf": ""}
    )
    code, output = _build(root, tmp_path / "out")
    assert code == 1
    assert "Failed to request input from user for variable var.env" in output
    assert "Unable to compute static value" in output
    code, output = _build(root, tmp_path / "out", "--var", "env=x")
    assert code == 0, output


def test_bad_var_option_and_missing_var_file(tree, tmp_path: Path) -> None:
    root = _tree(tree)
    code, output = _build(root, tmp_path / "out", "--var", "env")
    assert code == 1 and "Invalid -var option" in output
    code, output = _build(root, tmp_path / "out", "--var-file", str(tmp_path / "nope.tfvars"))
    assert code == 1 and "Failed to read variables file" in output and "does not exist" in output
    assert not (tmp_path / "out").exists()


def test_a_sensitive_value_is_never_written_to_the_manifest(tree, tmp_path: Path) -> None:
    root = tree(
        {
            "main.tf": 'variable "tag" {\n  default = "a"\n  sensitive = true\n}\n'
            'terraform {\n  backend "local" {\n    path = "s/${var.tag}"\n  }\n}\n',
        }
    )
    code, output = _build(root, tmp_path / "out", "--var", "tag=secret-value")
    assert code == 0, output
    manifest = (tmp_path / "out" / "flatten.manifest.json").read_text()
    assert json.loads(manifest)["variables"] == {"tag": {"source": "--var", "sensitive": True}}


def test_complex_types_parse_cli_values_as_expressions(tree, tmp_path: Path) -> None:
    root = tree(
        {
            "main.tf": 'variable "m" {\n  type = map(string)\n  default = {}\n}\n'
            'module "c" {\n  source = "./modules/${var.m.k}"\n}\n',
            "modules/v/main.tf": "",
        }
    )
    code, output = _build(root, tmp_path / "out", "--var", 'm={k = "v"}')
    # flatten's evaluator reads no attribute of a variable: it says so instead of guessing.
    assert code == 1 and "Unsupported module source expression" in output


def test_the_terraform_dialect_reads_no_values(tree, tmp_path: Path) -> None:
    root = _tree(tree, terraform__tfvars='env = "prod"\n')
    result = CliRunner().invoke(app, ["build", str(root), "--out", str(tmp_path / "out"), "--var", "env=x"])
    assert result.exit_code == 1
    assert "Variables not allowed" in result.output


@pytest.mark.parametrize("sensitive", [True, False])
def test_backend_and_cloud_values_from_variables_are_never_written(
    tree, tmp_path: Path, sensitive: bool
) -> None:
    # Issue 38, item 5: an access key evaluated from a variable (sensitive or not) went into
    # main.tf.json as a literal and into the manifest. The output keeps the reference, which
    # `tofu init -var ...` (or -backend-config) in the output evaluates again.
    marked = "  sensitive = true\n" if sensitive else ""
    root = tree(
        {
            "main.tf": f'variable "key" {{\n  type = string\n{marked}}}\n'
            'variable "org" {\n  type = string\n}\n'
            'terraform {\n  backend "s3" {\n    bucket = "b"\n    key = "k"\n    region = "r"\n'
            "    access_key = var.key\n  }\n}\n",
            "modules/x/main.tf": "",
        }
    )
    secret = "AKIAIOSFODNN7SECRETVALUE"
    code, output = _build(root, tmp_path / "out", env={"TF_VAR_key": secret, "TF_VAR_org": "acme"})
    assert code == 0, output
    written = {p.name: p.read_text() for p in (tmp_path / "out").rglob("*") if p.is_file()}
    assert written and not [name for name, text in written.items() if secret in text], written
    main = json.loads(written["main.tf.json"])
    assert main["terraform"]["backend"][0]["s3"]["access_key"] == "${var.key}"
    variables = json.loads(written["flatten.manifest.json"])["variables"]
    assert variables["key"]["source"] == "TF_VAR_key" and "value" not in variables["key"]
    assert secret not in output


def test_a_token_in_a_module_source_variable_is_not_in_the_manifest(tree, tmp_path: Path) -> None:
    root = tree(
        {
            "main.tf": 'variable "dir" {\n  type = string\n}\n'
            'module "c" {\n  source = "./modules/${var.dir}"\n}\n',
            "modules/ghp_abc/main.tf": "",
        }
    )
    code, output = _build(root, tmp_path / "out", "--var", "dir=ghp_abc")
    assert code == 0, output
    manifest = json.loads((tmp_path / "out" / "flatten.manifest.json").read_text())
    assert manifest["variables"] == {"dir": {"source": "--var"}}
