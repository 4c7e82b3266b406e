"""flatten/gate.py's functions for packages (issue 38): a download's file, archive members, a
clone's tree. Real symlinks, FIFOs and deep trees; a canary outside that must never change."""

from __future__ import annotations

import io
import os
import stat
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from flatten import gate
from flatten.lang.oserror import Refused


def _canary(tmp_path: Path) -> Path:
    canary = tmp_path / "canary"
    canary.mkdir()
    (canary / "secret.txt").write_text("secret")
    return canary


def _unchanged(canary: Path) -> bool:
    return sorted(p.name for p in canary.iterdir()) == ["secret.txt"] and (
        (canary / "secret.txt").read_text() == "secret"
    )


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_write_stream_makes_a_new_file_with_exactly_its_mode(tmp_path: Path) -> None:
    with gate.open_dir(tmp_path) as here:
        size = gate.write_stream(here, "f", io.BytesIO(b"x" * 3_000_000).read, limit=3_000_000, mode=0o750)
    assert size == 3_000_000 and (tmp_path / "f").read_bytes() == b"x" * 3_000_000
    assert stat.S_IMODE((tmp_path / "f").stat().st_mode) == 0o750  # no umask: the caller's bits


def test_write_stream_never_writes_through_a_symlink(tmp_path: Path) -> None:
    canary = _canary(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    (work / "f").symlink_to(canary / "secret.txt")
    (work / "d").symlink_to(canary)
    with gate.open_dir(work) as here:
        with pytest.raises(FileExistsError):
            gate.write_stream(here, "f", io.BytesIO(b"evil").read, limit=100)
        gate.write_stream(here, "f", io.BytesIO(b"new").read, limit=100, replace=True)
        with pytest.raises(Refused) as caught:
            here.sub("d")  # how a member below a link is reached: never
        assert caught.value.reason == "symlink"
    assert (work / "f").read_bytes() == b"new" and not (work / "f").is_symlink()
    assert _unchanged(canary)


def test_write_stream_replaces_a_fifo_without_opening_it_and_never_a_directory(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "p")
    (tmp_path / "d").mkdir()
    done: list[int] = []

    def write() -> None:
        with gate.open_dir(tmp_path) as here:
            done.append(gate.write_stream(here, "p", io.BytesIO(b"ok").read, limit=10, replace=True))

    worker = threading.Thread(target=write, daemon=True)
    worker.start()
    worker.join(5)
    assert not worker.is_alive(), "writing over a FIFO blocked"
    assert done == [2] and (tmp_path / "p").read_bytes() == b"ok"
    with gate.open_dir(tmp_path) as here, pytest.raises(IsADirectoryError):
        gate.write_stream(here, "d", io.BytesIO(b"x").read, limit=10, replace=True)
    assert (tmp_path / "d").is_dir()


def test_write_stream_holds_to_its_limit_and_leaves_nothing_half_written(tmp_path: Path) -> None:
    endless_reads: list[int] = []

    def endless(n: int) -> bytes:  # a server or member that never ends (/dev/zero's behaviour)
        endless_reads.append(n)
        return b"\0" * n

    with gate.open_dir(tmp_path) as here:
        with pytest.raises(Refused) as caught:
            gate.write_stream(here, "big", endless, limit=5_000_000)
        assert caught.value.reason == "too-large" and "5,000,000" in caught.value.what
        assert sum(endless_reads) == 5_000_001  # read one byte past the limit, no more
        assert gate.write_stream(here, "exact", io.BytesIO(b"y" * 10).read, limit=10) == 10
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exact"]


def test_write_stream_stops_at_the_deadline(tmp_path: Path) -> None:
    def slow(n: int) -> bytes:
        time.sleep(0.05)
        return b"z"

    start = time.monotonic()
    with gate.open_dir(tmp_path) as here, pytest.raises(Refused) as caught:
        gate.write_stream(here, "slow", slow, limit=1 << 30, deadline=time.monotonic() + 0.5)
    assert caught.value.reason == "deadline" and time.monotonic() - start < 5
    assert list(tmp_path.iterdir()) == []


def test_make_symlink_replaces_a_link_never_a_directory(tmp_path: Path) -> None:
    canary = _canary(tmp_path)
    (tmp_path / "l").symlink_to(canary)
    (tmp_path / "d").mkdir()
    with gate.open_dir(tmp_path) as here:
        with pytest.raises(FileExistsError):
            gate.make_symlink(here, "l", "d")
        gate.make_symlink(here, "l", "d", replace=True)
        with pytest.raises(IsADirectoryError):
            gate.make_symlink(here, "d", "l", replace=True)
    assert os.readlink(tmp_path / "l") == "d" and _unchanged(canary)


@pytest.fixture
def deep(tmp_path: Path) -> Iterator[Path]:
    """A place for a tree deeper than Python's recursion limit, removed afterwards by ``rm -rf``
    whatever the test did: pytest's own clean-up (shared by every run on the machine) recurses
    and would fail on it."""
    place = tmp_path / "deep"
    place.mkdir()
    try:
        yield place
    finally:
        subprocess.run(["rm", "-rf", str(place)], check=False)


def _chain(top: Path, depth: int) -> Path:
    """A directory ``depth`` levels deep (made by descriptors: the path is past PATH_MAX)."""
    fd = os.open(top, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            child = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = child
        with open(os.open("f", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "wb") as f:
            f.write(b"1234")
    finally:
        os.close(fd)
    return top


def test_walk_tree_goes_deep_without_recursion_or_many_descriptors(deep: Path) -> None:
    # A chain 1,200 deep (deeper than Python's recursion limit; os.walk and shutil.rmtree recurse)
    # with a side branch at every level, so the walk comes back up through every directory.
    top = deep
    fd = os.open(top, os.O_RDONLY)
    depth = 1200
    try:
        for _ in range(depth):
            os.mkdir("side", dir_fd=fd)
            os.mkdir("d", dir_fd=fd)
            child = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = child
    finally:
        os.close(fd)
    seen: list[str] = []
    most = 0
    before = _open_fds()

    def enter(rel: str, _here: gate.Dir, entries: tuple[gate.DirEntry, ...]) -> list[str]:
        nonlocal most
        seen.append(rel)
        most = max(most, _open_fds() - before)
        return [e.name for e in entries if e.kind == "dir"]

    with gate.open_dir(top) as here:
        gate.walk_tree(here, enter)
    assert len(seen) == 2 * depth + 1 and len(set(seen)) == len(seen)
    assert max(s.count("/") for s in seen) == depth - 1  # "d/.../d/side": 1,200 names
    # The deepest directories and one every 64 levels open, not 1,200.
    assert most <= gate._WALK_HELD + depth // gate._WALK_SPACING + 4, most
    assert _open_fds() == before


def test_walk_tree_tree_bytes_and_remove_tree_never_follow_a_link(tmp_path: Path) -> None:
    canary = _canary(tmp_path)
    (canary / "secret.txt").write_text("secret")
    tree = tmp_path / "tree"
    (tree / "a").mkdir(parents=True)
    (tree / "a" / "f").write_bytes(b"12345")
    (tree / "a" / "out").symlink_to(canary)
    (tree / "a" / "file-link").symlink_to(canary / "secret.txt")
    os.mkfifo(tree / "a" / "pipe")
    entered: list[str] = []

    def enter(rel: str, _here: gate.Dir, entries: tuple[gate.DirEntry, ...]) -> list[str]:
        entered.append(rel)
        return [e.name for e in entries if e.kind == "dir"]

    with gate.open_dir(tree) as here:
        gate.walk_tree(here, enter)
        size = gate.tree_bytes(here)
    assert entered == ["", "a"]
    # Five bytes of file, the links' own sizes (their targets' lengths), the FIFO's zero.
    assert size == 5 + len(str(canary)) + len(str(canary / "secret.txt"))
    with gate.open_dir(tmp_path) as here:
        assert gate.remove_tree(here, "tree") is True
        assert gate.remove_tree(here, "tree") is False
    assert not tree.exists() and _unchanged(canary)


def test_remove_tree_removes_a_tree_deeper_than_the_recursion_limit(deep: Path) -> None:
    (deep / "t").mkdir()
    _chain(deep / "t", 1200)
    with gate.open_dir(deep / "t") as here:
        assert gate.tree_bytes(here) == 4
    with gate.open_dir(deep) as here:
        gate.remove_tree(here, "t")
    assert list(deep.iterdir()) == []


def test_walk_tree_skips_a_directory_gone_or_replaced_by_a_link(tmp_path: Path) -> None:
    canary = _canary(tmp_path)
    tree = tmp_path / "tree"
    for name in ("a", "b", "c"):
        (tree / name).mkdir(parents=True)
    entered: list[str] = []

    def enter(rel: str, _here: gate.Dir, entries: tuple[gate.DirEntry, ...]) -> list[str]:
        entered.append(rel)
        if rel == "":  # between the listing and the walk, another program changes the tree
            os.rmdir(tree / "b")
            os.rmdir(tree / "c")
            (tree / "c").symlink_to(canary)
        return [e.name for e in entries if e.kind == "dir"]

    with gate.open_dir(tree) as here:
        gate.walk_tree(here, enter)
    assert entered == ["", "a"] and _unchanged(canary)
