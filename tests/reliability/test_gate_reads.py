"""Reads through the gate (issue 38, items 6, 9 and 12): real symlinks, FIFOs and /dev/zero.

Each case runs ``python -m flatten`` with a deadline far below "for ever": a FIFO or a device
must be refused without blocking or reading, a symlink leading out of the root must not be read
(the canary secret it holds appears nowhere in OUT, stdout or stderr), deep JSON is a diagnostic.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.files import write_tree

SECRET = "CANARY-4e1d0b-credential"
MAIN = (
    'variable "name" {\n  type    = string\n  default = "d"\n}\n'
    'resource "terraform_data" "a" {\n  input = var.name\n}\n'
)


def _run(*args: str | Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ}
    environ.pop("FLATTEN_TRACEBACK", None)
    return subprocess.run(
        [sys.executable, "-m", "flatten", *map(str, args)],
        capture_output=True,
        text=True,
        env=environ,
        timeout=timeout,  # a FIFO read blocked for ever before the gate
    )


def _home(tmp_path: Path) -> Path:
    """The runner's credentials, outside the checkout."""
    return write_tree(
        tmp_path / "home",
        {
            "credentials.tfrc.json": '{"credentials": {"app.terraform.io": {"token": "' + SECRET + '"}}}\n',
            "secret.tf.json": '{"locals": {"token": "' + SECRET + '"}}\n',
            "ignore": f"{SECRET}\n",
        },
    )


def _nowhere(tmp_path: Path, out: Path, *procs: subprocess.CompletedProcess[str]) -> None:
    for proc in procs:
        assert SECRET not in proc.stdout + proc.stderr
        assert "Traceback" not in proc.stderr and "[Errno" not in proc.stderr
    if out.exists():
        for path in out.rglob("*"):
            if path.is_file():
                assert SECRET.encode() not in path.read_bytes(), path


@pytest.mark.parametrize("dialect", ["terraform", "opentofu"])
def test_a_configuration_file_linking_out_of_the_root_is_not_read(tmp_path: Path, dialect: str) -> None:
    """Item 6: `leak.tf.json` -> the runner's file: never read, never quoted."""
    home = _home(tmp_path)
    root = write_tree(tmp_path / "src", {"main.tf": MAIN})
    (root / "leak.tf.json").symlink_to(home / "secret.tf.json")
    out = tmp_path / "out"
    proc = _run("build", root, "--out", out, "--dialect", dialect)
    assert proc.returncode == 1
    assert "Failed to read file" in proc.stderr and "leak.tf.json" in proc.stderr
    assert "symbolic link leading outside" in proc.stderr
    _nowhere(tmp_path, out, proc)


def test_variables_files_linking_out_of_the_root_are_not_read(tmp_path: Path) -> None:
    """Item 6: `terraform.tfvars.json` and `x.auto.tfvars.json` -> the runner's credentials."""
    home = _home(tmp_path)
    root = write_tree(tmp_path / "src", {"main.tf": MAIN})
    (root / "terraform.tfvars.json").symlink_to(home / "credentials.tfrc.json")
    (root / "x.auto.tfvars.json").symlink_to(home / "credentials.tfrc.json")
    out = tmp_path / "out"
    proc = _run("build", root, "--out", out, "--dialect", "opentofu")
    assert proc.returncode == 1
    assert proc.stderr.count("Failed to read variables file") == 2
    _nowhere(tmp_path, out, proc)


def test_an_ignore_file_linking_out_of_the_root_is_not_read(tmp_path: Path) -> None:
    home = _home(tmp_path)
    root = write_tree(tmp_path / "src", {"main.tf": MAIN, "notes.txt": "n"})
    (root / ".terraformignore").symlink_to(home / "ignore")
    out = tmp_path / "out"
    proc = _run("build", root, "--out", out)
    assert proc.returncode == 0, proc.stderr
    assert "Failed to read .terraformignore" in proc.stderr
    _nowhere(tmp_path, out, proc)


def test_links_inside_the_root_are_still_read(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "src", {"shared/common.tf": MAIN, "vars/values.tfvars": 'name = "v"\n'})
    (root / "main.tf").symlink_to("shared/common.tf")
    (root / "terraform.tfvars").symlink_to("vars/values.tfvars")
    out = tmp_path / "out"
    proc = _run("build", root, "--out", out, "--dialect", "opentofu")
    assert proc.returncode == 0, proc.stderr
    assert "terraform_data" in (out / "main.tf.json").read_text()


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


@pytest.mark.parametrize(
    "case",
    ["var-file /dev/zero", "var-file fifo", "zero.tf", "override link", "ignore fifo", "ignore zero"],
)
def test_devices_and_fifos_are_refused_without_blocking_or_reading(tmp_path: Path, case: str) -> None:
    """Item 9: exit 3 MemoryError at 2.3-2.6 GB, or a hang for ever, before the gate."""
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero here")
    root = write_tree(tmp_path / "src", {"main.tf": MAIN})
    out = tmp_path / "out"
    args: list[str | Path] = ["build", root, "--out", out, "--dialect", "opentofu"]
    expect = 1
    if case == "var-file /dev/zero":
        args += ["--var-file", "/dev/zero"]
        words = "Failed to read variables file"
    elif case == "var-file fifo":
        args += ["--var-file", _fifo(tmp_path / "vars.tfvars")]
        words = "FIFO"
    elif case == "zero.tf":
        (root / "zero.tf").symlink_to("/dev/zero")
        words = "Failed to read file"
    elif case == "override link":
        (root / "main_override.tf").symlink_to("/dev/zero")
        words = "Failed to read file"
    elif case == "ignore fifo":
        _fifo(root / ".terraformignore")
        words, expect = "Failed to read .terraformignore", 0
    else:
        (root / ".terraformignore").symlink_to("/dev/zero")
        words, expect = "Failed to read .terraformignore", 0
    proc = _run(*args)
    assert proc.returncode == expect, proc.stderr
    assert words in proc.stderr
    assert "MemoryError" not in proc.stderr and "Traceback" not in proc.stderr


def _deep(depth: int) -> str:
    return '{"name": ' + "[" * depth + '"x"' + "]" * depth + "}"


@pytest.mark.parametrize("where", ["terraform.tfvars.json", "a.auto.tfvars.json", "--var-file"])
def test_deep_json_in_variables_files_is_a_diagnostic(tmp_path: Path, where: str) -> None:
    """Item 12: RecursionError (exit 3) before."""
    root = write_tree(tmp_path / "src", {"main.tf": MAIN})
    args: list[str | Path] = ["build", root, "--out", tmp_path / "out", "--dialect", "opentofu"]
    if where == "--var-file":
        path = write_tree(tmp_path / "vars", {"x.json": _deep(100_000)}) / "x.json"
        args += ["--var-file", path]
    else:
        (root / where).write_text(_deep(100_000))
    proc = _run(*args)
    assert proc.returncode == 1, proc.stderr
    assert "Invalid JSON" in proc.stderr and "Traceback" not in proc.stderr


def test_deep_json_in_a_test_file_is_a_diagnostic(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "src",
        {"main.tf": MAIN, "tests/a.tftest.json": '{"run": ' + "[" * 100_000 + "]" * 100_000 + "}"},
    )
    proc = _run("build", root, "--out", tmp_path / "out")
    assert proc.returncode in (0, 1), proc.stderr
    assert "Traceback" not in proc.stderr and "RecursionError" not in proc.stderr


def test_out_with_a_newline_cannot_start_a_workflow_command(tmp_path: Path) -> None:
    """Item 10: `--out` holding a newline was printed raw in the "wrote" line."""
    root = write_tree(tmp_path / "src", {"main.tf": MAIN})
    out = tmp_path / "o\n::warning file=x.tf::forged"
    proc = _run("build", root, "--out", out)
    assert proc.returncode == 0, proc.stderr
    assert "wrote" in proc.stderr
    assert not any(line.lstrip().startswith("::") for line in proc.stderr.splitlines())


@pytest.mark.parametrize("where", ["local root", "remote package"])
def test_a_backtracking_ignore_rule_cannot_hold_the_build(tmp_path: Path, where: str) -> None:
    """Item 8: `(a+)+b` against a 40-character name, from a local root and from a package served
    by a loopback server: finished in seconds (it ran past every deadline before)."""
    from support.remote import CHILD
    from support.servers import HTTPServer, Reply, make_tar, serving

    hostile = {".terraformignore": "(a+)+b\n", "a" * 40: "x", "b" * 3: "kept"}
    if where == "local root":
        root = write_tree(tmp_path / "src", {"main.tf": MAIN, **hostile})
        proc = _run("build", root, "--out", tmp_path / "out", timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert (tmp_path / "out" / ("a" * 40)).is_file()
        return
    with serving(HTTPServer()) as srv:
        srv.routes["/app.tgz"] = Reply(200, make_tar({**CHILD, **hostile}))
        main = f'module "app" {{\n  source = "{srv.url}/app.tgz"\n  name   = "x"\n}}\n'
        root = write_tree(tmp_path / "src", {"main.tf": main})
        proc = _run("build", root, "--out", tmp_path / "out", timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert any(p.name == "a" * 40 for p in (tmp_path / "out").rglob("*"))
