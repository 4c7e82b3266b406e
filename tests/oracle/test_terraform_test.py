"""``terraform test`` on the output runs the same runs with the same results as on the original.

Generated workspaces (tests/support/testtrees.py) hold test files with runs that pass and runs
that fail; Terraform runs them on the root and on the flattened output, and every run must have
the same result on both sides. scripts/test-parity runs more seeds.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support.oracle import terraform
from support.testtrees import generate_root, terraform_test, write_workspace

SEEDS = range(24)


@pytest.mark.slow
def test_runs_agree_on_generated_roots(tmp_path: Path) -> None:
    tf = terraform()
    failed = passed = 0
    disagreements: list[str] = []
    for seed in SEEDS:
        tree = generate_root(seed)
        source = write_workspace(tree, tmp_path / str(seed) / "src")
        out = tmp_path / str(seed) / "out"
        built = subprocess.run(
            [sys.executable, "-m", "flatten", "build", str(source), "--out", str(out)],
            capture_output=True,
            text=True,
        )
        assert built.returncode == 0, built.stderr
        original, original_text = terraform_test(tf, source)
        flat, flat_text = terraform_test(tf, out / tree.root if tree.root else out)
        assert len(original) == tree.runs, original_text  # the oracle ran every run of the original
        if original != flat:
            disagreements.append(f"seed {seed}:\n{original_text}\n--- output ---\n{flat_text}")
        failed += sum(status != "pass" for _, _, status in original)
        passed += sum(status == "pass" for _, _, status in original)
    assert not disagreements, "\n\n".join(disagreements)
    assert failed and passed  # both kinds of run were compared
