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
    env = _github_env(tmp_path, roots="live/prod\nlive/dev", out="flat", check="false", upload_sarif="true")
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
    assert "::error title=flatten action::the check input is 'true' or 'false'." in proc.stderr
    missing = _github_env(tmp_path, roots="live/prod", out="flat")
    proc, _ = _step(missing, "run")  # no install step ran: no flatten in RUNNER_TEMP
    assert proc.returncode == 2 and "flatten is not installed" in proc.stderr


def test_action_yml_wires_the_script_and_the_sarif_upload() -> None:
    action = yaml.safe_load((REPO / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    steps = action["runs"]["steps"]
    runs = [s["run"] for s in steps if "run" in s]
    commands = ("cache-key", "install", "run", "finish")
    assert runs == [f'"$GITHUB_ACTION_PATH/scripts/action.sh" {c}' for c in commands]
    # The install is cached under the key the script computes, restored before the install step.
    names = [s.get("id") or s.get("uses") or s["run"].rsplit(" ", 1)[-1] for s in steps]
    cache = next(s for s in steps if str(s.get("uses", "")).startswith("actions/cache@"))
    assert names.index("cache-key") < steps.index(cache) < names.index("install")
    assert cache["with"] == {
        "path": "${{ steps.cache-key.outputs.path }}",
        "key": "${{ steps.cache-key.outputs.key }}",
    }
    assert cache["if"] == "inputs.cache == 'true'"
    # Inputs reach the script through env, never spliced into the shell text.
    assert all("${{" not in run for run in runs)
    build = next(s for s in steps if s.get("id") == "build")
    assert {f"INPUT_{name.upper().replace('-', '_')}" for name in action["inputs"]} >= set(build["env"])
    upload = next(s for s in steps if str(s.get("uses", "")).startswith("github/codeql-action/upload-sarif@"))
    assert "inputs.upload-sarif == 'true'" in upload["if"] and upload["if"].startswith("always()")
    assert upload["with"]["sarif_file"] == "${{ steps.build.outputs.sarif-file }}"
    assert set(action["outputs"]) == {"exit-code", "sarif-file", "matrix", "any-affected"}
    assert build["env"]["INPUT_MODE"] == "${{ inputs.mode }}"
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


def _forged_lines(text: str) -> list[str]:
    """Return the lines of ``text`` that GitHub would read as a workflow command not of ours."""
    ours = (
        "::error title=flatten action::",
        "::warning title=flatten action::",
        "::error file=",
        "::warning file=",
    )
    return [
        line for line in text.splitlines() if line.lstrip().startswith("::") and not line.startswith(ours)
    ]


def test_roots_are_lines_never_words_nor_options(tmp_path: Path) -> None:
    """Issue 38 item 10: a root with a space is one root, and a root named like an option stays a
    directory name (it goes after `--`)."""
    workspace = write_tree(
        tmp_path / "workspace", {"live/my prod/main.tf": MAIN, "live/--exclude=*/main.tf": MAIN}
    )
    env = _github_env(tmp_path, roots="  live/my prod\r\n\nlive/--exclude=*\n", out="flat", check="false")
    env["FLATTEN_BIN"] = str(FLATTEN)
    proc, outputs = _step(env, "run")
    assert outputs["exit-code"] == "0", proc.stderr
    # Both roots built: --exclude=* was not read as the option (which would leave every file out).
    assert (workspace / "flat" / "my prod" / "main.tf.json").is_file()
    assert (workspace / "flat" / "--exclude=*" / "main.tf.json").is_file()

    one = _github_env(tmp_path, roots="live/my prod", out="single", check="false")
    one["FLATTEN_BIN"] = str(FLATTEN)
    proc, outputs = _step(one, "run")
    assert outputs["exit-code"] == "0", proc.stderr
    assert (workspace / "single" / "main.tf.json").is_file()


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"check": "::stop-commands::x\n::error::forged"}, "the check input is 'true' or 'false'."),
        ({"roots": "live/prod\nlive/::add-mask::x"}, "which is not a directory"),
        ({"roots": "live/prod", "args": "--offline --locked"}, "holds a space"),
        ({"roots": "live/prod", "args": "live/dev"}, "one option per line"),
        ({"roots": "live/prod", "dialect": "tofu\n::error::forged"}, "the dialect input is"),
        ({"roots": "live/prod", "upload_sarif": "yes"}, "the upload-sarif input is"),
        ({"roots": "live/prod", "out": "flat\n::error::forged"}, "the out input holds a line break"),
    ],
)
def test_inputs_are_validated_and_never_echoed_raw(
    tmp_path: Path, workspace: Path, inputs: dict[str, str], message: str
) -> None:
    """Issue 38 item 10: a bad input stops the step with one annotation of ours; the value is never
    echoed raw, so no line GitHub reads as a workflow command can come from an input."""
    env = _github_env(tmp_path, **{"out": "flat", **inputs})
    env["FLATTEN_BIN"] = str(FLATTEN)
    proc, _ = _step(env, "run")
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert _forged_lines(proc.stdout + proc.stderr) == []
    assert len((proc.stdout + proc.stderr).splitlines()) == 1
    assert not (workspace / "flat").exists()


def test_the_exit_code_is_checked_before_use(tmp_path: Path) -> None:
    env = _github_env(tmp_path)
    proc = subprocess.run(
        ["bash", str(SCRIPT), "finish"],
        env={**env, "FLATTEN_EXIT_CODE": "1; echo ::error::x"},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "gave no exit code" in proc.stderr
    assert _forged_lines(proc.stdout + proc.stderr) == []


def test_step_summary_names_roots_status_findings_and_stale_files(tmp_path: Path, workspace: Path) -> None:
    """Issue 39 item 6: the run step writes a Markdown summary to GITHUB_STEP_SUMMARY."""
    summary = tmp_path / "runner" / "summary.md"
    (workspace / "live/dev/main.tf").write_text('resource "terraform_data" "a" {\n  input = "<b>|x`"\n}\n')
    env = _github_env(tmp_path, roots="live/prod\nlive/dev", out="flat", check="false")
    env.update(FLATTEN_BIN=str(FLATTEN), GITHUB_STEP_SUMMARY=str(summary))
    summary.write_text("")
    proc, outputs = _step(env, "run")
    assert outputs["exit-code"] == "0", proc.stderr
    built = summary.read_text()
    assert built.startswith("## flatten: ✅ built\n")
    assert "| roots | live/prod, live/dev |" in built
    assert "| stale files | 0 |" in built

    (workspace / "live/dev/main.tf").write_text(BROKEN)
    summary.write_text("")
    proc, outputs = _step({**env, "INPUT_CHECK": "true"}, "run")
    assert outputs["exit-code"] == "1", proc.stderr
    text = summary.read_text()
    assert text.startswith("## flatten: ❌ configuration errors\n")
    assert "| findings | 1 errors, 0 warnings |" in text
    assert '| error | Duplicate resource "terraform\\_data" configuration | live/dev/main.tf:4 |' in text

    (workspace / "live/dev/main.tf").write_text(MAIN.replace('"x"', '"y"'))
    summary.write_text("")
    proc, outputs = _step({**env, "INPUT_CHECK": "true"}, "run")
    assert outputs["exit-code"] == "1", proc.stderr
    text = summary.read_text()
    assert text.startswith("## flatten: ❌ the output is out of date\n")
    assert "| stale files | 2 |" in text  # the module's file and the manifest, which holds its digest
    assert "### Stale files\n\n- flat/dev/flatten.manifest.json\n- flat/dev/main.tf.json\n" in text
    # The files come from --check --diff (a finding points at the source line that changed), and
    # the diff itself is folded below them, escaped.
    assert "<details><summary>The diff (flatten build --check --diff)</summary>" in text
    assert '-        "input": "&lt;b&gt;|x`"\n+        "input": "y"' in text


def test_summary_escapes_markdown_and_html(tmp_path: Path) -> None:
    """A path from the user cannot end the table, add a link or inject HTML into the summary."""
    report = tmp_path / "report.json"
    report.write_text(
        json.dumps(
            {
                "diagnostics": [
                    {
                        "severity": "error",
                        "summary": "Output is out of date",
                        "range": {"filename": "a|b/[x](e)<img src=x>.tf", "start": {"line": 3}},
                    }
                ]
            }
        )
    )
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "action_summary.py"),
            "--json",
            str(report),
            "--out",
            "o|ut",
            "--exit-code",
            "1",
        ],
        input="r`oot\n",
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert "<img" not in text and "](" not in text.replace("\\](", "")
    assert "| r\\`oot/a\\|b/\\[x\\](e)&lt;img src=x&gt;.tf:3 |" in text
    assert "| output | o\\|ut |" in text


def _cache_key(env: dict[str, str]) -> dict[str, str]:
    proc, outputs = _step(env, "cache-key")
    assert proc.returncode == 0, proc.stderr
    assert set(outputs) == {"key", "path"}
    return outputs


def test_cache_key_follows_what_the_install_reads(tmp_path: Path) -> None:
    """Issue 39 item 6: the key changes with any file pip builds flatten from and with the Python,
    and not with the checkout's place nor with files the install does not read."""
    first = copy_project(tmp_path / "a")
    second = copy_project(tmp_path / "b")
    env = _github_env(tmp_path)
    env["FLATTEN_PYTHON"] = sys.executable
    key = _cache_key({**env, "GITHUB_ACTION_PATH": str(first)})
    assert key["path"] == str(Path(env["RUNNER_TEMP"]) / "flatten-action")
    assert key["key"].startswith("flatten-action-v1-")
    assert f"-py{'.'.join(map(str, sys.version_info[:3]))}-" in key["key"]
    assert _cache_key({**env, "GITHUB_ACTION_PATH": str(second)}) == key  # same content, same key

    (second / "docs" / "action.md").write_text("edited\n")  # not read by pip
    (second / "tests" / "conftest.py").write_text("# edited\n")
    assert _cache_key({**env, "GITHUB_ACTION_PATH": str(second)}) == key
    for edited in ("flatten/cli.py", "pyproject.toml", "README.md"):
        (second / edited).write_text((first / edited).read_text() + "\n")
        assert _cache_key({**env, "GITHUB_ACTION_PATH": str(second)})["key"] != key["key"], edited
        (second / edited).write_text((first / edited).read_text())
    (second / "flatten" / "new_module.py").write_text("")
    assert _cache_key({**env, "GITHUB_ACTION_PATH": str(second)})["key"] != key["key"]
    # Another environment place (a self-hosted runner's RUNNER_TEMP) is another key.
    other = {**env, "GITHUB_ACTION_PATH": str(first), "RUNNER_TEMP": str(tmp_path / "elsewhere")}
    assert _cache_key(other)["key"] != key["key"]


@pytest.mark.slow
def test_second_job_installs_from_the_cache_without_pip(tmp_path: Path, workspace: Path) -> None:
    """Issue 39 item 6: the first job installs with pip; the second, with the environment
    actions/cache restores under the same key, installs nothing (pip would fail: no index)."""
    import shutil
    import time

    action_path = copy_project(tmp_path / "action")
    env = _github_env(tmp_path, roots="live/prod", out="flat", check="false")
    env.update(
        GITHUB_ACTION_PATH=str(action_path), PIP_DISABLE_PIP_VERSION_CHECK="1", FLATTEN_PYTHON=sys.executable
    )
    key = _cache_key(env)
    started = time.monotonic()
    proc, _ = _step(env, "install")
    cold = time.monotonic() - started
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "using the environment the cache restored" not in proc.stdout

    # actions/cache saves key["path"] after the job and restores it in the next one's fresh temp.
    saved = tmp_path / "github-cache"
    shutil.copytree(key["path"], saved, symlinks=True)
    shutil.rmtree(env["RUNNER_TEMP"])
    Path(env["RUNNER_TEMP"]).mkdir()
    for name in ("GITHUB_ENV", "GITHUB_PATH"):
        Path(env[name]).write_text("")
    shutil.copytree(saved, key["path"], symlinks=True)
    offline = {**env, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": "", "PIP_INDEX_URL": "http://127.0.0.1:9/"}
    assert _cache_key(offline) == key
    started = time.monotonic()
    proc, _ = _step(offline, "install")
    warm = time.monotonic() - started
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert f"using the environment the cache restored (key {key['key']})" in proc.stdout
    exported = dict(line.split("=", 1) for line in Path(env["GITHUB_ENV"]).read_text().splitlines())
    proc, outputs = _step({**offline, **exported}, "run")
    assert outputs == {"exit-code": "0"}, proc.stderr
    print(f"install: cold {cold:.1f} s, from the cache {warm:.1f} s")

    # A restored environment of another key (flatten's code changed) is installed again.
    (action_path / "flatten" / "cli.py").write_text((action_path / "flatten" / "cli.py").read_text() + "\n")
    proc, _ = _step(offline, "install")
    assert proc.returncode != 0  # pip ran, and had no index to install from


def test_affected_mode_writes_the_matrix_of_the_roots_to_plan(tmp_path: Path) -> None:
    from support.servers import git

    workspace = write_tree(
        tmp_path / "workspace",
        {"live/prod/main.tf": MAIN, "live/dev/main.tf": MAIN, "live/web sites/main.tf": MAIN},
    )
    git("init", "--quiet", "--initial-branch=main", cwd=workspace)
    git("add", "-A", cwd=workspace)
    git("commit", "--quiet", "-m", "base", cwd=workspace)
    base = git("rev-parse", "HEAD", cwd=workspace)
    (workspace / "live/prod/main.tf").write_text(MAIN.replace('"x"', '"y"'))
    (workspace / "live/web sites/main.tf").write_text("# a comment\n" + MAIN)
    env = _github_env(tmp_path, mode="affected", since=base)
    env["FLATTEN_BIN"] = str(FLATTEN)
    proc, outputs = _step(env, "run")
    assert proc.returncode == 0, proc.stderr
    assert outputs == {
        "exit-code": "0",
        "matrix": '{"include":[{"root":"live/prod"}]}',
        "any-affected": "true",
    }
    assert "live/prod: affected: its output changed" in proc.stderr  # why, in the log
    # Roots as lines (a space inside one is part of its name), and nothing to plan.
    listed = _github_env(tmp_path, mode="affected", since=base, roots="live/dev\nlive/web sites")
    listed["FLATTEN_BIN"] = str(FLATTEN)
    proc, outputs = _step(listed, "run")
    assert outputs == {"exit-code": "0", "matrix": '{"include":[]}', "any-affected": "false"}, proc.stderr
    # A new branch's first push has no previous commit: a clear error, not a git failure.
    new_branch = {**env, "INPUT_SINCE": "0" * 40}
    proc, _ = _step(new_branch, "run")
    assert proc.returncode == 2 and "set since" in proc.stderr
    bad = {**env, "INPUT_MODE": "plan"}
    proc, _ = _step(bad, "run")
    assert proc.returncode == 2 and "the mode input is 'build' or 'affected'." in proc.stderr
