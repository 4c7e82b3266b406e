"""The shipped `flatten-check` pre-commit hook, installed and run by pre-commit itself.

pre-commit clones the hook repository (a commit of this checkout), installs it into its own
virtual environment with pip (`language: python`) and runs the hook in a scratch repository
that keeps a flattened output beside its sources: the hook passes while the output is fresh
and fails, naming the stale file, after a source edit.

`pre-commit try-repo` would be the one-line way to try a hook, but it writes a configuration
with the hook's id alone and no way to pass `args`; flatten-check needs ROOT and `--out`, so the
test writes the configuration a user writes (repo, rev, hooks with args) and runs
`pre-commit run`, which is what try-repo does after writing its configuration.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.project_copy import REPO, copy_project

SAMPLE = REPO / "samples" / "web-service"


def _git_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(
        GIT_AUTHOR_NAME="flatten tests",
        GIT_AUTHOR_EMAIL="tests@flatten.invalid",
        GIT_COMMITTER_NAME="flatten tests",
        GIT_COMMITTER_EMAIL="tests@flatten.invalid",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
        # pre-commit's own store (hook environments) in the test's directory, not ~/.cache.
        PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"),
        FLATTEN_CACHE_DIR=str(tmp_path / "flatten-cache"),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
    )
    return env


def _git(cwd: Path, env: dict[str, str], *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def _commit_all(repo: Path, env: dict[str, str], message: str) -> str:
    _git(repo, env, "add", "-A")
    _git(repo, env, "commit", "-q", "-m", message)
    return _git(repo, env, "rev-parse", "HEAD")


@pytest.mark.slow
def test_flatten_check_hook_passes_on_fresh_output_and_names_the_stale_file(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed (pre-commit clones hook repositories with it)")
    if importlib.util.find_spec("pre_commit") is None:
        pytest.skip("pre-commit is not installed (it is in the test extra: pip install -e .[test])")
    env = _git_env(tmp_path)

    # The hook repository: this checkout as it is now, committed.
    hooks = copy_project(tmp_path / "hooks")
    _git(hooks, env, "init", "-q", "-b", "main")
    rev = _commit_all(hooks, env, "flatten under test")

    # The user's repository: sources in infra/live, the flattened output in infra/flat.
    work = tmp_path / "work"
    shutil.copytree(SAMPLE, work / "infra" / "live")
    (work / ".pre-commit-config.yaml").write_text(
        "repos:\n"
        f"  - repo: {hooks}\n"
        f"    rev: {rev}\n"
        "    hooks:\n"
        "      - id: flatten-check\n"
        "        args: [infra/live, --out, infra/flat]\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "flatten", "build", "infra/live", "--out", "infra/flat"],
        cwd=work,
        env={**os.environ, "FLATTEN_CACHE_DIR": env["FLATTEN_CACHE_DIR"]},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    _git(work, env, "init", "-q", "-b", "main")
    _commit_all(work, env, "sources and their flattened output")

    def run_hook() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pre_commit", "run", "--all-files", "--color", "never"],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
        )

    fresh = run_hook()
    assert fresh.returncode == 0, fresh.stdout + fresh.stderr
    assert "flatten output is up to date" in fresh.stdout
    assert "Passed" in fresh.stdout

    main_tf = work / "infra" / "live" / "main.tf"
    edited = re.sub(
        r"instance_type(\s*)= var\.instance_type", r'instance_type\1= "t3.small"', main_tf.read_text()
    )
    main_tf.write_text(edited)
    assert main_tf.read_text().count('"t3.small"') == 1
    stale = run_hook()
    assert stale.returncode == 1, stale.stdout + stale.stderr
    assert "Failed" in stale.stdout
    assert "Error: Output is out of date" in stale.stdout
    assert "infra/flat/main.tf.json is not what the build writes now" in stale.stdout
    # The hook only checks: the stale output is left exactly as it was.
    assert _git(work, env, "status", "--porcelain", "infra/flat") == ""


# A root whose output copies a script and the root's terraform.tfvars: neither is a .tf file.
LOOP_ROOT = {
    "main.tf": (
        'variable "greeting" {\n  type = string\n}\n'
        'resource "terraform_data" "a" {\n'
        '  input = "${var.greeting} ${filesha256("${path.module}/setup.sh")}"\n}\n'
    ),
    "setup.sh": "#!/bin/sh\necho one\n",
    "terraform.tfvars": 'greeting = "hello"\n',
}


@pytest.mark.slow
def test_both_hooks_fail_a_commit_that_edits_only_a_copied_file_or_tfvars(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed (pre-commit clones hook repositories with it)")
    if importlib.util.find_spec("pre_commit") is None:
        pytest.skip("pre-commit is not installed (it is in the test extra: pip install -e .[test])")
    env = _git_env(tmp_path)
    hooks = copy_project(tmp_path / "hooks")
    _git(hooks, env, "init", "-q", "-b", "main")
    rev = _commit_all(hooks, env, "flatten under test")

    work = tmp_path / "work"
    for name, text in LOOP_ROOT.items():
        (work / "infra" / "live").mkdir(parents=True, exist_ok=True)
        (work / "infra" / "live" / name).write_text(text)
    proc = subprocess.run(
        [sys.executable, "-m", "flatten", "build", "infra/live", "--out", "infra/flat"],
        cwd=work,
        env={**os.environ, "FLATTEN_CACHE_DIR": env["FLATTEN_CACHE_DIR"]},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert (work / "infra" / "flat" / "setup.sh").is_file() and (
        work / "infra" / "flat" / "terraform.tfvars"
    ).is_file()
    _git(work, env, "init", "-q", "-b", "main")
    _commit_all(work, env, "sources and their flattened output")

    def use(hook: str) -> None:
        (work / ".pre-commit-config.yaml").write_text(
            f"repos:\n  - repo: {hooks}\n    rev: {rev}\n    hooks:\n"
            f"      - id: {hook}\n        args: [infra/live, --out, infra/flat]\n"
        )
        _git(work, env, "add", ".pre-commit-config.yaml")
        installed = subprocess.run(
            [sys.executable, "-m", "pre_commit", "install"], cwd=work, env=env, capture_output=True, text=True
        )
        assert installed.returncode == 0, installed.stdout + installed.stderr

    def commit(message: str) -> subprocess.CompletedProcess[str]:
        # `git commit` runs the installed hook, as it does for a user.
        return subprocess.run(
            ["git", "commit", "-q", "-m", message], cwd=work, env=env, capture_output=True, text=True
        )

    use("flatten-check")
    for name, old, new in (("setup.sh", "one", "two"), ("terraform.tfvars", "hello", "hi")):
        source = work / "infra" / "live" / name
        source.write_text(source.read_text().replace(old, new))
        _git(work, env, "add", str(source))
        failed = commit(f"edit {name} only")
        assert failed.returncode == 1, failed.stdout + failed.stderr
        assert "flatten output is up to date" in failed.stdout + failed.stderr
        assert f"infra/flat/{name} is not what the build writes now" in failed.stdout + failed.stderr
        assert _git(work, env, "status", "--porcelain", "infra/flat") == ""  # checked, not written
        # The output rebuilt and added, the same commit passes.
        rebuilt = subprocess.run(
            [sys.executable, "-m", "flatten", "build", "infra/live", "--out", "infra/flat"],
            cwd=work,
            env={**os.environ, "FLATTEN_CACHE_DIR": env["FLATTEN_CACHE_DIR"]},
            capture_output=True,
            text=True,
        )
        assert rebuilt.returncode == 0, rebuilt.stderr
        _git(work, env, "add", "infra/flat")
        passed = commit(f"edit {name} with its output")
        assert passed.returncode == 0, passed.stdout + passed.stderr

    use("flatten-build")
    for name, old, new in (("setup.sh", "two", "three"), ("terraform.tfvars", "hi", "hey")):
        source = work / "infra" / "live" / name
        source.write_text(source.read_text().replace(old, new))
        _git(work, env, "add", str(source))
        failed = commit(f"edit {name} only")
        assert failed.returncode == 1, failed.stdout + failed.stderr
        assert "files were modified by this hook" in failed.stdout + failed.stderr
        # The hook rewrote the output: adding it makes the commit pass.
        assert (work / "infra" / "flat" / name).read_text() == source.read_text()
        _git(work, env, "add", "infra/flat")
        passed = commit(f"edit {name} with its output")
        assert passed.returncode == 0, passed.stdout + passed.stderr


# -- flatten-hook: run only for a commit that touches what a build reads (issue 39 item 5) --------

HOOK_ROOT = {
    "infra/live/main.tf": 'module "net" {\n  source = "../modules/net"\n}\n',
    "infra/modules/net/main.tf": 'resource "terraform_data" "a" {\n  input = "x"\n}\n',
    "infra/modules/net/setup.sh": "echo one\n",
    "README.md": "# the repository\n",
    "docs/guide.md": "how\n",
}


def _hook(repo: Path, mode: str, *files: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**_git_env(repo.parent), "FLATTEN_CACHE_DIR": str(cache)}
    return subprocess.run(
        [sys.executable, "-m", "flatten.shell.hook", mode, "infra/live", "--out", "infra/flat", *files],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
    )


@pytest.fixture
def hook_repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    for name, text in HOOK_ROOT.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    env = _git_env(tmp_path)
    built = subprocess.run(
        [sys.executable, "-m", "flatten", "build", "infra/live", "--out", "infra/flat"],
        cwd=repo,
        env={**env, "FLATTEN_CACHE_DIR": str(tmp_path / "build-cache")},
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr
    _git(repo, env, "init", "-q", "-b", "main")
    _commit_all(repo, env, "sources and output")
    return repo


@pytest.mark.parametrize("mode", ["check", "build"])
def test_hook_skips_a_commit_that_touches_nothing_a_build_reads(hook_repo: Path, mode: str) -> None:
    cache = hook_repo.parent / f"cache-{mode}"
    (hook_repo / "README.md").write_text("# edited\n")
    proc = _hook(hook_repo, mode, "README.md", "docs/guide.md", cache=cache)
    assert proc.returncode == 0, proc.stderr
    assert (proc.stdout, proc.stderr) == ("", "")
    assert not cache.exists()  # no build ran: it would have made its cache


@pytest.mark.parametrize(
    ("staged", "old", "new"),
    [
        ("infra/modules/net/setup.sh", "one", "two"),  # a copied file of a module outside the root
        ("infra/live/main.tf", "net", "network"),
        ("infra/flat/live/main.tf.json", "net", "network"),  # the output itself
        (".pre-commit-config.yaml", "", ""),  # the hook's arguments
    ],
)
def test_hook_runs_for_a_commit_that_touches_an_input_or_the_output(
    hook_repo: Path, staged: str, old: str, new: str
) -> None:
    cache = hook_repo.parent / "cache"
    path = hook_repo / staged
    if old:
        path.write_text(path.read_text().replace(old, new))
    proc = _hook(hook_repo, "check", staged, cache=cache)
    assert cache.exists()  # it built
    assert proc.returncode == (1 if old else 0), proc.stderr


def test_hook_runs_for_a_commit_that_deletes_an_input(hook_repo: Path) -> None:
    env = _git_env(hook_repo.parent)
    _git(hook_repo, env, "rm", "-q", "infra/modules/net/setup.sh")
    proc = _hook(hook_repo, "check", cache=hook_repo.parent / "cache")  # pre-commit passes no name
    assert proc.returncode == 1, proc.stderr
    assert "infra/flat/modules/net/setup.sh" in " ".join(proc.stderr.split())


def test_hook_without_a_manifest_always_runs(hook_repo: Path) -> None:
    (hook_repo / "infra" / "flat" / "flatten.manifest.json").unlink()
    proc = _hook(hook_repo, "check", "README.md", cache=hook_repo.parent / "cache")
    assert proc.returncode == 1  # it checked: the manifest is missing


def test_flatten_build_hook_fails_when_the_rebuild_adds_a_file(hook_repo: Path) -> None:
    env = _git_env(hook_repo.parent)
    (hook_repo / "infra" / "modules" / "net" / "extra.sh").write_text("echo extra\n")
    _git(hook_repo, env, "add", "infra/modules/net/extra.sh")
    proc = _hook(hook_repo, "build", "infra/modules/net/extra.sh", cache=hook_repo.parent / "cache")
    assert proc.returncode == 1, proc.stderr
    assert "flatten-build: the rebuild added 1 file(s) git does not track yet:" in proc.stderr
    assert "infra/flat/modules/net/extra.sh" in proc.stderr
    # Added and committed, the same hook passes.
    _git(hook_repo, env, "add", "infra/flat")
    again = _hook(hook_repo, "build", "infra/modules/net/extra.sh", cache=hook_repo.parent / "cache")
    assert again.returncode == 0, again.stderr


def test_value_options_are_builds() -> None:
    """The hook tells option values from staged files by build's own options."""
    import typer.main

    from flatten.cli import app
    from flatten.shell.hook import VALUE_OPTIONS

    build = typer.main.get_command(app).commands["build"]  # type: ignore[attr-defined]
    taking = {
        name
        for param in build.params
        if param.param_type_name == "option" and not getattr(param, "is_flag", False)
        for name in param.opts
    }
    assert taking == VALUE_OPTIONS
