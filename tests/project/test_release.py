"""Release hygiene: one version, a release script tried on a scratch clone, what the README and
CHANGELOG promise about building and packaging (issue 28, item 10)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from support.paths import REPO
from support.project_copy import copy_project

import flatten

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    ).stdout


def _release(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(
        [sys.executable, "scripts/release", *args], cwd=repo, env=env, capture_output=True, text=True
    )


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """A scratch git repository holding this checkout's files, committed."""
    repo = copy_project(tmp_path / "repo")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "scratch")
    # Something to release, whatever the checkout's [Unreleased] holds now.
    changelog = repo / "CHANGELOG.md"
    changelog.write_text(
        changelog.read_text().replace("## [Unreleased]\n", "## [Unreleased]\n\n- A fix.\n", 1)
    )
    _git(repo, "commit", "-q", "-am", "a change")
    return repo


def _next(version: str) -> str:
    """The next release after ``version``: the release a development version leads to."""
    if ".dev" in version:
        return version.split(".dev")[0]
    major, minor, patch = map(int, version.split("."))
    return f"{major}.{minor}.{patch + 1}"


def _newest_release() -> str:
    changelog = (REPO / "CHANGELOG.md").read_text()
    return re.findall(r"^## \[(\d+\.\d+\.\d+)\]", changelog, re.M)[0]


def _version_at(repo: Path, rev: str) -> str:
    text = _git(repo, "show", f"{rev}:flatten/lang/release.py")
    found = re.search(r'^__version__ = "([^"]+)"$', text, re.M)
    assert found is not None
    return found.group(1)


def test_release_cuts_the_changelog_bumps_the_version_and_tags(clone: Path) -> None:
    new = _next(flatten.__version__)
    proc = _release(clone, new, "--date", "2026-12-01")
    assert proc.returncode == 0, proc.stderr
    assert _git(clone, "tag", "--list").split() == [f"v{new}"]
    assert _git(clone, "status", "--porcelain").strip() == ""
    # The tag is the release commit; the branch goes on as the next development version (issue 39).
    major, minor, patch = map(int, new.split("."))
    following = f"{major}.{minor}.{patch + 1}.dev0"
    assert _git(clone, "log", "-2", "--format=%s").split("\n")[:2] == [f"Start {following}", f"Release {new}"]
    assert _git(clone, "rev-parse", f"v{new}^{{commit}}") == _git(clone, "rev-parse", "HEAD~1")
    assert _version_at(clone, f"v{new}") == new
    assert _version_at(clone, "HEAD") == following
    assert "released" in proc.stdout and f"the branch is now {following}" in proc.stdout
    _git(clone, "checkout", "-q", f"v{new}")
    changelog = (clone / "CHANGELOG.md").read_text()
    assert f"## [Unreleased]\n\n## [{new}] - 2026-12-01\n\n- A fix.\n" in changelog
    # The package's version comes from the one place the script changed.
    version = subprocess.run(
        [sys.executable, "-c", "import flatten; print(flatten.__version__)"],
        cwd=clone,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(clone)},
    ).stdout.strip()
    assert version == new
    # The pre-commit examples pin the tag that now exists.
    for name in ("README.md", "docs/ci.md", ".pre-commit-hooks.yaml"):
        text = (clone / name).read_text()
        assert f"rev: v{new}" in text, name
        assert "rev: <tag>" not in text, name
    assert f"flatten {new} (python-hcl2" in (clone / "docs/reference/flatten.md").read_text()


def test_release_refuses_and_changes_nothing(clone: Path) -> None:
    head = _git(clone, "rev-parse", "HEAD")
    same = _release(clone, _newest_release())  # 0.2.0 is not above 0.2.1.dev0
    assert same.returncode == 2 and "is not above the current version" in same.stderr
    bad = _release(clone, "1.0")
    assert bad.returncode == 2 and "is not a version" in bad.stderr
    (clone / "README.md").write_text("edited\n")
    dirty = _release(clone, _next(flatten.__version__))
    assert dirty.returncode == 2 and "uncommitted changes" in dirty.stderr
    _git(clone, "checkout", "--", "README.md")
    changelog = clone / "CHANGELOG.md"
    # Empty the whole [Unreleased] section: the checkout's own may hold entries too.
    text = changelog.read_text()
    start = text.index("## [Unreleased]\n") + len("## [Unreleased]\n")
    changelog.write_text(text[:start] + "\n" + text[text.index("## [", start) :])
    _git(clone, "commit", "-q", "-am", "nothing to release")
    head = _git(clone, "rev-parse", "HEAD")
    empty = _release(clone, _next(flatten.__version__))
    assert empty.returncode == 2 and "[Unreleased] section is empty" in empty.stderr
    assert _git(clone, "rev-parse", "HEAD") == head and not _git(clone, "tag", "--list").strip()


def test_the_version_lives_in_one_place() -> None:
    """pyproject reads it from flatten/lang/release.py; every example that names it agrees."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "flatten.lang.release.__version__"}
    release = _newest_release()
    reference = (REPO / "docs/reference/flatten.md").read_text()
    assert re.findall(r"flatten (\d+\.\d+\.\d+) \(python-hcl2", reference) == [release]
    # A release commit holds the release; any other the next development version after it, so a
    # build from the branch never claims to be the release (issue 39 item 8).
    major, minor, patch = map(int, release.split("."))
    assert flatten.__version__ in (release, f"{major}.{minor}.{patch + 1}.dev0")
    for name in ("README.md", "docs/ci.md", ".pre-commit-hooks.yaml"):
        pins = re.findall(r"\brev: (\S+)", (REPO / name).read_text())
        assert pins and set(pins) == {f"v{release}"}, name


def test_the_branch_after_a_release_is_a_development_version() -> None:
    """Issue 39 item 8: HEAD after the 0.2.0 release called itself 0.2.0."""
    head = subprocess.run(["git", "log", "-1", "--format=%s"], cwd=REPO, capture_output=True, text=True)
    if head.returncode != 0:
        pytest.skip("not a git checkout (git missing or an unpacked archive)")
    if head.stdout.startswith("Release "):
        pytest.skip("this commit is a release: it holds the release's version")
    assert ".dev" in flatten.__version__
    assert flatten.__version__.split(".dev")[0] == _next(_newest_release())


def test_readme_build_command_names_an_interpreter_that_has_build() -> None:
    """`python -m build` fails with a system Python: the README runs the virtual environment's,
    and the extra scripts/test installs carries the `build` package."""
    readme = (REPO / "README.md").read_text()
    assert ".venv/bin/python -m build" in readme
    assert re.search(r"(?<![/\w])python -m build", readme) is None
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(req.startswith("build") for req in extras["test"])
    assert "the test extra, which `scripts/test`\ninstalls" in readme


def test_changelog_promises_only_what_the_wheel_carries() -> None:
    """The wheel carries the licence and README (its metadata); the changelog is in the sdist."""
    changelog = (REPO / "CHANGELOG.md").read_text()
    assert "the wheel and sdist carry the MPL-2.0 licence text, this changelog" not in changelog
    assert "include CHANGELOG.md" in (REPO / "MANIFEST.in").read_text()
