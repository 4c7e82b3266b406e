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


def test_reference_pages_render_angle_brackets_as_text() -> None:
    """`OUT/<ROOT>` in help text is prose: rendered, it must read `OUT/<ROOT>`, not lose `<ROOT>`
    as an unknown HTML tag (issue 28)."""
    markdown = pytest.importorskip("markdown", reason="the docs extra (mkdocs) installs markdown")
    page = markdown.markdown(command_reference("build"), extensions=["fenced_code"])
    assert "OUT/&lt;ROOT&gt;" in page
    assert "<ROOT>" not in page
    assert "<code>-o, --out &lt;path&gt;</code>" in page  # code spans escaped once, by Markdown
