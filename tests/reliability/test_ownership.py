"""OUT belongs to three parties (issue 39 item 1) and the swap is crash-safe (issue 38 item 3).

flatten owns exactly what its manifest lists ("files"); Terraform owns its entries of the root
module's directory; everything else is the user's, kept by every rebuild (same bytes, same inode)
and named when Terraform loads it. A build killed outright (SIGKILL, or ``os._exit`` in a forked
child: no cleanup runs either way) at any step of the swap loses nothing: the next build puts
everything back (flatten/stages/output.py ``_recover``).
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from support.files import at_fd
from support.files import write_tree as write_files
from typer.testing import CliRunner

from flatten.cli import app
from flatten.stages import output
from flatten.stages.output import MANIFEST_NAME, write_tree

FOREIGN = "File in the output that flatten did not write"
USERS = {
    "TEAM_NOTES.txt": "ask Ana before applying\n",
    "backend_override.tf": 'terraform {\n  backend "local" {}\n}\n',
    "local.auto.tfvars": "x = 5\n",
    "docs/runbook.md": "# runbook\n",
    "modules/app/NOTES": "app notes\n",  # beside flatten's own files, in a directory of flatten's
}
TERRAFORMS = {
    ".terraform/modules/modules.json": "{}",
    ".terraform/environment": "staging",
    "terraform.tfstate": '{"serial": 7}',
    "terraform.tfstate.d/staging/terraform.tfstate": '{"serial": 3}',
    ".terraform.lock.hcl": "# providers\n",
}


def _root(tmp_path: Path, **extra: str) -> Path:
    return write_files(
        tmp_path / "src",
        {
            "main.tf": 'variable "x" {\n  default = 1\n}\nmodule "app" {\n  source = "./modules/app"\n}\n',
            "modules/app/main.tf": 'output "v" {\n  value = 1\n}\n',
            "modules/app/run.sh": "echo\n",
            **extra,
        },
    )


def _build(root: Path, out: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["build", str(root), "--out", str(out), *args])
    return result.exit_code, result.output


def _put(out: Path, files: dict[str, str]) -> dict[str, int]:
    inodes = {}
    for rel, text in files.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(text)
        inodes[rel] = (out / rel).stat().st_ino
    return inodes


def _same(out: Path, files: dict[str, str], inodes: dict[str, int] | None = None) -> None:
    for rel, text in files.items():
        assert (out / rel).read_text() == text, rel
        if inodes is not None:
            assert (out / rel).stat().st_ino == inodes[rel], rel


# -- issue 39 item 1: the user's files ----------------------------------------------------------


def test_a_rebuild_keeps_the_users_files_and_names_those_terraform_loads(tmp_path: Path) -> None:
    root, out = _root(tmp_path), tmp_path / "out"
    assert _build(root, out)[0] == 0
    inodes = _put(out, USERS)
    (root / "main.tf").write_text((root / "main.tf").read_text() + 'output "w" {\n  value = 2\n}\n')
    code, text = _build(root, out)
    assert code == 0, text
    _same(out, USERS, inodes)
    assert b'"w"' in (out / "main.tf.json").read_bytes()  # and the rebuild happened
    assert text.count(FOREIGN) == 2, text
    assert "out/backend_override.tf" in text and "out/local.auto.tfvars" in text
    assert "TEAM_NOTES" not in text and "runbook" not in text


def test_a_file_flatten_no_longer_writes_is_still_removed(tmp_path: Path) -> None:
    root, out = _root(tmp_path), tmp_path / "out"
    assert _build(root, out)[0] == 0
    assert (out / "modules/app/run.sh").is_file()
    _put(out, USERS)
    (root / "modules/app/run.sh").unlink()
    assert _build(root, out)[0] == 0
    assert not (out / "modules/app/run.sh").exists()
    _same(out, USERS)


def test_check_names_the_users_file_as_its_own_finding(tmp_path: Path) -> None:
    root, out = _root(tmp_path), tmp_path / "out"
    assert _build(root, out)[0] == 0
    _put(out, USERS)
    code, text = _build(root, out, "--check")
    assert code == 0, text  # the user's files are not stale output
    assert "Output is out of date" not in text and "no longer writes" not in text
    assert text.count(FOREIGN) == 2 and "backend_override.tf" in text and "TEAM_NOTES" not in text
    assert "Warning: " + FOREIGN in text
    (root / "modules/app/run.sh").unlink()  # a file flatten wrote and no longer writes: stale
    code, text = _build(root, out, "--check")
    assert code == 1 and "which the build no longer writes" in text and "run.sh" in text


def test_a_users_file_where_the_build_now_writes_stops_the_build(tmp_path: Path) -> None:
    root, out = _root(tmp_path), tmp_path / "out"
    assert _build(root, out)[0] == 0
    _put(out, {"modules/app/extra.txt": "mine\n"})
    (root / "modules/app/extra.txt").write_text("the source's\n")
    before = (out / "main.tf.json").read_bytes()
    code, text = _build(root, out)
    assert code == 2 and "modules/app/extra.txt" in text and "flatten did not write" in text
    assert (out / "modules/app/extra.txt").read_text() == "mine\n"
    assert (out / "main.tf.json").read_bytes() == before


def _unrenamable(monkeypatch: pytest.MonkeyPatch, out: Path) -> None:
    real_rename = os.rename

    def rename(src: str, dst: str, *, src_dir_fd: int | None = None, dst_dir_fd: int | None = None) -> None:
        if os.fspath(out) in (at_fd(src, src_dir_fd), at_fd(dst, dst_dir_fd)):
            raise OSError(errno.EBUSY, "Device or resource busy", at_fd(src, src_dir_fd))
        real_rename(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)

    monkeypatch.setattr(os, "rename", rename)
    monkeypatch.setattr(output, "_exchange", lambda *_: False)


def _tree(version: int) -> dict[str, bytes]:
    files = {"main.tf.json": b'{"v": %d}\n' % version, "modules/app/main.tf.json": b"{}\n"}
    manifest = {"modules": [], "files": {rel: "sha256:x" for rel in files}}
    return {**files, MANIFEST_NAME: json.dumps(manifest).encode()}


@pytest.mark.parametrize("path", ["exchange", "renames", "in place"])
def test_every_swap_path_keeps_the_users_and_terraforms_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    out = tmp_path / "out"
    write_tree(out, _tree(1))
    inodes = _put(out, {**USERS, **TERRAFORMS})
    if path == "renames":
        monkeypatch.setattr(output, "_exchange", lambda *_: False)
    elif path == "in place":
        _unrenamable(monkeypatch, out)
    write_tree(out, _tree(2))
    assert (out / "main.tf.json").read_bytes() == b'{"v": 2}\n'
    _same(out, {**USERS, **TERRAFORMS}, inodes)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


# -- issue 38 item 3: a kill at every step of the swap ---------------------------------------------


def _steps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str) -> list[str]:
    """The steps a rebuild of a tree holding the user's and Terraform's entries goes through."""
    out = tmp_path / "probe" / "out"
    write_tree(out, _tree(1))
    _put(out, {**USERS, **TERRAFORMS})
    steps: list[str] = []
    with monkeypatch.context() as patch:
        if path == "renames":
            patch.setattr(output, "_exchange", lambda *_: False)
        elif path == "in place":
            _unrenamable(patch, out)
        write_tree(out, _tree(2), fault=steps.append)
    return steps


def _killed_at(step: str, run: Callable[[Callable[[str], None]], None]) -> None:
    """Run ``run`` in a forked child that ends with ``os._exit`` at ``step`` (no cleanup, as SIGKILL)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:

            def fault(name: str) -> None:
                if name == step:
                    os._exit(9)

            run(fault)
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 9, f"the child never reached {step}"


@pytest.mark.parametrize("path", ["exchange", "renames", "in place"])
def test_a_kill_at_every_step_of_the_swap_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    steps = _steps(tmp_path, monkeypatch, path)
    assert "written" in steps and len([s for s in steps if s.startswith("adopt:")]) == 9
    if path == "in place":
        assert any(s.startswith("in-place:leave:") for s in steps)
        assert any(s.startswith("in-place:arrive:") for s in steps)
        assert len([s for s in steps if s.startswith("in-place:adopt:")]) == 9
    assert len(steps) == len(set(steps))
    for step in steps:
        out = tmp_path / step.replace(":", "-") / "out"
        write_tree(out, _tree(1))
        _put(out, {**USERS, **TERRAFORMS})

        def run(fault: Callable[[str], None], out: Path = out) -> None:
            if path == "renames":
                monkeypatch.setattr(output, "_exchange", lambda *_: False)
            elif path == "in place":
                _unrenamable(monkeypatch, out)
            write_tree(out, _tree(2), fault=fault)

        _killed_at(step, run)
        # The next build (here another version of the tree) puts everything back first.
        with monkeypatch.context() as patch:
            if path == "in place":
                _unrenamable(patch, out)
            write_tree(out, _tree(3))
        assert (out / "main.tf.json").read_bytes() == b'{"v": 3}\n', step
        _same(out, {**USERS, **TERRAFORMS})
        assert sorted(p.name for p in out.parent.iterdir()) == ["out"], step
        assert not [p for p in out.iterdir() if p.name.startswith(".flatten-")], step


@pytest.mark.parametrize("step", ["written", "adopt:1", "adopt:4", "adopt:7", "swapped", "readopted"])
def test_sigkill_of_the_flatten_program_at_a_step_then_a_build(tmp_path: Path, step: str) -> None:
    # The process layer's fault point (flatten/shell/faults.py): the real program, a real SIGKILL.
    root, out = _root(tmp_path), tmp_path / "out"
    assert _build(root, out)[0] == 0
    _put(out, {**USERS, **TERRAFORMS})
    (root / "main.tf").write_text((root / "main.tf").read_text() + "# edited\n")
    env = {**os.environ, "FLATTEN_TEST_KILL_AT": step}
    killed = subprocess.run(
        [sys.executable, "-m", "flatten", "build", str(root), "--out", str(out)], env=env, capture_output=True
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert _build(root, out)[0] == 0
    _same(out, {**USERS, **TERRAFORMS})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "src"]


# -- the gate's canary, on OUT's paths and test helper directories (issue 38) -----------------------

_SECRET = "CANARY-SECRET-5f1e"


def _canary(tmp_path: Path) -> Path:
    canary = tmp_path / "canary"
    files = {"secret.txt": _SECRET + "\n", "main.tf": f'output "s" {{\n  value = "{_SECRET}"\n}}\n'}
    write_files(canary, files)
    return canary


def _listing(top: Path) -> dict[str, bytes]:
    return {p.relative_to(top).as_posix(): p.read_bytes() for p in sorted(top.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    "where",
    [
        "out/docs",  # a link of the user's: kept as a link
        "out/.terraform",  # Terraform's entry as a link: moved as a link
        "out/modules",  # one of flatten's directories replaced by a link: refused
        "out/modules/app",
        ".out.flatten-stale",  # a leftover temporary tree's name: the link removed
        ".out.flatten-stale-old",
        "out/.flatten-new-stale",
        "out/.flatten-old-stale",
        "src/helper",  # a test's helper directory linking out of the root: not carried
    ],
)
def test_a_symlink_to_a_canary_on_outs_paths_is_never_followed(tmp_path: Path, where: str) -> None:
    canary = _canary(tmp_path)
    before = _listing(canary)
    root = _root(tmp_path, **{"t.tftest.hcl": 'run "a" {\n  module {\n    source = "./helper"\n  }\n}\n'})
    out = tmp_path / "out"
    if where != "src/helper":
        (root / "helper").mkdir()
        (root / "helper" / "main.tf").write_text("")
    first_code, first_text = _build(root, out)
    assert first_code == 0, first_text
    link = tmp_path / where
    if link.exists():
        import shutil

        shutil.rmtree(link)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(canary, target_is_directory=True)
    (root / "main.tf").write_text((root / "main.tf").read_text() + "# edited\n")
    code, text = _build(root, out)
    assert code in (0, 2), text
    assert _listing(canary) == before, where  # byte-identical, nothing added or removed
    assert _SECRET not in text
    written = {
        rel: data for rel, data in _listing(out).items() if not rel.startswith(("docs/", ".terraform/"))
    }
    assert not [rel for rel, data in written.items() if _SECRET.encode() in data], where
    if where in ("out/modules", "out/modules/app"):
        assert code == 2 and "flatten did not write" in text
    elif where == "src/helper":
        assert "Test file not copied" in text and "t.tftest.hcl" not in written
    else:
        assert code == 0
        assert (out / where[4:]).is_symlink() if where in ("out/docs", "out/.terraform") else True
        assert not (tmp_path / where).exists() or where in ("out/docs", "out/.terraform")
