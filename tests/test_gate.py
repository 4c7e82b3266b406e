"""flatten/gate.py, the one door to the file system (issue 38): real symlinks, FIFOs and devices."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from flatten import gate
from flatten.lang.oserror import Refused, describe_os_error


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def test_a_regular_file_is_read(tmp_path: Path) -> None:
    (tmp_path / "a.tf").write_bytes(b"x" * 3_000_000)
    assert gate.read_bytes(tmp_path / "a.tf") == b"x" * 3_000_000
    assert gate.read_text(tmp_path / "a.tf", limit=3_000_000).startswith("xxx")


def test_a_file_is_held_once_while_it_is_read(tmp_path: Path) -> None:
    # Issue 38, item 13: read in 1 MiB chunks and joined, a file was held twice at the end of its
    # read (an 18 MB module-cache entry took 33 MiB), which set a large build's peak.
    import tracemalloc

    (tmp_path / "big").write_bytes(b"x" * 8_000_000)
    tracemalloc.start()
    try:
        data = gate.read_bytes(tmp_path / "big", limit=10_000_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert data == b"x" * 8_000_000
    assert peak < 1.2 * len(data)


def test_a_file_that_grows_while_it_is_read_is_read_to_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "growing"
    path.write_bytes(b"a" * 1000)
    real = os.read
    grown: list[int] = []

    def read(fd: int, n: int) -> bytes:
        data = real(fd, n)
        if not grown:  # appended to after the size was taken and the first read
            grown.append(1)
            with path.open("ab") as f:
                f.write(b"b" * 3_000_000)
        return data

    monkeypatch.setattr(os, "read", read)
    assert gate.read_bytes(path, limit=4_000_000) == b"a" * 1000 + b"b" * 3_000_000
    with pytest.raises(Refused):
        path.write_bytes(b"a" * 1000)
        grown.clear()
        gate.read_bytes(path, limit=2_000_000)


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = _fifo(tmp_path / "vars.tfvars")
    done: list[BaseException] = []

    def read() -> None:
        try:
            gate.read_bytes(fifo)
        except BaseException as exc:
            done.append(exc)

    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    worker.join(5)
    assert not worker.is_alive(), "reading a FIFO blocked"
    assert isinstance(done[0], Refused) and done[0].reason == "special"
    text = describe_os_error(done[0], doing="read the variables file", path=str(fifo))
    assert "FIFO" in text and "[Errno" not in text


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null", "/dev/urandom"])
def test_devices_and_links_to_them_are_refused(tmp_path: Path, device: str) -> None:
    if not os.path.exists(device):
        pytest.skip(f"no {device} here")
    link = tmp_path / "zero.tf"
    link.symlink_to(device)
    for path in (Path(device), link):
        with pytest.raises(Refused) as caught:
            gate.read_bytes(path)
        assert caught.value.reason == "special"
    with pytest.raises(Refused) as caught:
        gate.read_bytes(link, inside=[tmp_path])
    assert caught.value.reason == "outside"


def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(Refused) as caught:
        gate.read_bytes(tmp_path)
    assert caught.value.reason == "special"


def test_the_size_budget(tmp_path: Path) -> None:
    (tmp_path / "big").write_bytes(b"a" * 1001)
    with pytest.raises(Refused) as caught:
        gate.read_bytes(tmp_path / "big", limit=1000)
    assert caught.value.reason == "too-large"
    assert gate.read_bytes(tmp_path / "big", limit=1001) == b"a" * 1001
    with gate.open_read(tmp_path / "big", limit=1001) as f:
        assert f.read() == b"a" * 1001


def test_a_file_digest_reads_under_the_same_rules(tmp_path: Path) -> None:
    # gate.file_digest (an output snapshot's digests): the bytes of a regular file, in chunks
    # past one, refused like read_bytes: too large, a FIFO (without blocking), a link not followed.
    import hashlib

    def blake() -> hashlib.blake2b:
        return hashlib.blake2b(digest_size=16)

    for size in (0, 1001, (1 << 20) + 5, 3 << 20):
        (tmp_path / "f").write_bytes(bytes(range(256)) * (size // 256) + b"x" * (size % 256))
        want = hashlib.blake2b((tmp_path / "f").read_bytes(), digest_size=16).hexdigest()
        assert gate.file_digest(tmp_path / "f", blake, limit=size).hexdigest() == want
        if size:
            with pytest.raises(Refused) as caught:
                gate.file_digest(tmp_path / "f", blake, limit=size - 1)
            assert caught.value.reason == "too-large"
    fifo = _fifo(tmp_path / "fifo")
    with pytest.raises(Refused) as caught:
        gate.file_digest(fifo, blake, limit=1 << 40)
    assert caught.value.reason == "special"
    (tmp_path / "link").symlink_to(tmp_path / "f")
    with pytest.raises(Refused) as caught:
        gate.file_digest(tmp_path / "link", blake, limit=1 << 40, follow=False)
    assert caught.value.reason == "symlink"
    with pytest.raises(Refused) as caught:
        gate.file_digest(tmp_path / "f", blake, limit=1 << 40, deadline=time.monotonic() - 1)
    assert caught.value.reason == "deadline"


def test_the_deadline(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"a")
    with pytest.raises(Refused) as caught:
        gate.read_bytes(tmp_path / "a", deadline=time.monotonic() - 1)
    assert caught.value.reason == "deadline"


def test_symlinks_inside_and_outside(tmp_path: Path) -> None:
    root, home = tmp_path / "root", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    (home / "credentials.tfrc.json").write_text('{"token": "CANARY"}')
    (root / "real.tfvars").write_text("a = 1")
    (root / "inside.tfvars").symlink_to("real.tfvars")
    (root / "terraform.tfvars.json").symlink_to(home / "credentials.tfrc.json")
    assert gate.read_bytes(root / "inside.tfvars", inside=[root]) == b"a = 1"
    with pytest.raises(Refused) as caught:
        gate.read_bytes(root / "terraform.tfvars.json", inside=[root])
    assert caught.value.reason == "outside" and "CANARY" not in str(caught.value)
    with pytest.raises(Refused) as caught:
        gate.read_bytes(root / "inside.tfvars", follow=False)
    assert caught.value.reason == "symlink"


def test_a_file_of_its_own_directory_is_read_through_a_linked_directory_but_a_link_in_it_is_checked(
    tmp_path: Path,
) -> None:
    # read_config's rule (inside the root or the file's own directory): a file that is no link
    # lies in its own directory wherever that resolves (a module directory linked to ../shared, as
    # Terraform reads it); a link there is resolved and checked; a FIFO there is refused unread.
    root, shared, home = tmp_path / "root", tmp_path / "shared", tmp_path / "home"
    for d in (root, shared / "m", home):
        d.mkdir(parents=True)
    (root / "m").symlink_to(shared / "m", target_is_directory=True)
    (shared / "m" / "main.tf").write_text("locals {}\n")
    (shared / "m" / "sibling.tf").symlink_to("main.tf")
    (home / "secret").write_text("CANARY")
    (shared / "m" / "leak.tf").symlink_to(home / "secret")
    os.mkfifo(shared / "m" / "fifo.tf")
    module = root / "m"
    assert gate.read_bytes(module / "main.tf", inside=(root, module)) == b"locals {}\n"
    assert gate.read_bytes(module / "sibling.tf", inside=(root, module)) == b"locals {}\n"
    for name, reason in (("leak.tf", "outside"), ("fifo.tf", "special")):
        with pytest.raises(Refused) as caught:
            gate.read_bytes(module / name, inside=(root, module))
        assert caught.value.reason == reason, name
    with pytest.raises(FileNotFoundError) as missing:
        gate.read_bytes(module / "gone.tf", inside=(root, module))
    assert missing.value.filename == str(module / "gone.tf")


def test_list_dir_never_follows(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "a").write_text("")
    (tmp_path / "c").symlink_to("b")
    _fifo(tmp_path / "d")
    assert [(e.name, e.kind) for e in gate.list_dir(tmp_path)] == [
        ("a", "file"),
        ("b", "dir"),
        ("c", "link"),
        ("d", "other"),
    ]


def test_writes_and_removes_never_pass_through_a_symlink(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    canary.mkdir()
    (canary / "thesis.tex").write_text("precious")
    base = tmp_path / "cache"
    base.mkdir()
    (base / "v1").mkdir()
    (base / "v1" / "packages").symlink_to(canary)
    with pytest.raises(Refused) as caught:
        gate.open_dir(base, "v1/packages/abc", create=True)
    assert caught.value.reason == "symlink"
    with gate.open_dir(base, "v1") as v1:
        v1.write("packages", b"replaced")  # replaces the link itself
        assert (base / "v1" / "packages").read_bytes() == b"replaced"
        (base / "v1" / "packages").unlink()
        (base / "v1" / "packages").symlink_to(canary)
        assert v1.remove("packages") is True  # the link, never its target
    assert (canary / "thesis.tex").read_text() == "precious"


def test_remove_owned_needs_the_mark_and_never_follows_inside(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    canary.mkdir()
    (canary / "keep").write_text("keep")
    base = tmp_path / "base"
    (base / "entry" / "sub").mkdir(parents=True)
    (base / "entry" / "sub" / "link").symlink_to(canary)
    (base / "entry" / "meta.json").write_text("{}")
    (base / "other").mkdir()
    with gate.open_dir(base) as d:
        with pytest.raises(Refused) as caught:
            d.remove("other", owned=lambda sub: sub.kind("meta.json") == "file")
        assert caught.value.reason == "not-owned"
        assert d.remove("entry", owned=lambda sub: sub.kind("meta.json") == "file")
    assert not (base / "entry").exists() and (base / "other").is_dir()
    assert (canary / "keep").read_text() == "keep"


def test_owned_root_is_stamped_only_when_flatten_makes_it(tmp_path: Path) -> None:
    fresh = gate.open_owned_root(tmp_path / "new", "flatten cache", create=True)
    assert fresh is not None
    fresh.close()
    assert (
        (tmp_path / "new" / "CACHEDIR.TAG")
        .read_text()
        .startswith("Signature: 8a477f597d28d172789f06886806bc55")
    )
    again = gate.open_owned_root(tmp_path / "new", "flatten cache", create=False)
    assert again is not None
    again.close()
    home = tmp_path / "home"
    (home / "code").mkdir(parents=True)
    (home / "thesis.tex").write_text("x")
    assert gate.open_owned_root(home, "flatten cache", create=True, adopt=frozenset({"code"})) is None
    assert not (home / "CACHEDIR.TAG").exists()
    old = tmp_path / "old"
    (old / "code").mkdir(parents=True)
    adopted = gate.open_owned_root(old, "flatten cache", create=True, adopt=frozenset({"code"}))
    assert adopted is not None
    adopted.close()


def test_owned_root_made_by_a_concurrent_build_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two builds (or two sibling prefetches) make a new cache at once: the one that finds no stamp
    and then, listing, finds the other's stamp and first entry uses the cache instead of refusing
    it as "holds files flatten did not make" (a CI failure of test_parallel_prefetch_resolves_siblings)."""
    base = tmp_path / "cache"
    listed = gate.Dir.list
    raced: list[bool] = []

    def other_build_stamps_first(self: gate.Dir) -> object:
        if not raced:
            raced.append(True)
            made = gate.open_owned_root(base, "flatten cache", create=True)  # the other build
            assert made is not None
            made.close()
            (base / "v1").mkdir()
        return listed(self)

    monkeypatch.setattr(gate.Dir, "list", other_build_stamps_first)
    ours = gate.open_owned_root(base, "flatten cache", create=True)
    assert ours is not None
    ours.close()
    assert sorted(p.name for p in base.iterdir()) == ["CACHEDIR.TAG", "v1"]
    # A directory stamped for another owner between the two looks stays refused.
    other = tmp_path / "other"
    other.mkdir()
    (other / "CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55\n# someone else\n")
    monkeypatch.setattr(gate.Dir, "list", listed)
    assert gate.open_owned_root(other, "flatten cache", create=True) is None


def test_refusals_cross_processes(tmp_path: Path) -> None:
    import pickle

    exc = Refused(1, "special", "p", "what", "todo")
    back = pickle.loads(pickle.dumps(exc))
    assert (back.reason, back.filename, back.what, back.todo) == ("special", "p", "what", "todo")
