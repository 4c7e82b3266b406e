"""Interrupted and concurrent builds: the output is never half-written, nothing is left behind."""

from __future__ import annotations

import hashlib
import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

RESOURCE = 'resource "terraform_data" "r{i}" {{\n  input = "${{local.p}}-{i}-{tag}"\n}}\n'


def make_tree(root: Path, tag: str, files: int = 60, per_file: int = 40) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "main.tf").write_text('locals {\n  p = "x"\n}\n')
    for f in range(files):
        text = "".join(RESOURCE.format(i=f * per_file + i, tag=tag) for i in range(per_file))
        (root / f"r{f:03d}.tf").write_text(text)


def consistent(out: Path) -> str:
    """Return the output's tag, checking the manifest's digest matches what is on disk."""
    manifest = json.loads((out / "flatten.manifest.json").read_text())
    data = (out / "main.tf.json").read_bytes()
    assert manifest["modules"][0]["digest"] == "sha256:" + hashlib.sha256(data).hexdigest()
    value = json.loads(data)["resource"]["terraform_data"]["r0"]["input"]
    return str(value).rsplit("-", 1)[1]


def start(root: Path, out: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "flatten", "build", str(root), "--out", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_interrupted_builds_leave_previous_output_intact(tmp_path: Path, sig: signal.Signals) -> None:
    root, out = tmp_path / "src", tmp_path / "out"
    make_tree(root, "old")
    t0 = time.perf_counter()
    assert start(root, out).wait() == 0
    duration = time.perf_counter() - t0
    rnd = random.Random(sig)
    for attempt in range(8):
        make_tree(root, f"new{attempt}")
        proc = start(root, out)
        time.sleep(rnd.uniform(0, duration * 1.1))
        proc.send_signal(sig)
        _, stderr = proc.communicate()
        assert b"Traceback" not in stderr, stderr.decode()
        tag = consistent(out)
        assert tag in {"old", *(f"new{i}" for i in range(attempt + 1))}
        assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "src"], "temporary directory left behind"


def test_concurrent_builds_into_one_output(tmp_path: Path) -> None:
    roots = [tmp_path / "a", tmp_path / "b"]
    make_tree(roots[0], "a", files=20)
    make_tree(roots[1], "b", files=20)
    out = tmp_path / "out"
    procs = [start(root, out) for root in roots * 2]
    assert [p.wait() for p in procs] == [0, 0, 0, 0]
    assert consistent(out) in {"a", "b"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b", "out"]
