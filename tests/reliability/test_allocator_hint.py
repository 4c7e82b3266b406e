"""The output tree and the cache are marked as directory hierarchies of their own for the file
system's allocator (``chattr +T``; flatten/stages/output.py ``mark_top_directory``): on ext4
without a journal, files created where many were just removed otherwise cost about 1 ms each
(docs/performance.md, "Cold builds, third round")."""

from __future__ import annotations

import fcntl
import os
import struct
import sys
from pathlib import Path

import pytest

from flatten.stages.output import mark_top_directory, write_tree

_FS_IOC_GETFLAGS = 0x80086601
_FS_TOPDIR_FL = 0x00020000


def _flags(path: Path) -> int | None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        return int(struct.unpack("i", fcntl.ioctl(fd, _FS_IOC_GETFLAGS, bytes(4)))[0])
    except OSError:
        return None
    finally:
        os.close(fd)


def _topdir_supported(where: Path) -> bool:
    probe = where / "probe"
    probe.mkdir()
    mark_top_directory(probe)
    flags = _flags(probe)
    probe.rmdir()
    return flags is not None and bool(flags & _FS_TOPDIR_FL)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="FS_TOPDIR_FL is a Linux flag")
def test_every_directory_of_a_written_tree_is_marked_top_of_a_hierarchy(tmp_path: Path) -> None:
    if not _topdir_supported(tmp_path):
        pytest.skip(f"the file system of {tmp_path} keeps no FS_TOPDIR_FL (only ext2/3/4 do)")
    out = tmp_path / "out"
    files = {"main.tf.json": b"{}\n", **{f"modules/m{i}/main.tf.json": b"{}\n" for i in range(3)}}
    write_tree(out, files)
    directories = [out, out / "modules", *(out / "modules" / f"m{i}" for i in range(3))]
    for directory in directories:
        flags = _flags(directory)
        assert flags is not None and flags & _FS_TOPDIR_FL, directory
    assert {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*.json")} == files


def test_marking_is_best_effort(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    os.symlink(tmp_path, tmp_path / "link")
    for path in (tmp_path / "missing", tmp_path / "file", tmp_path / "link"):
        mark_top_directory(path)  # never raises
    assert (tmp_path / "file").read_text() == "x"
    if sys.platform.startswith("linux") and _topdir_supported(tmp_path):
        flags = _flags(tmp_path)  # the link was not followed
        assert flags is not None and not flags & _FS_TOPDIR_FL
