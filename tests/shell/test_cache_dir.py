"""The version tag of the code behind cache entries (flatten/shell/cache_dir.py).

Every cache entry and build record is keyed by a digest of flatten's source: an edited checkout
or a reinstalled flatten must never read an entry the old code wrote. The digest is remembered
by the files' stats, so an unchanged flatten does not hash its source on every build.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flatten.shell import cache_dir
from flatten.shell.cache_dir import cache_root, files_digest


def _files(tmp_path: Path) -> list[tuple[str, Path]]:
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    out = []
    for name, text in (("a.py", "A = 1\n"), ("sub/b.py", "B = 2\n")):
        path = src / name
        path.parent.mkdir(exist_ok=True)
        if not path.exists():
            path.write_text(text)
        out.append((name, path))
    return out


def test_an_unchanged_source_is_not_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = _files(tmp_path)
    first = files_digest(files, cache_root() / "memo-test")

    def boom(self: Path) -> bytes:
        raise AssertionError(f"read {self}")

    monkeypatch.setattr(Path, "read_bytes", boom)
    assert files_digest(files, cache_root() / "memo-test") == first


def test_an_edit_that_keeps_size_and_mtime_changes_the_digest(tmp_path: Path) -> None:
    files = _files(tmp_path)
    first = files_digest(files, cache_root() / "memo-test")
    path = files[0][1]
    st = path.stat()
    path.write_text("A = 2\n")  # the same size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the same modification time
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns
    edited = files_digest(files, cache_root() / "memo-test")
    assert edited != first
    assert edited == files_digest(files, cache_root() / "fresh memo")  # what hashing the bytes gives


def test_a_damaged_memo_is_a_miss(tmp_path: Path) -> None:
    files = _files(tmp_path)
    memo = cache_root() / "memo-test"
    first = files_digest(files, memo)
    for kept in memo.iterdir():
        kept.write_text("not a digest")
    assert files_digest(files, memo) == first
    assert files_digest(files, cache_root() / "no such" / "memo") == first


def test_a_forged_memo_is_a_miss(tmp_path: Path) -> None:
    """A memo naming another digest (that of an older flatten, whose own entries would then be
    served to this one) is not trusted without the machine key's tag."""
    files = _files(tmp_path)
    memo = cache_root() / "memo-test"
    first = files_digest(files, memo)
    (kept,) = memo.iterdir()
    kept.write_bytes(bytes(32) + b"0" * 32)  # the size of a tagged digest, a tag it does not verify
    assert files_digest(files, memo) == first
    kept.write_text("0" * 32)  # an untagged digest
    assert files_digest(files, memo) == first


def test_the_code_digest_covers_every_source_file_of_the_package() -> None:
    names = [name for name, _ in cache_dir._code_files()]
    package = Path(cache_dir.__file__).parent.parent
    want = sorted(
        p.relative_to(package).as_posix() for p in package.rglob("*.py") if "__pycache__" not in p.parts
    )
    assert [n for n in names if not n.startswith("<")] == want
    assert "<hcl2>/hcl2.lark" in names


def test_the_memo_keeps_only_the_latest_versions(tmp_path: Path) -> None:
    files = _files(tmp_path)
    memo = cache_root() / "memo-test"
    for n in range(cache_dir._KEEP_DIGESTS + 5):  # every edit of a checkout is a new version
        files[0][1].write_text(f"A = {n}\n")
        latest = files_digest(files, memo)
    assert len(list(memo.iterdir())) == cache_dir._KEEP_DIGESTS
    assert files_digest(files, cache_root() / "fresh memo") == latest


def test_areas_opened_from_several_threads_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # The module cache's writer and prefetch's reader are threads that open the cache's areas
    # while the build opens others: without the lock one thread's insert during another's scan of
    # the open areas raised "dictionary changed size during iteration" (a cold build exited 3).
    import sys
    import threading

    monkeypatch.setattr(cache_dir, "_AREAS", {})
    root = cache_root()
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def open_areas(n: int) -> None:
        start.wait()
        try:
            for i in range(150):
                assert cache_dir.area(root / "v1" / f"t{n}" / f"a{i}") is not None
        except BaseException as exc:  # a failure in a thread is reported by the test
            errors.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: the race is then likely
    try:
        threads = [threading.Thread(target=open_areas, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
        for opened in cache_dir._AREAS.values():
            if opened is not None:
                opened.close()
    assert not errors, errors[0]
    assert len(cache_dir._AREAS) == 8 * 150
