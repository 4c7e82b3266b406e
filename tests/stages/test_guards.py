"""Files of the other dialect (flatten/stages/guards.py): an output never loads differently in the
engine it was built for, and never loads silently in the other."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.files import write_tree
from support.oracle import terraform
from typer.testing import CliRunner

from flatten.build import build
from flatten.cli import app
from flatten.lang.options import Dialect, Options

TREE = {
    "main.tf": 'resource "terraform_data" "a" {\n  input = "tf"\n}\nmodule "m" {\n  source = "./m"\n}\n',
    "main.tofu": 'resource "terraform_data" "a" {\n  input = "tofu"\n}\nmodule "m" {\n  source = "./m"\n}\n',
    "m/main.tf": 'output "o" {\n  value = "plain"\n}\n',
}


def _write(root: Path, out: Path, dialect: Dialect) -> Path:
    result = CliRunner().invoke(app, ["build", str(root), "--out", str(out), "--dialect", dialect.value])
    assert result.exit_code == 0, result.output
    return out


def _names(out: Path) -> list[str]:
    return sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())


def test_terraform_output_drops_tofu_files_and_stops_opentofu(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "src", TREE)
    out = _write(root, tmp_path / "tf", Dialect.TERRAFORM)
    # main.tofu no longer shadows anything in the output: it is not copied; the module without
    # .tofu files gets no guard.
    assert _names(out) == [
        "flatten-terraform-only.tofu.json",
        "flatten.manifest.json",
        "m/main.tf.json",
        "main.tf.json",
    ]
    assert '"tf"' in (out / "main.tf.json").read_text()
    # OpenTofu (its loader is flatten's opentofu dialect) refuses the output at the guard.
    _, diags = build(out, options=Options(dialect=Dialect.OPENTOFU))
    assert [(d.summary, d.range.filename if d.range else "") for d in diags] == [
        ("Incompatible module", "flatten-terraform-only.tofu.json")
    ]


def test_opentofu_output_stops_terraform(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "src", TREE)
    out = _write(root, tmp_path / "tofu", Dialect.OPENTOFU)
    assert _names(out) == [
        "flatten-opentofu-only.tf.json",
        "flatten-opentofu-only.tofu.json",
        "flatten.manifest.json",
        "m/main.tf.json",
        "main.tf.json",
    ]
    assert '"tofu"' in (out / "main.tf.json").read_text()
    _, diags = build(out, options=Options())
    assert [d.summary for d in diags] == ["Unsupported Terraform Core version"]
    # OpenTofu loads it as built: the empty .tofu.json hides the .tf.json guard.
    assert not build(out, options=Options(dialect=Dialect.OPENTOFU))[1]


@pytest.mark.parametrize("dialect", list(Dialect))
def test_guards_are_a_fixed_point(tmp_path: Path, dialect: Dialect) -> None:
    root = write_tree(tmp_path / "src", TREE)
    first = build(root, options=Options(dialect=dialect))[0].files
    out = _write(root, tmp_path / "one", dialect)
    again = build(out, options=Options(dialect=dialect))[0].files
    strip = {k: v for k, v in first.items() if k != "flatten.manifest.json"}
    assert {k: v for k, v in again.items() if k != "flatten.manifest.json"} == strip


@pytest.mark.oracle
def test_terraform_itself_on_both_outputs(tmp_path: Path) -> None:
    tf = terraform()
    root = write_tree(tmp_path / "src", TREE)
    for dialect, ok in ((Dialect.TERRAFORM, True), (Dialect.OPENTOFU, False)):
        out = _write(root, tmp_path / dialect.value, dialect)
        init = tf.run("init", "-backend=false", "-no-color", cwd=out)
        text = init.stdout + init.stderr
        assert (init.returncode == 0) == ok, text
        if not ok:
            assert "Unsupported Terraform Core version" in text and "flatten-opentofu-only.tf.json" in text
