"""The documentation site: it builds strictly, and its command reference is the CLI's own."""

from __future__ import annotations

import html
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer
import typer.main
from support.paths import REPO

from flatten.cli import app

sys.path.insert(0, str(REPO / "scripts"))

from docs_hooks import command_reference

COMMAND = typer.main.get_command(app)
SUBCOMMANDS = sorted(COMMAND.commands)  # type: ignore[attr-defined]


def _option_names(path: list[str]) -> list[str]:
    command = COMMAND
    for name in path:
        command = command.commands[name]  # type: ignore[attr-defined]
    return [
        name
        for param in command.get_params(typer.Context(command))
        if param.param_type_name == "option" and not param.hidden
        for name in (*param.opts, *param.secondary_opts)
    ]


@pytest.mark.parametrize(
    "path", [[], *([name] for name in SUBCOMMANDS)], ids=lambda p: " ".join(p) or "flatten"
)
def test_reference_names_every_option_with_its_help(path: list[str]) -> None:
    text = command_reference(" ".join(path))
    for name in _option_names(path):
        assert re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text), name
    assert f"$ flatten {' '.join(path)}".rstrip() in text  # the usage line
    if not path:
        assert "`flatten build`" not in text  # subcommands have their own pages


def test_reference_of_an_unknown_command_fails_the_build() -> None:
    with pytest.raises(KeyError):
        command_reference("bulid")


def test_every_command_and_every_page_is_in_the_nav() -> None:
    nav = (REPO / "mkdocs.yml").read_text()
    for name in SUBCOMMANDS:
        page = REPO / "docs" / "reference" / f"{name}.md"
        assert f"<!-- flatten-reference: {name} -->" in page.read_text()
        assert f"reference/{name}.md" in nav
    for page in (REPO / "docs").rglob("*.md"):
        assert f": {page.relative_to(REPO / 'docs').as_posix()}\n" in nav, page


@pytest.mark.slow
def test_site_builds_strictly_with_the_generated_reference(tmp_path: Path) -> None:
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed (it is in the docs extra: pip install -e .[dev])")
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    for name in SUBCOMMANDS:
        page = html.unescape((site / "reference" / name / "index.html").read_text())
        for option in _option_names([name]):
            assert option in page, (name, option)
    api = (site / "api" / "index.html").read_text()
    assert "Return the canonical output tree" in api  # flatten.build's docstring, via mkdocstrings
    assert "Keep a Changelog" in (site / "changelog" / "index.html").read_text()


# The pages that walk the loop a user runs (build, init, plan, rebuild, --check, pre-commit):
# every command they show, in a shell block or as a CI step, is run here, in order, on a small
# repository (a root with a local module and a terraform.tfvars). Only the commands that install
# flatten itself are not run (the test runs the checkout's).
LOOP_PAGES = ("index.md", "ci.md", "vendor.md")
_INSTALLS = ("pip install", "pipx install", "python -m build")
_STEP = re.compile(r"^\s*(?:-\s+)?(?:run:\s+)?((?:flatten|pip|pipx)\s.*)$")


def _shown_commands(page: Path) -> list[str]:
    commands = []
    for lang, body in re.findall(r"^```(\w+)\n(.*?)^```", page.read_text(), re.S | re.M):
        for line in body.splitlines():
            if lang == "sh":
                command = re.split(r"\s{2,}#", line)[0].strip()
                if command and not command.startswith("#"):
                    commands.append(command)
            elif lang == "yaml" and (step := _STEP.match(line)):
                commands.append(step.group(1).strip())
    return commands


@pytest.mark.slow
@pytest.mark.parametrize("name", LOOP_PAGES)
def test_every_command_of_the_loop_pages_runs(name: str, tmp_path: Path) -> None:
    import shutil

    if shutil.which("terraform") is None:
        pytest.skip("no terraform binary on PATH (the pages run `terraform -chdir=... init`)")
    if shutil.which("git") is None:
        pytest.skip("git is not installed (the pre-commit walk adds the output with git)")
    commands = _shown_commands(REPO / "docs" / name)
    run = [c for c in commands if not c.startswith(_INSTALLS)]
    assert run, f"docs/{name} shows no command"
    assert all(c.split()[0] in ("flatten", "terraform", "git") for c in run), run
    live = tmp_path / "infra" / "live"
    (live / "modules" / "app").mkdir(parents=True)
    (live / "main.tf").write_text(
        'variable "env" {\n  type = string\n}\n'
        'module "app" {\n  source = "./modules/app"\n  env    = var.env\n}\n'
    )
    (live / "terraform.tfvars").write_text('env = "dev"\n')
    (live / "modules" / "app" / "main.tf").write_text(
        'variable "env" {\n  type = string\n}\nresource "terraform_data" "a" {\n  input = var.env\n}\n'
    )
    rc = tmp_path / "empty.tfrc"
    rc.write_text("")
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "CHECKPOINT_DISABLE": "1",
        "TF_CLI_CONFIG_FILE": str(rc),
        "TF_IN_AUTOMATION": "1",
        "GIT_AUTHOR_NAME": "docs",
        "GIT_AUTHOR_EMAIL": "docs@flatten.invalid",
        "GIT_COMMITTER_NAME": "docs",
        "GIT_COMMITTER_EMAIL": "docs@flatten.invalid",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    env.pop("TF_DATA_DIR", None)
    env.pop("GITHUB_ACTIONS", None)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=tmp_path, env=env, check=True)
    # ci.md's merge-request pipeline compares with the request's base commit (GitLab's variable).
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "base"], cwd=tmp_path, env=env, check=True)
    env["CI_MERGE_REQUEST_DIFF_BASE_SHA"] = "HEAD"
    for command in run:
        proc = subprocess.run(
            ["bash", "-c", command],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
        )
        assert proc.returncode == 0, f"docs/{name}: {command}\n{proc.stdout}\n{proc.stderr}"


def test_reference_pages_render_angle_brackets_as_text() -> None:
    """`OUT/<ROOT>` in help text is prose: rendered, it must read `OUT/<ROOT>`, not lose `<ROOT>`
    as an unknown HTML tag (issue 28)."""
    markdown = pytest.importorskip("markdown", reason="the docs extra (mkdocs) installs markdown")
    page = markdown.markdown(command_reference("build"), extensions=["fenced_code"])
    assert "OUT/&lt;ROOT&gt;" in page
    assert "<ROOT>" not in page
    assert "<code>-o, --out &lt;path&gt;</code>" in page  # code spans escaped once, by Markdown
