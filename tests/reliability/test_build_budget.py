"""One size budget per build, a tar's members counted before extraction, large files never read
whole (issue 30, items 2 and 6)."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from support.files import write_tree
from support.servers import HTTPServer, Reply, git_daemon, make_repo, make_tar, needs_git, serving
from support.sources import call, run, source_env, summaries

from flatten.sources.archive import extract_archive
from flatten.sources.env import ExtractLimits
from flatten.sources.package import FetchError

_MODULE = 'output "v" {\n  value = 1\n}\n'


def test_the_size_budget_is_the_builds_not_each_packages(tmp_path: Path) -> None:
    """Four packages of 60 KB each, under a 100 KB limit: each alone fits, together they do not."""
    limits = ExtractLimits(max_bytes=100_000)
    with serving(HTTPServer()) as srv:
        main = ""
        for i in range(4):
            srv.routes[f"/p{i}.tgz"] = Reply(
                200, make_tar({"main.tf": _MODULE, "blob.bin": bytes(60_000 + i)})
            )
            main += call(f"m{i}", f"{srv.url}/p{i}.tgz")
        root = write_tree(tmp_path / "root", {"main.tf": main})
        _, tree, diags = run(root, source_env(tmp_path, limits=limits, jobs=1))
    assert tree is None
    assert "Failed to download module" in summaries(diags)
    assert any("packages of this build expand to more than 100000 bytes" in d.detail for d in diags)
    # Nothing past the budget stayed on disk: what the cache holds is within it.
    held = sum(
        p.stat().st_size for p in (tmp_path / "cache").rglob("*") if p.is_file() and p.name == "blob.bin"
    )
    assert held <= 100_000


@needs_git
def test_a_git_package_counts_against_the_size_budget(tmp_path: Path) -> None:
    bare, _ = make_repo(tmp_path / "repos", "big", [({"main.tf": _MODULE, "zeros.txt": "0" * 300_000}, "v1")])
    with git_daemon(bare.parent) as base:
        root = write_tree(tmp_path / "root", {"main.tf": call("g", f"git::{base}/big.git?ref=v1")})
        _, tree, diags = run(root, source_env(tmp_path, limits=ExtractLimits(max_bytes=100_000)))
        assert tree is None and summaries(diags) == ["Failed to download module"]
        assert "more than" in diags[0].detail and "100000 bytes" in diags[0].detail
        assert not list((tmp_path / "cache" / "v1" / "packages").glob("*"))
        # The control: with room, the same repository builds.
        _, tree, diags = run(root, source_env(tmp_path, limits=ExtractLimits(max_bytes=10_000_000)))
    assert summaries(diags) == [] and tree is not None


def test_a_tar_with_too_many_members_is_refused_before_any_is_written(tmp_path: Path) -> None:
    archive = tmp_path / "many.tar"
    with tarfile.open(archive, "w") as tar:
        for i in range(60):
            info = tarfile.TarInfo(f"f{i}.tf")
            tar.addfile(info)
    dest = tmp_path / "dest"
    with pytest.raises(FetchError, match="more than 50 members"):
        extract_archive(archive, "tar", dest, limits=ExtractLimits(max_files=50))
    assert list(dest.iterdir()) == []  # was 50 files: refused only at the 51st


_MEASURE = """
import os, subprocess, sys
child = subprocess.Popen(sys.argv[1:], stdout=sys.stderr)
_, status, usage = os.wait4(child.pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)
"""


def test_a_large_file_beside_a_module_is_never_read_whole(tmp_path: Path) -> None:
    """A 256 MiB file copied into the output: peak memory stays far below its size (was 1.6 GB
    for 1.5 GiB: every copy was read to count the files written and to hash it)."""
    root = write_tree(tmp_path / "root", {"main.tf": 'resource "terraform_data" "x" {}\n'})
    with open(root / "big.bin", "wb") as f:
        f.truncate(256 << 20)  # sparse: cheap to make, read as 256 MiB of zeros
    env = {**os.environ, "FLATTEN_CACHE_DIR": str(tmp_path / "cache")}
    out = str(tmp_path / "out")
    for args in (["build", str(root), "--out", out], ["build", str(root), "--out", out, "--check"]):
        # Measured by a small Python in between: Linux counts in a child's peak RSS the pages of
        # the process it was forked (or vforked) from, up to its exec, and a long pytest session
        # is itself over the bound; the one in between is small when it starts flatten.
        with open(tmp_path / "stderr", "wb") as err:
            measured = subprocess.run(
                [sys.executable, "-c", _MEASURE, sys.executable, "-m", "flatten", *args],
                env=env,
                stdout=subprocess.PIPE,
                stderr=err,
                check=True,
            )
        code, maxrss = map(int, measured.stdout.split())
        assert code == 0, (tmp_path / "stderr").read_text()
        assert maxrss < 160 * 1024, (args, maxrss)  # KiB: under 160 MiB
    assert (tmp_path / "out" / "big.bin").stat().st_size == 256 << 20
