"""OUT's writer and the copy walk through the gate (issue 38, "One gate"): holes each closed by
routing flatten/stages/output.py and flatten/stages/layout.py through flatten/gate.py.

Real symlinks, FIFOs and sparse files; each test failed before the change (noted per test).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest
from support.cli import run_flatten, sparse_file
from support.files import write_tree as write_files

from flatten import gate
from flatten.stages.output import MANIFEST_NAME, write_tree

MAIN = 'module "a" {\n  source = "./a"\n}\n'
# A sparse file that takes no disk and minutes to read whole on any machine (the canary's 3 GiB
# ran past its deadline only on a loaded one); refused by its size, it costs nothing.
HUGE = 200 << 30


def _run(
    *args: str | Path, tmp_path: Path, timeout: float = 90, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    # The timeout: a FIFO opened or a sparse file read whole would run past it.
    return run_flatten(*args, cache=tmp_path / "cache", timeout=timeout, cwd=cwd)


def _clean(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr and "[Errno" not in proc.stderr, proc.stderr


def _listing(top: Path) -> dict[str, bytes]:
    return {p.relative_to(top).as_posix(): p.read_bytes() for p in sorted(top.rglob("*")) if p.is_file()}


# -- OUT's writer (stages/output.py) ----------------------------------------------------------------


def test_a_directory_whose_manifest_is_a_symlink_is_not_taken_for_a_previous_output(tmp_path: Path) -> None:
    """Before: the manifest was looked at through the link, the directory taken for flatten's
    output and replaced, and with it the user's files (an old-format manifest lists none)."""
    elsewhere = write_files(tmp_path / "elsewhere", {"m.json": "{}\n"})
    out = write_files(tmp_path / "out", {"notes.txt": "mine\n", "data/x.csv": "1,2\n"})
    (out / MANIFEST_NAME).symlink_to(elsewhere / "m.json")
    root = write_files(tmp_path / "src", {"main.tf": MAIN, "a/main.tf": "locals {}\n"})
    proc = _run("build", root, "--out", out, tmp_path=tmp_path)
    _clean(proc)
    assert proc.returncode == 2 and "holds no flatten.manifest.json" in proc.stderr, proc.stderr
    assert (out / "notes.txt").read_text() == "mine\n" and (out / "data/x.csv").read_text() == "1,2\n"
    assert (out / MANIFEST_NAME).is_symlink() and _listing(elsewhere) == {"m.json": b"{}\n"}


def test_a_file_taken_from_the_previous_output_never_comes_through_a_symlink(tmp_path: Path) -> None:
    """An incremental rebuild hard-links unchanged files of the previous output. Before: with
    ``OUT/modules`` replaced by a link, the canary's file (same bytes) was hard-linked into the
    new output, which then shared its inode (an edit of OUT edited the canary)."""
    content = b'{"module": "app"}\n'
    out = tmp_path / "out"
    write_tree(out, {"main.tf.json": b"{}\n", "modules/app/main.tf.json": content, MANIFEST_NAME: b"{}\n"})
    canary = write_files(tmp_path / "canary", {"app/main.tf.json": content})
    import shutil

    shutil.rmtree(out / "modules")
    (out / "modules").symlink_to(canary, target_is_directory=True)
    digest = hashlib.blake2b(content, digest_size=16).hexdigest()
    links = {"modules/app/main.tf.json": (out / "modules/app/main.tf.json", digest)}
    with pytest.raises(OSError) as raised:
        write_tree(out, {"main.tf.json": b'{"v": 2}\n', MANIFEST_NAME: b"{}\n"}, links=links)
    assert isinstance(raised.value, gate.Refused) and raised.value.reason == "symlink"
    assert (canary / "app/main.tf.json").stat().st_nlink == 1  # never linked anywhere
    assert (out / "main.tf.json").read_bytes() == b"{}\n"  # the previous output in place
    assert sorted(p.name for p in tmp_path.iterdir()) == ["canary", "out"]  # no temporary tree left


def test_a_copy_over_the_budget_is_refused_by_the_writer_before_a_byte_is_read(tmp_path: Path) -> None:
    """A source file grown past the copy budget between the walk and the write (or handed to the
    writer by any caller). Before: copied whole, a terabyte-sized sparse file without end."""
    out = tmp_path / "out"
    write_tree(out, {"main.tf.json": b"{}\n", MANIFEST_NAME: b"{}\n"})
    big = sparse_file(tmp_path / "src" / "blob.bin", gate.COPY_LIMIT + 1)
    with pytest.raises(gate.Refused) as raised:
        write_tree(out, {"main.tf.json": b"{}\n", MANIFEST_NAME: b"{}\n"}, {"blob.bin": big})
    assert raised.value.reason == "too-large"
    assert _listing(out) == {"main.tf.json": b"{}\n", MANIFEST_NAME: b"{}\n"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "src"]


def test_a_copy_swapped_for_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    out = tmp_path / "out"
    fifo = tmp_path / "src" / "pipe.txt"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    with pytest.raises(gate.Refused) as raised:
        write_tree(out, {MANIFEST_NAME: b"{}\n"}, {"pipe.txt": fifo})
    assert raised.value.reason == "special" and "FIFO" in raised.value.what
    assert not out.exists()


# -- the copy walk (stages/layout.py) ---------------------------------------------------------------


def test_a_fifo_beside_a_module_is_named_and_never_opened(tmp_path: Path) -> None:
    """Before: a FIFO (or a link to one inside the module) was left out without a word, so the
    module's file was missing from the output with nothing saying why."""
    root = write_files(tmp_path / "src", {"main.tf": MAIN, "a/main.tf": "locals {}\n", "a/ok.txt": "ok\n"})
    os.mkfifo(root / "a" / "pipe.txt")
    (root / "a" / "link.txt").symlink_to("pipe.txt")
    out = tmp_path / "out"
    proc = _run("build", root, "--out", out, tmp_path=tmp_path)
    _clean(proc)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("Warning: Module file not copied") == 2, proc.stderr
    assert "pipe.txt in the module directory a was not copied" in proc.stderr
    assert "link.txt in the module directory a was not copied" in proc.stderr
    assert "FIFO (named pipe)" in proc.stderr
    assert (out / "a" / "ok.txt").read_text() == "ok\n" and not (out / "a" / "pipe.txt").exists()


def test_a_file_over_the_copy_budget_beside_a_module_is_an_error_naming_it(tmp_path: Path) -> None:
    """Item 9 (the canary's finding): before, a sparse file beside a module was hashed, copied and
    compared whole (a 3 GiB one ran past the canary's 90 s)."""
    root = write_files(tmp_path / "src", {"main.tf": MAIN, "a/main.tf": "locals {}\n"})
    sparse_file(root / "a" / "files" / "blob.bin", gate.COPY_LIMIT + 1)
    out = tmp_path / "out"
    proc = _run("build", root, "--out", out, tmp_path=tmp_path)
    _clean(proc)
    assert proc.returncode == 1, proc.stderr
    assert "Error: Failed to read file" in proc.stderr and "files/blob.bin" in proc.stderr
    assert f"larger than the {gate.COPY_LIMIT:,} bytes" in proc.stderr
    assert ".terraformignore" in proc.stderr  # what to do: leave it out
    assert not out.exists()
    # Left out as told, the build goes through.
    (root / ".terraformignore").write_text("a/files/blob.bin\n")
    proc = _run("build", root, "--out", out, tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(
    ("place", "args"),
    [
        ("x.auto.tfvars.json", ("--check",)),  # the canary's two cases, as the fuzzer found them
        ("tests/a.tftest.hcl", ("--dialect", "opentofu")),
    ],
)
def test_a_huge_sparse_file_the_build_would_copy_ends_with_a_diagnostic(
    tmp_path: Path, place: str, args: tuple[str, ...]
) -> None:
    root = write_files(tmp_path / "src", {"main.tf": MAIN, "a/main.tf": "locals {}\n"})
    out = tmp_path / "out"
    first = _run("build", root, "--out", out, tmp_path=tmp_path)
    assert first.returncode == 0, first.stderr
    sparse_file(root / place, HUGE)
    proc = _run("build", root, "--out", out, *args, tmp_path=tmp_path)
    _clean(proc)
    assert proc.returncode in (1, 2), proc.stderr
    assert Path(place).name in proc.stderr and "larger than" in proc.stderr, proc.stderr


def test_check_with_a_huge_sparse_file_in_out_ends_and_calls_it_stale(tmp_path: Path) -> None:
    """The canary's case (`build --check`, OUT's main.tf.json a 3 GiB sparse file): before, it was
    hashed in chunks for minutes. Now no file of OUT over the copy budget is read: not the output."""
    root = write_files(tmp_path / "src", {"main.tf": MAIN, "a/main.tf": "locals {}\n"})
    out = tmp_path / "out"
    first = _run("build", root, "--out", out, tmp_path=tmp_path)
    assert first.returncode == 0, first.stderr
    (out / "main.tf.json").unlink()
    sparse_file(out / "main.tf.json", HUGE)
    proc = _run("build", root, "--out", out, "--check", tmp_path=tmp_path)
    _clean(proc)
    assert proc.returncode == 1, proc.stderr
    assert "main.tf.json" in proc.stderr and "Output is out of date" in proc.stderr, proc.stderr


def test_affected_with_a_huge_sparse_file_in_out_ends(tmp_path: Path) -> None:
    """The canary fuzz kind's finding (seed 3801: `affected --base-out`, OUT's module directory a
    3 GiB sparse file): before, it was hashed whole and ran past the 60 s deadline (here 200 GiB,
    so that it does on any machine: hashed at 1 GB/s it takes minutes; refused by its size now)."""
    root = write_files(tmp_path / "src", {"main.tf": MAIN, "a/main.tf": "locals {}\n"})
    out = tmp_path / "out"
    first = _run("build", root, "--out", out, tmp_path=tmp_path)
    assert first.returncode == 0, first.stderr
    import shutil

    shutil.rmtree(out / "a")
    sparse_file(out / "a", HUGE)
    proc = _run(
        "affected", "src", "--base-out", out, "--format", "json", tmp_path=tmp_path, timeout=60, cwd=tmp_path
    )
    _clean(proc)
    assert proc.returncode in (0, 1), proc.stderr
