"""The command line: exit codes, refusing unsafe --out, --check, diagnostics rendering."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

from flatten import __version__

MAIN = 'resource "terraform_data" "a" {\n  input = "x"\n}\n'


def flatten(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flatten", *map(str, args)], capture_output=True, text=True, cwd=cwd
    )


def test_version() -> None:
    proc = flatten("--version")
    assert proc.returncode == 0
    # What a bug report needs: flatten's, the pinned parser's and the interpreter's versions.
    python = ".".join(map(str, sys.version_info[:3]))
    hcl2 = importlib.metadata.version("python-hcl2")
    assert proc.stdout.strip() == f"flatten {__version__} (python-hcl2 {hcl2}, Python {python})"


def test_version_does_not_import_the_parser() -> None:
    """--version reads python-hcl2's version from its version file: the parser import stays out."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "flatten", "--version"], capture_output=True, text=True
    )
    assert proc.returncode == 0
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if "|" in line}
    assert "flatten.cli" in imported  # the measurement sees lazily imported modules
    assert not {name for name in imported if name == "hcl2" or name.startswith(("hcl2.", "lark"))}


def test_build_writes_output_and_reports_on_stderr(tree, tmp_path: Path) -> None:
    root = tree({"main.tf": MAIN})
    out = tmp_path / "out"
    proc = flatten("build", root, "--out", out)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    doc = json.loads((out / "main.tf.json").read_text())
    assert doc == {"resource": {"terraform_data": {"a": {"input": "x"}}}}
    assert (out / "flatten.manifest.json").is_file()


def test_errors_exit_1_and_leave_previous_output(tree, tmp_path: Path) -> None:
    root = tree({"main.tf": MAIN})
    out = tmp_path / "out"
    assert flatten("build", root, "--out", out).returncode == 0
    before = (out / "main.tf.json").read_bytes()
    (root / "main.tf").write_text('resource "terraform_data" "a" {\n  input = \n}\n')
    proc = flatten("build", root, "--out", out)
    assert proc.returncode == 1
    assert "Error: " in proc.stderr
    assert "main.tf line" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert (out / "main.tf.json").read_bytes() == before


def test_diagnostics_json_mirrors_terraform_validate(tree, tmp_path: Path) -> None:
    root = tree({"main.tf": MAIN + MAIN})
    proc = flatten("build", root, "--out", tmp_path / "out", "--diagnostics-json")
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)
    assert doc["valid"] is False
    assert doc["error_count"] == 1
    (diag,) = doc["diagnostics"]
    assert diag["severity"] == "error"
    assert diag["summary"] == 'Duplicate resource "terraform_data" configuration'
    assert diag["range"]["filename"] == "main.tf"
    assert diag["range"]["start"]["line"] == 4


def test_out_inside_root_is_refused(tree) -> None:
    root = tree({"main.tf": MAIN})
    for out in (root, root / "sub"):
        proc = flatten("build", root, "--out", out)
        assert proc.returncode == 2
        assert "inside the root module" in proc.stderr
    assert sorted(p.name for p in root.iterdir()) == ["main.tf"]


def test_non_empty_foreign_out_is_refused(tree, tmp_path: Path) -> None:
    root = tree({"main.tf": MAIN})
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    proc = flatten("build", root, "--out", out)
    assert proc.returncode == 2
    assert (out / "notes.txt").read_text() == "mine"


def test_usage_errors_exit_2(tree) -> None:
    root = tree({"main.tf": MAIN})
    assert flatten("build", root).returncode == 2  # --out missing
    assert flatten("build", root, "--out", "/tmp/x", "--dialect", "nope").returncode == 2
    assert flatten("build", root / "missing", "--out", "/tmp/x").returncode == 2


def test_check_reports_stale_output(tree, tmp_path: Path) -> None:
    root = tree({"main.tf": MAIN})
    out = tmp_path / "out"
    assert flatten("build", root, "--out", out, "--check").returncode == 1
    assert flatten("build", root, "--out", out).returncode == 0
    assert flatten("build", root, "--out", out, "--check").returncode == 0
    (root / "main.tf").write_text(MAIN.replace('"x"', '"y"'))
    proc = flatten("build", root, "--out", out, "--check")
    assert proc.returncode == 1
    # An error diagnostic per stale file, saying what to run (flatten/stages/stale.py): the
    # module's file at the source line that changed it, the manifest at its changed line.
    assert proc.stderr.startswith("Error: Output is out of date\n")
    assert 'on main.tf line 2, in resource "terraform_data" "a":' in proc.stderr
    assert f"on {os.path.relpath(out / 'flatten.manifest.json', root)} line " in proc.stderr
    assert f"{out}/main.tf.json is not what the build writes now" in proc.stderr
    assert f"Run `flatten build {root} --out {out}`" in proc.stderr
    assert json.loads((out / "main.tf.json").read_text())["resource"]["terraform_data"]["a"]["input"] == "x"


def test_build_says_where_the_root_module_went(tmp_path: Path) -> None:
    # A module outside the root moves the root module below OUT (OUT/live): terraform must run
    # there, so the CLI says so; --check and --locked read the same tree and manifest.
    repo = tmp_path / "repo"
    (repo / "live").mkdir(parents=True)
    (repo / "shared").mkdir()
    (repo / "live" / "main.tf").write_text('module "s" {\n  source = "../shared"\n}\n')
    (repo / "shared" / "main.tf").write_text(MAIN)
    out = tmp_path / "out"
    proc = flatten("build", repo / "live", "--out", out)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == f"flatten: wrote 3 files to {out} (root module in {out / 'live'})"
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        "flatten.manifest.json",
        "live/main.tf.json",
        "shared/main.tf.json",
    ]
    assert flatten("build", repo / "live", "--out", out, "--check").returncode == 0
    assert flatten("build", repo / "live", "--out", out, "--locked").returncode == 0
    (repo / "shared" / "main.tf").write_text(MAIN.replace('"x"', '"y"'))
    proc = flatten("build", repo / "live", "--out", out, "--check")
    assert proc.returncode == 1
    assert f"{out}/shared/main.tf.json is not what the build writes now" in proc.stderr


def test_dialect_opentofu_reads_tofu_files(tree, tmp_path: Path) -> None:
    root = tree({"main.tf": MAIN, "main.tofu": MAIN.replace('"a"', '"b"')})
    out = tmp_path / "out"
    assert flatten("build", root, "--out", out, "--dialect", "opentofu").returncode == 0
    assert list(json.loads((out / "main.tf.json").read_text())["resource"]["terraform_data"]) == ["b"]
    assert flatten("build", root, "--out", out).returncode == 0
    assert list(json.loads((out / "main.tf.json").read_text())["resource"]["terraform_data"]) == ["a"]


def test_stdout_closed_early_ends_quietly_with_status_120(tree) -> None:
    # The process ends without tearing down its heap (flatten/__main__.py), so it flushes its
    # streams itself: a reader that went away is status 120, as Python's own exit makes it.
    # (With PYTHONUNBUFFERED the write itself fails, and click ends the process with status 1.)
    root = tree({"main.tf": MAIN})
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "flatten", "providers", str(root), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    stderr = proc.stderr.read()
    assert proc.wait() == 120
    assert b"Traceback" not in stderr


def test_a_build_is_complete_when_the_process_ends(tree, tmp_path: Path) -> None:
    # Every cache entry is written before the process exits (nothing is left to a background
    # thread that the exit would cut short).
    root = tree({"main.tf": MAIN, "modules/a/main.tf": MAIN})
    (root / "calls.tf").write_text('module "a" {\n  source = "./modules/a"\n}\n')
    cache = tmp_path / "cache"
    proc = subprocess.run(
        [sys.executable, "-m", "flatten", "build", str(root), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env={**os.environ, "FLATTEN_CACHE_DIR": str(cache)},
    )
    assert proc.returncode == 0, proc.stderr
    entries = [p for p in (cache / "modules").rglob("*") if p.is_file()]
    assert len(entries) == 2 and not [p for p in cache.rglob("*.tmp")]
