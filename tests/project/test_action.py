"""The GitHub Action (action.yml): its steps' script runs here with the environment GitHub sets
(GITHUB_ACTIONS, GITHUB_WORKSPACE, GITHUB_OUTPUT, GITHUB_ENV, GITHUB_PATH, RUNNER_TEMP,
GITHUB_ACTION_PATH), and the action file wires the steps as docs/action.md says (issue 28, item 11)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support.files import write_tree
from support.paths import REPO
from support.project_copy import copy_project

SCRIPT = REPO / "scripts" / "action.sh"
FLATTEN = Path(sys.executable).with_name("flatten")
MAIN = 'resource "terraform_data" "a" {\n  input = "x"\n}\n'
BROKEN = MAIN + MAIN  # the same resource twice


def _github_env(tmp_path: Path, **inputs: str) -> dict[str, str]:
    """The environment of a step on a GitHub runner, with the action's inputs."""
    runner = tmp_path / "runner"
    runner.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_", "FLATTEN_"))}
    env.update(
        GITHUB_ACTIONS="true",
        GITHUB_WORKSPACE=str(tmp_path / "workspace"),
        GITHUB_OUTPUT=str(runner / "output"),
        GITHUB_ENV=str(runner / "env"),
        GITHUB_PATH=str(runner / "path"),
        GITHUB_ACTION_PATH=str(REPO),
        RUNNER_TEMP=str(runner / "temp"),
        FLATTEN_CACHE_DIR=str(tmp_path / "cache"),
    )
    (runner / "temp").mkdir(exist_ok=True)
    env.update({f"INPUT_{name.upper()}": value for name, value in inputs.items()})
    return env


def _step(env: dict[str, str], command: str) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    """Run one step; return it and what it wrote to GITHUB_OUTPUT (this step's lines only)."""
    output = Path(env["GITHUB_OUTPUT"])
    output.write_text("")
    proc = subprocess.run(["bash", str(SCRIPT), command], env=env, capture_output=True, text=True)
    lines = output.read_text().splitlines()
    return proc, dict(line.split("=", 1) for line in lines)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "workspace", {"live/prod/main.tf": MAIN, "live/dev/main.tf": MAIN})


def test_check_fails_on_a_missing_output_then_passes_once_built(tmp_path: Path, workspace: Path) -> None:
    check = _github_env(tmp_path, roots="live/prod\nlive/dev", out="flat", check="true")
    check["FLATTEN_BIN"] = str(FLATTEN)
    proc, outputs = _step(check, "run")
    assert proc.returncode == 0, proc.stderr  # the step passes, so a SARIF upload can follow
    assert outputs == {"exit-code": "1"}
    assert not (workspace / "flat").exists()  # --check writes nothing
    assert "Output is out of date" in proc.stderr  # each missing file is a finding (stages/stale.py)

    build = {**check, "INPUT_CHECK": "false"}
    proc, outputs = _step(build, "run")
    assert outputs == {"exit-code": "0"}, proc.stderr
    assert (workspace / "flat" / "prod" / "main.tf.json").is_file()
    assert (workspace / "flat" / "dev" / "main.tf.json").is_file()
    proc, outputs = _step(check, "run")
    assert outputs == {"exit-code": "0"}, proc.stderr

    finish = subprocess.run(["bash", str(SCRIPT), "finish"], env={**check, "FLATTEN_EXIT_CODE": "1"})
    assert finish.returncode == 1
    passed = subprocess.run(["bash", str(SCRIPT), "finish"], env={**check, "FLATTEN_EXIT_CODE": "0"})
    assert passed.returncode == 0


def test_sarif_is_written_for_the_upload_step(tmp_path: Path, workspace: Path) -> None:
    (workspace / "live/dev/main.tf").write_text(BROKEN)
    env = _github_env(tmp_path, roots="live/prod live/dev", out="flat", check="false", upload_sarif="true")
    env["FLATTEN_BIN"] = str(FLATTEN)
    proc, outputs = _step(env, "run")
    assert proc.returncode == 0, proc.stderr
    assert outputs["exit-code"] == "1"
    assert "::error file=" in proc.stderr  # workflow annotations in the log (GITHUB_ACTIONS=true)
    sarif = Path(outputs["sarif-file"])
    assert sarif.parent == Path(env["RUNNER_TEMP"])
    log = json.loads(sarif.read_text())
    results = [r for run in log["runs"] for r in run["results"]]
    assert [(r["ruleId"], r["level"]) for r in results] == [("duplicate-resource-configuration", "error")]

    no_sarif = {**env, "INPUT_UPLOAD_SARIF": "false"}
    assert "sarif-file" not in _step(no_sarif, "run")[1]


def test_bad_inputs_are_reported_as_errors(tmp_path: Path, workspace: Path) -> None:
    env = _github_env(tmp_path, roots="live/prod", out="flat", check="maybe")
    env["FLATTEN_BIN"] = str(FLATTEN)
    proc, _ = _step(env, "run")
    assert proc.returncode == 2
    assert "::error title=flatten action::the check input is 'true' or 'false'" in proc.stderr
    missing = _github_env(tmp_path, roots="live/prod", out="flat")
    proc, _ = _step(missing, "run")  # no install step ran: no flatten in RUNNER_TEMP
    assert proc.returncode == 2 and "flatten is not installed" in proc.stderr


def test_action_yml_wires_the_script_and_the_sarif_upload() -> None:
    action = yaml.safe_load((REPO / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    steps = action["runs"]["steps"]
    runs = [s["run"] for s in steps if "run" in s]
    assert runs == [f'"$GITHUB_ACTION_PATH/scripts/action.sh" {c}' for c in ("install", "run", "finish")]
    # Inputs reach the script through env, never spliced into the shell text.
    assert all("${{" not in run for run in runs)
    build = next(s for s in steps if s.get("id") == "build")
    assert {f"INPUT_{name.upper().replace('-', '_')}" for name in action["inputs"]} >= set(build["env"])
    upload = next(s for s in steps if str(s.get("uses", "")).startswith("github/codeql-action/upload-sarif@"))
    assert "inputs.upload-sarif == 'true'" in upload["if"] and upload["if"].startswith("always()")
    assert upload["with"]["sarif_file"] == "${{ steps.build.outputs.sarif-file }}"
    assert set(action["outputs"]) == {"exit-code", "sarif-file"}
    docs = (REPO / "docs" / "action.md").read_text()
    for name in action["inputs"]:
        assert f"`{name}`" in docs, name
    assert ": action.md\n" in (REPO / "mkdocs.yml").read_text()  # in the site's nav


@pytest.mark.slow
def test_install_from_the_action_path_then_run(tmp_path: Path, workspace: Path) -> None:
    """The install step pip-installs flatten from the action's checkout into RUNNER_TEMP, and
    the run step finds it through GITHUB_ENV as the next step would."""
    action_path = copy_project(tmp_path / "action")
    env = _github_env(tmp_path, roots="live/prod", out="flat", check="false")
    env["GITHUB_ACTION_PATH"] = str(action_path)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["FLATTEN_PYTHON"] = sys.executable
    proc, _ = _step(env, "install")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert proc.stdout.startswith("flatten ")
    exported = dict(line.split("=", 1) for line in Path(env["GITHUB_ENV"]).read_text().splitlines())
    assert Path(exported["FLATTEN_BIN"]).is_relative_to(env["RUNNER_TEMP"])
    assert Path(env["GITHUB_PATH"]).read_text().strip() == str(Path(exported["FLATTEN_BIN"]).parent)
    proc, outputs = _step({**env, **exported}, "run")
    assert outputs == {"exit-code": "0"}, proc.stderr
    assert (workspace / "flat" / "main.tf.json").is_file()
