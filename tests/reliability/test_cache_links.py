"""The cache never reaches outside itself (issue 38, items 1, 2, 11 and the cache's numbers of 12).

Real symlinks, a real loopback HTTP server for the package, real ``python -m flatten`` processes:
a cache whose ``v1/packages``, ``v1/tmp``, ``v1/locks`` or ``parse`` is a symlink (committed into
a checkout that keeps its cache there, or restored from a CI cache) must neither delete nor write
through it; a ``FLATTEN_CACHE_DIR`` naming a home directory is not flatten's to clean; ``cache
clean`` while builds run never makes one succeed with a partial package.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.cli import run_flatten
from support.files import write_tree
from support.remote import CHILD
from support.servers import HTTPServer, Reply, make_tar, serving

from flatten import gate

SECRET = "CANARY-7f3a9c-do-not-leak"


def _canary(tmp_path: Path) -> Path:
    """A directory that must stay byte-identical: a package-looking entry, a thesis, a disk image."""
    key = hashlib.sha256(b"x").hexdigest()
    return write_tree(
        tmp_path / "canary",
        {
            f"{key}/meta.json": "{}",
            f"{key}/files/main.tf": f"# {SECRET}\n",
            "pkg-123/files/x": "x",
            "thesis.tex": f"precious {SECRET}\n",
            "disk.img": b"\0" * (2 << 20),
            "0123456789abcdef0123456789abcdef01234567": "looks like an entry",
        },
    )


def _snapshot(directory: Path) -> dict[str, bytes | str]:
    found: dict[str, bytes | str] = {}
    for path in sorted(directory.rglob("*")):
        rel = path.relative_to(directory).as_posix()
        found[rel] = (
            os.readlink(path) if path.is_symlink() else path.read_bytes() if path.is_file() else "dir"
        )
    return found


def _run(*args: str | Path, cache: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return run_flatten(*args, cache=cache, env=env)


def _stamped(cache: Path) -> Path:
    made = gate.open_owned_root(cache, gate.CACHE_OWNER, create=True)
    assert made is not None
    made.close()
    return cache


def _remote(tmp_path: Path, srv: HTTPServer) -> Path:
    srv.routes["/app.tgz"] = Reply(200, make_tar(CHILD))
    main = f'module "app" {{\n  source = "{srv.url}/app.tgz"\n  name   = "x"\n}}\n'
    return write_tree(tmp_path / "src", {"main.tf": main})


@pytest.mark.parametrize("link", ["v1/packages", "v1/tmp", "v1/locks", "v1", "parse", "modules"])
def test_a_symlink_in_the_cache_is_never_followed_by_builds_prunes_or_clean(
    tmp_path: Path, link: str
) -> None:
    """Item 1: a plain build (with the prune due), `flatten cache` and `cache clean` leave the
    canary as it was, and never count it."""
    canary = _canary(tmp_path)
    before = _snapshot(canary)
    cache = _stamped(tmp_path / "cache")
    (cache / link).parent.mkdir(parents=True, exist_ok=True)
    (cache / link).symlink_to(canary)
    with serving(HTTPServer()) as srv:
        root = _remote(tmp_path, srv)
        # The limit is tiny and the last prune long ago: this build prunes.
        built = _run("build", root, "--out", tmp_path / "out", cache=cache, FLATTEN_CACHE_MAX_SIZE="1K")
        assert built.returncode == 0, built.stderr
        assert (tmp_path / "out" / "main.tf.json").is_file()
        again = _run("build", root, "--out", tmp_path / "out2", cache=cache, FLATTEN_CACHE_MAX_SIZE="1K")
        assert again.returncode == 0, again.stderr
    shown = _run("cache", cache=cache)
    assert shown.returncode == 0 and "GiB in" not in shown.stdout
    cleaned = _run("cache", "clean", cache=cache)
    assert cleaned.returncode == 0, cleaned.stderr
    assert _snapshot(canary) == before
    for proc in (built, again, shown, cleaned):
        assert SECRET not in proc.stdout + proc.stderr
        assert "[Errno" not in proc.stderr and "Traceback" not in proc.stderr
    for out in ("out", "out2"):
        assert all(SECRET.encode() not in p.read_bytes() for p in (tmp_path / out).rglob("*") if p.is_file())


def test_a_cache_dir_set_to_a_home_directory_is_not_cleaned(tmp_path: Path) -> None:
    """Item 2: `code/`, `modules/`, `builds/` there are the user's, not flatten's."""
    home = write_tree(
        tmp_path / "home",
        {
            "code/project/main.py": "print(1)\n",
            "modules/0123456789abcdef0123456789abcdef01234567": "a file named like an entry\n",
            "builds/report.txt": "quarterly\n",
            "thesis.tex": "precious\n",
        },
    )
    before = _snapshot(home)
    cleaned = _run("cache", "clean", cache=home)
    assert cleaned.returncode == 1
    assert "not flatten's cache" in cleaned.stderr and "nothing was removed" in cleaned.stderr
    shown = _run("cache", cache=home)
    assert shown.returncode == 0 and "not flatten's cache" in shown.stdout
    root = write_tree(tmp_path / "src", {"main.tf": 'resource "terraform_data" "a" {}\n'})
    built = _run("build", root, "--out", tmp_path / "out", cache=home, FLATTEN_CACHE_MAX_SIZE="1K")
    assert built.returncode == 0, built.stderr
    assert _snapshot(home) == before  # not written either: every entry was a miss


def test_clean_during_builds_never_gives_a_partial_package(tmp_path: Path) -> None:
    """Item 11: `cache clean` in a loop while builds with a remote package run: every build that
    exits 0 has the whole package in its output (builds hold the cache's use lock shared; clean
    removes packages only with it exclusive)."""
    many = {f"f{i:03}.tf": f'variable "v{i}" {{\n  default = {i}\n}}\n' for i in range(150)}
    with serving(HTTPServer()) as srv:
        srv.routes["/big.tgz"] = Reply(200, make_tar({**CHILD, **many}))
        main = f'module "app" {{\n  source = "{srv.url}/big.tgz"\n  name   = "x"\n}}\n'
        root = write_tree(tmp_path / "src", {"main.tf": main})
        cache = tmp_path / "cache"
        first = _run("build", root, "--out", tmp_path / "ref", cache=cache)
        assert first.returncode == 0, first.stderr
        expected = sorted(
            p.relative_to(tmp_path / "ref").as_posix() for p in (tmp_path / "ref").rglob("*.tf*")
        )
        env = {**os.environ, "FLATTEN_CACHE_DIR": str(cache)}
        cleaner = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import sys, time\nfrom pathlib import Path\nfrom flatten.shell.cache_admin import clean\n"
                "end = time.time() + 90\n"
                "while time.time() < end:\n    clean(Path(sys.argv[1]))\n    time.sleep(0.01)\n",
                str(cache),
            ],
            env=env,
        )
        try:
            outcomes = []
            for i in range(8):
                out = tmp_path / f"out{i}"
                proc = _run("build", root, "--out", out, cache=cache)
                outcomes.append(proc.returncode)
                if proc.returncode == 0:
                    got = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.tf*"))
                    assert got == expected, proc.stderr
                    assert "Empty module directory" not in proc.stderr
                time.sleep(0.05)
        finally:
            cleaner.kill()
            cleaner.wait()
    assert outcomes.count(0) == len(outcomes)


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (("cache", "clean", "--older-than", "nan"), {}, "--older-than"),
        (("cache", "clean", "--older-than", "inf"), {}, "--older-than"),
        (("cache", "clean", "--max-size", "9" * 400), {}, "--max-size"),
    ],
)
def test_numbers_from_users_are_bounded(
    tmp_path: Path, args: tuple[str, ...], env: dict[str, str], message: str
) -> None:
    """Item 12: `--older-than nan` removed everything; 400 digits overflowed (exit 3)."""
    cache = _stamped(tmp_path / "cache")
    entry = write_tree(cache / "parse", {"0123456789abcdef0123456789abcdef01234567": "x"})
    proc = _run(*args, cache=cache, **env)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert (entry / "0123456789abcdef0123456789abcdef01234567").exists()


def test_a_huge_size_limit_in_the_environment_is_the_default_not_exit_3(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "src", {"main.tf": 'resource "terraform_data" "a" {}\n'})
    proc = _run(
        "build", root, "--out", tmp_path / "out", cache=tmp_path / "cache", FLATTEN_CACHE_MAX_SIZE="9" * 400
    )
    assert proc.returncode == 0, proc.stderr
    assert "left in place" not in proc.stderr


def test_max_size_zero_removes_what_may_be_removed(tmp_path: Path) -> None:
    """Item 12: `--max-size 0` removed nothing; now it keeps only the last hour's entries."""
    cache = _stamped(tmp_path / "cache")
    old = write_tree(cache / "parse", {"0123456789abcdef0123456789abcdef01234567": "x" * 5000})
    then = time.time() - 7200
    os.utime(old / "0123456789abcdef0123456789abcdef01234567", (then, then))
    proc = _run("cache", "clean", "--max-size", "0", cache=cache)
    assert proc.returncode == 0, proc.stderr
    assert not (old / "0123456789abcdef0123456789abcdef01234567").exists()
