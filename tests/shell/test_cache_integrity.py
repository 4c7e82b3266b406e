"""Cache entries are authenticated and downloaded packages re-verified (issue 19, item 4).

Parse, module and emit cache entries and build records carry an HMAC-SHA256 tag made with a key
kept outside the cache (flatten.shell.cache_auth); an entry that fails is a miss, never unpickled. A
downloaded package is used from the cache only when its record's tag verifies and its files
still have the recorded digest. Builds run as ``python -m flatten`` in subprocesses, with the
cache directory and key location of the test (tests/conftest.py).
"""

from __future__ import annotations

import json
import os
import pickle
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.files import write_tree
from support.remote import CHILD
from support.servers import HTTPServer, Reply, make_tar, serving

from flatten.shell import build_cache, cache_auth, parse_cache
from flatten.sources import cache as package_cache

OLD = 1_000_000_000  # an mtime (2001) safely older than any build: build records are written


class _RunsCommand:
    """Unpickling it runs ``touch marker``: what a crafted cache entry could do."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return os.system, (f"touch {shlex.quote(str(self.marker))}",)


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        "FLATTEN_CACHE_DIR": str(tmp_path / "cache"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "FLATTEN_PARSE_CACHE": "on",
        **extra,
    }
    env.pop("FLATTEN_TRACEBACK", None)
    return env


def _build(root: Path, out: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flatten", "build", str(root), "--out", str(out), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def _tree(root: Path) -> Path:
    files = {"main.tf": "".join(f'module "m{i}" {{\n  source = "./modules/m{i}"\n}}\n' for i in range(4))}
    for i in range(4):
        files[f"modules/m{i}/main.tf"] = (
            f'variable "v" {{\n  default = {i}\n}}\n'
            f'resource "null_resource" "r" {{\n  triggers = {{ v = "${{var.v}}-{i}" }}\n}}\n'
        )
    write_tree(root, files)
    for current, _, names in os.walk(root):
        for name in names:
            os.utime(os.path.join(current, name), ns=(OLD, OLD))
        os.utime(current, ns=(OLD, OLD))
    return root


def _files(top: Path) -> dict[str, bytes]:
    return {p.relative_to(top).as_posix(): p.read_bytes() for p in sorted(top.rglob("*")) if p.is_file()}


def _clean_output(root: Path, tmp_path: Path) -> dict[str, bytes]:
    """The output of a build without any cache."""
    out = tmp_path / "clean-out"
    proc = _build(root, out, _env(tmp_path / "clean", FLATTEN_PARSE_CACHE="off"))
    assert proc.returncode == 0, proc.stderr
    return _files(out)


def _craft(path: Path, evil: bytes, *, sized: bool) -> None:
    """Put ``evil`` where the entry's first pickle starts (and its size in a size prefix)."""
    data = path.read_bytes()
    found = re.compile(rb"\x80[\x04\x05]\x95").search(data, data.index(b"\n") + 1 if data[:1] == b"f" else 0)
    assert found is not None, path
    at = found.start()
    # The header pickle of a parse or module entry is preceded by its size.
    head = data[: at - 4] + len(evil).to_bytes(4, "big") if sized else data[:at]
    path.write_bytes(head + evil)


# Where each kind of entry lives, and the environment under which builds write and read it.
LOCATIONS = {
    "builds": {},  # whole-build records: the second identical build reads the record
    "modules": {},  # module cache entries: read by prefetch and the build
    "parse": {"FLATTEN_MODULE_CACHE": "off"},  # per-file parse entries
}


@pytest.mark.parametrize("location", sorted(LOCATIONS))
def test_a_crafted_pickle_entry_is_never_run(tmp_path: Path, location: str) -> None:
    root = _tree(tmp_path / "src")
    env = _env(tmp_path, **LOCATIONS[location])
    out = tmp_path / "out"
    first = _build(root, out, env)
    assert first.returncode == 0, first.stderr
    entries = [p for p in (tmp_path / "cache" / location).rglob("*") if p.is_file()]
    assert entries, f"no {location} entries written"
    if location != "builds":  # else the record would be replayed before any entry is read
        shutil.rmtree(tmp_path / "cache" / "builds", ignore_errors=True)
    marker = tmp_path / "marker"
    evil = pickle.dumps(_RunsCommand(marker), protocol=5)
    for entry in entries:
        _craft(entry, evil, sized=location != "builds")
    again = _build(root, out, env)
    assert again.returncode == 0, again.stderr
    assert not marker.exists(), f"a crafted {location} entry ran a command"
    assert _files(out) == _clean_output(root, tmp_path)


def test_tampered_output_bytes_in_the_emit_cache_are_not_used(tmp_path: Path) -> None:
    root = _tree(tmp_path / "src")
    env = _env(tmp_path)
    out = tmp_path / "out"
    assert _build(root, out, env).returncode == 0
    emitted = [p for p in (tmp_path / "cache" / "emit").rglob("*") if p.is_file()]
    assert emitted
    for path in emitted:  # same length: only the content changes
        path.write_bytes(path.read_bytes().replace(b'"null_resource"', b'"evil_resource"'))
    shutil.rmtree(tmp_path / "cache" / "builds")  # build again, from the module and emit caches
    again = _build(root, out, env)
    assert again.returncode == 0, again.stderr
    assert b"evil_resource" not in b"".join(_files(out).values())
    assert _files(out) == _clean_output(root, tmp_path)


def test_a_cache_restored_from_another_machine_is_all_misses(tmp_path: Path) -> None:
    root = _tree(tmp_path / "src")
    env = _env(tmp_path)
    out = tmp_path / "out"
    assert _build(root, out, env).returncode == 0
    cache = tmp_path / "cache"
    before = {p: p.read_bytes() for p in cache.rglob("*") if p.is_file() and "modules" in p.parts}
    # This machine's key file goes: the next build makes its own key, as another machine would.
    (tmp_path / "state" / "flatten" / "cache-key").unlink()
    again = _build(root, out, env)
    assert again.returncode == 0, again.stderr
    assert _files(out) == _clean_output(root, tmp_path)
    # Every module entry was a miss, so it was computed and written again under the new key.
    assert all(p.read_bytes() != data for p, data in before.items())
    assert all(p.read_bytes()[len(b"flatten-module-5\n") :][:32] != bytes(32) for p in before)


# -- the key ---------------------------------------------------------------------------------------


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setattr(cache_auth, "_KEYS", {})
    return tmp_path / "state" / "flatten" / "cache-key"


def test_the_key_file_is_private_and_kept(state: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = cache_auth.key()
    assert key is not None and len(key) == 32
    assert state.read_bytes() == key
    assert state.stat().st_mode & 0o777 == 0o600
    assert state.parent.stat().st_mode & 0o077 == 0
    monkeypatch.setattr(cache_auth, "_KEYS", {})  # a new process reads the same key
    assert cache_auth.key() == key
    assert not [p for p in state.parent.iterdir() if p.name != "cache-key"]  # no temporary file left


def _tagged_with_key_then(state: Path, monkeypatch: pytest.MonkeyPatch, change: object) -> tuple[bytes, bool]:
    """Tag an entry, make ``change`` to the key file, and return the key then and whether the
    entry still verifies."""
    sealed = cache_auth.seal("parse", "k", b"payload")
    assert cache_auth.verify("parse", "k", sealed)
    assert callable(change)
    change()
    monkeypatch.setattr(cache_auth, "_KEYS", {})  # the next build
    key = cache_auth.key()
    assert key is not None
    return key, cache_auth.verify("parse", "k", sealed)


def test_a_key_file_others_can_read_is_replaced(state: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = cache_auth.key()
    key, still = _tagged_with_key_then(state, monkeypatch, lambda: state.chmod(0o644))
    assert key != first and not still
    assert state.stat().st_mode & 0o777 == 0o600 and state.read_bytes() == key


def test_a_key_file_of_another_user_is_replaced(state: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root can give a file to another user")
    cache_auth.key()
    key, still = _tagged_with_key_then(state, monkeypatch, lambda: os.chown(state, 65534, 65534))
    assert not still and state.stat().st_uid == 0 and state.read_bytes() == key


def test_a_symlinked_key_file_is_not_followed(
    state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    planted = tmp_path / "planted"
    planted.write_bytes(b"k" * 32)
    planted.chmod(0o600)

    def plant() -> None:
        state.unlink()
        state.symlink_to(planted)

    cache_auth.key()
    key, still = _tagged_with_key_then(state, monkeypatch, plant)
    assert key != b"k" * 32 and not still
    assert not state.is_symlink() and planted.read_bytes() == b"k" * 32


def test_no_key_means_no_cache_and_builds_still_work(state: Path, tmp_path: Path) -> None:
    state.parent.parent.mkdir(parents=True)
    state.parent.write_text("not a directory")  # no key can be made
    assert cache_auth.key() is None
    assert not cache_auth.verify("parse", "k", cache_auth.seal("parse", "k", b"x"))
    assert parse_cache.default_cache() is None and not build_cache.enabled()
    root = _tree(tmp_path / "src")
    proc = _build(root, tmp_path / "out", _env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert _files(tmp_path / "out") == _clean_output(root, tmp_path)
    assert not list((tmp_path / "cache").rglob("*"))  # nothing written that nothing could trust


def test_a_state_directory_of_another_user_gives_no_key(state: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root can give a directory to another user")
    state.parent.mkdir(parents=True)
    os.chown(state.parent, 65534, 65534)
    assert cache_auth.key() is None


def test_an_own_state_directory_others_can_enter_is_made_private(state: Path) -> None:
    state.parent.mkdir(parents=True)
    state.parent.chmod(0o777)
    assert cache_auth.key() is not None
    assert state.parent.stat().st_mode & 0o777 == 0o700


def test_a_shared_secret_key_lets_trusted_jobs_share_a_cache(tmp_path: Path) -> None:
    root = _tree(tmp_path / "src")
    shared = {"FLATTEN_CACHE_KEY": "a secret only trusted jobs have"}
    out = tmp_path / "out"
    assert _build(root, out, _env(tmp_path, **shared)).returncode == 0
    entries = {p: p.read_bytes() for p in (tmp_path / "cache" / "modules").rglob("*") if p.is_file()}
    # Another machine (its own state directory) with the same secret: the entries are hits, kept.
    other = _env(tmp_path, XDG_STATE_HOME=str(tmp_path / "elsewhere"), **shared)
    shutil.rmtree(tmp_path / "cache" / "builds")
    assert _build(root, out, other).returncode == 0
    assert entries and all(p.read_bytes() == data for p, data in entries.items())
    assert not (tmp_path / "elsewhere").exists()  # the secret is the key: no key file made


# -- downloaded packages ---------------------------------------------------------------------------


def _remote(tmp_path: Path, srv: HTTPServer) -> Path:
    srv.routes["/app.tgz"] = Reply(200, make_tar(CHILD))
    main = f'module "app" {{\n  source = "{srv.url}/app.tgz"\n  name   = "x"\n}}\n'
    return write_tree(tmp_path / "src", {"main.tf": main})


def _package(tmp_path: Path) -> Path:
    (entry,) = (tmp_path / "cache" / "v1" / "packages").iterdir()
    return entry


def _tamper(files: Path, how: str, tmp_path: Path) -> None:
    main = files / "main.tf"
    if how == "tampered":
        main.write_text(main.read_text() + 'output "evil" {\n  value = "evil"\n}\n')
    elif how == "emptied":
        main.unlink()
    elif how == "symlinked file":
        elsewhere = tmp_path / "elsewhere.tf"
        elsewhere.write_text('output "evil" {\n  value = "evil"\n}\n')
        main.unlink()
        main.symlink_to(elsewhere)
    else:  # the files directory itself replaced by a symlink to a copy with the same content
        copy = tmp_path / "copy"
        shutil.copytree(files, copy)
        shutil.rmtree(files)
        files.symlink_to(copy)


@pytest.mark.parametrize("how", ["tampered", "emptied", "symlinked file", "symlinked directory"])
def test_damaged_package_content_is_downloaded_again_never_vendored(tmp_path: Path, how: str) -> None:
    with serving(HTTPServer()) as srv:
        root = _remote(tmp_path, srv)
        out = tmp_path / "out"
        env = _env(tmp_path)
        assert _build(root, out, env).returncode == 0
        good = _files(out)
        _tamper(_package(tmp_path) / "files", how, tmp_path)
        shutil.rmtree(out)
        again = _build(root, out, env)
        assert again.returncode == 0, again.stderr
        assert srv.paths() == ["/app.tgz", "/app.tgz"]  # the damaged entry was a miss
    assert _files(out) == good
    assert b"evil" not in b"".join(good.values())
    assert not (_package(tmp_path) / "files").is_symlink()
    # The entry was made again: the next build uses it without downloading.
    assert _build(root, tmp_path / "out2", env).returncode == 0


def test_locked_refuses_damaged_content_it_cannot_download_again(tmp_path: Path) -> None:
    with serving(HTTPServer()) as srv:
        root = _remote(tmp_path, srv)
        out = tmp_path / "out"
        assert _build(root, out, _env(tmp_path)).returncode == 0
    before = _files(out)
    _tamper(_package(tmp_path) / "files", "tampered", tmp_path)
    proc = _build(root, out, _env(tmp_path), "--locked")  # the server is gone
    assert proc.returncode == 1
    assert 'Could not download module "app"' in proc.stderr
    assert "Traceback" not in proc.stderr
    assert _files(out) == before  # nothing vendored


def test_locked_refuses_a_forged_entry_even_with_a_shared_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With a key others have too (FLATTEN_CACHE_KEY), an entry can be forged whole: content,
    # digest and tag. --locked still compares the digest with the one the manifest recorded.
    shared = _env(tmp_path, FLATTEN_CACHE_KEY="shared by every job")
    with serving(HTTPServer()) as srv:
        root = _remote(tmp_path, srv)
        out = tmp_path / "out"
        assert _build(root, out, shared).returncode == 0
    before = _files(out)
    entry = _package(tmp_path)
    _tamper(entry / "files", "tampered", tmp_path)
    meta = json.loads((entry / "meta.json").read_text())
    meta["digest"] = package_cache.tree_digest(entry / "files")
    monkeypatch.setenv("FLATTEN_CACHE_KEY", "shared by every job")  # the forger has the key
    meta["mac"] = package_cache._meta_mac(cache_auth, entry.name, meta)
    (entry / "meta.json").write_text(json.dumps(meta, sort_keys=True) + "\n")
    proc = _build(root, out, shared, "--locked")
    assert proc.returncode == 1
    assert "Error: Module resolution differs from the lock" in proc.stderr
    assert _files(out) == before
