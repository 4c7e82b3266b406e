"""Every failure of the operating system reaches the user as a diagnostic: the path, plain words
and what to do, never ``[Errno N]`` text nor a traceback (issue 28, item 6).

The paths a real run can meet (a file where a directory is needed, a system directory) run the
``flatten`` program; the ones a root user cannot provoke on a scratch directory (read-only file
system, permission denied, a full disk) run the command line in-process with the failing system
call replaced.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flatten import cli
from flatten.lang.oserror import describe_os_error

MAIN = 'resource "terraform_data" "a" {\n  input = "x"\n}\n'


def flatten(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flatten", *map(str, args)], capture_output=True, text=True, cwd=cwd
    )


def assert_plain(text: str) -> None:
    assert "[Errno" not in text
    assert "Traceback" not in text
    assert "internal error" not in text


def test_a_file_in_the_way_of_out(tree, tmp_path: Path) -> None:
    root = tree({"main.tf": MAIN})
    (tmp_path / "afile").write_text("")
    proc = flatten("build", root, "--out", tmp_path / "afile" / "x")
    assert proc.returncode == 2
    assert_plain(proc.stderr)
    assert proc.stderr.startswith("Error: Failed to write the output tree\n")
    assert "a file is in the way" in proc.stderr
    assert f"Remove or rename {tmp_path / 'afile'}" in proc.stderr


def test_a_file_deeper_in_the_path_of_out(tree, tmp_path: Path) -> None:
    root = tree({"main.tf": MAIN})
    (tmp_path / "afile").write_text("")
    proc = flatten("build", root, "--out", tmp_path / "afile" / "x" / "y")
    assert proc.returncode == 2
    assert_plain(proc.stderr)
    assert "a part of the path is a file, not a directory" in proc.stderr


def test_several_roots_report_it_per_root(tree, tmp_path: Path) -> None:
    a = tree({"a/main.tf": MAIN, "b/main.tf": MAIN})
    (tmp_path / "afile").write_text("")
    proc = flatten("build", a / "a", a / "b", "--out", tmp_path / "afile")
    assert proc.returncode == 2
    assert_plain(proc.stderr)
    assert "flatten could not write the output tree to" in proc.stderr


@pytest.mark.skipif(not Path("/sys/kernel").is_dir(), reason="needs Linux's /sys (no file can be made there)")
def test_a_system_directory(tree) -> None:
    root = tree({"main.tf": MAIN})
    proc = flatten("build", root, "--out", "/sys/flatten-out")
    assert proc.returncode == 2
    assert_plain(proc.stderr)
    assert "Error: Failed to write the output tree" in proc.stderr
    assert "(/sys)" in proc.stderr


def run_cli(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, str]:
    """Run ``flatten ARGS`` in this process (``flatten.cli.main``); return (exit code, stderr)."""
    monkeypatch.setattr(sys, "argv", ["flatten", *args])
    monkeypatch.delenv("FLATTEN_TRACEBACK", raising=False)
    with pytest.raises(SystemExit) as raised:
        cli.main()
    captured = capsys.readouterr()
    assert_plain(captured.out + captured.err)
    code = raised.value.code
    return (code if isinstance(code, int) else 1), captured.err


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (errno.EROFS, "the file system is read-only"),
        (errno.EACCES, "permission was denied"),
        (errno.EPERM, "the operation is not permitted there"),
    ],
)
def test_the_temporary_tree_cannot_be_made(
    monkeypatch, capsys, tree, tmp_path, code: int, words: str
) -> None:
    from flatten import gate

    root = tree({"main.tf": MAIN})
    out = tmp_path / "out"

    def mkdtemp(directory, prefix, **kwargs):  # type: ignore[no-untyped-def]
        raise OSError(code, os.strerror(code), directory.join(prefix + "abc"))

    monkeypatch.setattr(gate, "make_temp_dir", mkdtemp)
    status, err = run_cli(monkeypatch, capsys, "build", str(root), "--out", str(out))
    assert status == 2
    assert "Error: Failed to write the output tree" in err
    assert words in err
    assert f"({tmp_path})" in err  # the directory at fault, not the temporary tree's name
    assert not out.exists()


def test_a_full_disk(monkeypatch, capsys, tree, tmp_path) -> None:
    root = tree({"main.tf": MAIN})
    out = tmp_path / "out"
    status, _ = run_cli(monkeypatch, capsys, "build", str(root), "--out", str(out))
    assert status == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    (root / "main.tf").write_text(MAIN.replace('"x"', '"y"'))

    def write(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", write)
    status, err = run_cli(monkeypatch, capsys, "build", str(root), "--out", str(out))
    monkeypatch.undo()
    assert status == 2
    assert "there is no space left on the device" in err
    assert "flatten cache clean" in err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # the previous output stays whole


def test_an_unreadable_output_with_check(monkeypatch, capsys, tree, tmp_path) -> None:
    """An OSError no command expects (here --check reading the output) is still a diagnostic."""
    root = tree({"main.tf": MAIN})
    out = tmp_path / "out"
    assert run_cli(monkeypatch, capsys, "build", str(root), "--out", str(out))[0] == 0

    # --check reads OUT through the gate (flatten/gate.py); the disk fails under OUT only.
    from flatten import gate

    def failing(real):  # type: ignore[no-untyped-def]
        def call(path, *args, **kwargs):  # type: ignore[no-untyped-def]
            if os.fspath(path).startswith(str(out)):
                raise OSError(errno.EIO, os.strerror(errno.EIO), os.fspath(path))
            return real(path, *args, **kwargs)

        return call

    monkeypatch.setattr(gate, "read_bytes", failing(gate.read_bytes))
    monkeypatch.setattr(gate, "open_read", failing(gate.open_read))
    status, err = run_cli(monkeypatch, capsys, "build", str(root), "--out", str(out), "--check")
    monkeypatch.undo()
    assert status == 1
    assert err.startswith("Error: ")
    assert "input/output error" in err


@pytest.mark.parametrize("code", sorted(errno.errorcode))
def test_every_errno_reads_without_its_number(code: int) -> None:
    text = describe_os_error(OSError(code, os.strerror(code), "/x/y"), doing="write the output tree to out")
    assert "[Errno" not in text
    assert str(code) not in text.replace("/x/y", "")
    assert text.startswith("flatten could not write the output tree to out: ")
    assert "(/x/y)" in text
    assert text.endswith(".")
