"""Packaging: the wheel and sdist build, carry what a distribution must, install and run.

Slow (a build and a fresh virtual environment, about a minute) but part of the suite: a broken
package is found here, not by the first user of a release. `python -m build` builds the sdist
first and the wheel from that sdist, so the wheel installed below also proves the sdist builds.
"""

from __future__ import annotations

import email
import os
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest
from support.project_copy import REPO, copy_project

pytestmark = pytest.mark.slow

SAMPLE = REPO / "samples" / "web-service"


def _clean_env(tmp_path: Path) -> dict[str, str]:
    """The environment without this checkout on PYTHONPATH (it would shadow the installed copy)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["FLATTEN_CACHE_DIR"] = str(tmp_path / "cache")
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("dist")
    source = copy_project(tmp / "source")
    out = tmp / "dist"
    proc = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(source)],
        capture_output=True,
        text=True,
        env=_clean_env(tmp),
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out


def _one(dist: Path, pattern: str) -> Path:
    found = sorted(dist.glob(pattern))
    assert len(found) == 1, found
    return found[0]


def test_sdist_carries_licence_readme_and_changelog(dist: Path) -> None:
    sdist = _one(dist, "flatten-*.tar.gz")
    top = sdist.name.removesuffix(".tar.gz")
    with tarfile.open(sdist) as tar:
        members = {m.name.removeprefix(f"{top}/") for m in tar.getmembers() if m.isfile()}
        licence = tar.extractfile(f"{top}/LICENSE").read()  # type: ignore[union-attr]
    for name in ("LICENSE", "README.md", "CHANGELOG.md", "pyproject.toml", "flatten/__main__.py"):
        assert name in members, sorted(members)
    assert licence == (REPO / "LICENSE").read_bytes()
    assert licence.startswith(b"Mozilla Public License Version 2.0\n")
    assert not any(m.startswith("tests/") for m in members)


def test_wheel_metadata_names_licence_classifiers_and_the_licence_file(dist: Path) -> None:
    wheel = _one(dist, "flatten-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        info = next(n.rsplit("/", 1)[0] for n in names if n.endswith(".dist-info/METADATA"))
        meta = email.message_from_bytes(zf.read(f"{info}/METADATA"))
        licence = zf.read(f"{info}/licenses/LICENSE")
    assert meta["License-Expression"] == "MPL-2.0"
    classifiers = meta.get_all("Classifier") or []
    assert "Programming Language :: Python :: 3.11" in classifiers
    assert "Environment :: Console" in classifiers
    assert licence == (REPO / "LICENSE").read_bytes()
    assert "flatten/py.typed" in names


def test_wheel_installs_into_a_fresh_venv_and_runs(dist: Path, tmp_path: Path) -> None:
    wheel = _one(dist, "flatten-*.whl")
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    bin_dir = env_dir / "bin"
    env = _clean_env(tmp_path)
    # The wheel itself without dependencies, then what its metadata asks for (PyPI or pip's cache).
    for args in (["--no-deps", str(wheel)], [str(wheel)]):
        proc = subprocess.run(
            [str(bin_dir / "python"), "-m", "pip", "install", "--quiet", *args],
            capture_output=True,
            text=True,
            env=env,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]

    where = subprocess.run(
        [str(bin_dir / "python"), "-c", "import flatten; print(flatten.__file__)"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert Path(where.stdout.strip()).is_relative_to(env_dir), where.stdout  # the installed copy

    version = subprocess.run([str(bin_dir / "flatten"), "--version"], capture_output=True, text=True, env=env)
    assert version.returncode == 0, version.stderr
    assert version.stdout.startswith("flatten ")
    assert "(python-hcl2 8.1.4, Python " in version.stdout

    # The installed console script builds the sample to the same bytes as this checkout does.
    out = tmp_path / "installed-out"
    proc = subprocess.run(
        [str(bin_dir / "flatten"), "build", str(SAMPLE), "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    expected = tmp_path / "checkout-out"
    proc = subprocess.run(
        [sys.executable, "-m", "flatten", "build", str(SAMPLE), "--out", str(expected)],
        capture_output=True,
        text=True,
        env={**os.environ, "FLATTEN_CACHE_DIR": str(tmp_path / "cache2")},
    )
    assert proc.returncode == 0, proc.stderr
    got = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    want = {p.relative_to(expected).as_posix(): p.read_bytes() for p in expected.rglob("*") if p.is_file()}
    assert got == want

    # Shell completion through the installed console script (what --install-completion wires up).
    proc = subprocess.run(
        [str(bin_dir / "flatten")],
        capture_output=True,
        text=True,
        env={
            **env,
            "_FLATTEN_COMPLETE": "complete_bash",
            "COMP_WORDS": "flatten build --of",
            "COMP_CWORD": "2",
        },
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["--offline"]
