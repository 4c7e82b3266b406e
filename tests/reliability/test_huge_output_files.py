"""A file in OUT larger than anything flatten writes is judged by its size, never read (issue 38,
found by the canary fuzz kind): ``build --check`` and ``affected --base-out`` hashed a 3 GiB
sparse file in OUT's place of ``m/main.tf.json`` (or of ``m``) for 48 to 55 s on the shared
machine. flatten copies no file over the copy budget (``gate.COPY_LIMIT``) into OUT, so one over
it in OUT is not flatten's output: out of date, or changed, without a byte read.

The file here is a 256 GiB sparse file (no disk used), and each command runs with a CPU-time
limit of 60 s: reading and hashing it takes minutes of CPU, judging it by its size none. The
limit is CPU time, not wall time, so a loaded machine does not make it fail.
"""

from __future__ import annotations

import json
import resource
import subprocess
from pathlib import Path

import pytest
from support.cli import run_flatten, sparse_file
from support.files import write_tree

HUGE = 256 << 30
CPU_SECONDS = 60


def _limit_cpu() -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS))


def _run(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    # The CPU limit ends a read of the whole file long before the timeout.
    return run_flatten(*args, cache=cwd / "cache", cwd=cwd, timeout=3600, preexec_fn=_limit_cpu)


def _built(tmp_path: Path) -> tuple[Path, Path]:
    root = write_tree(
        tmp_path / "root",
        {
            "main.tf": 'module "m" {\n  source = "./m"\n}\n',
            "m/main.tf": 'resource "terraform_data" "m" {}\n',
            "m/script.sh": "echo hi\n",
        },
    )
    out = tmp_path / "out"
    proc = _run("build", root, "--out", out, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return root, out


def _huge(path: Path) -> None:
    path.unlink()  # the file must be there: the test replaces what the build wrote
    sparse_file(path, HUGE)


@pytest.mark.parametrize("name", ["m/main.tf.json", "m/script.sh"])
def test_check_judges_a_huge_file_in_out_by_its_size(tmp_path: Path, name: str) -> None:
    root, out = _built(tmp_path)
    _huge(out / name)
    proc = _run("build", root, "--out", out, "--check", cwd=tmp_path)
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])
    assert "Output is out of date" in proc.stderr
    assert name in proc.stderr
    assert "Traceback" not in proc.stderr and "[Errno" not in proc.stderr


def test_affected_judges_a_huge_file_in_the_base_output_by_its_size(tmp_path: Path) -> None:
    _, out = _built(tmp_path)
    _huge(out / "m" / "script.sh")
    proc = _run("affected", "root", "--base-out", out, "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    (report,) = json.loads(proc.stdout)["roots"]
    assert report["status"] == "affected"
    assert {"path": "m/script.sh", "change": "changed"} in report["files"]
