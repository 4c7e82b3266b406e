"""Inputs past Python's own limits are diagnostics (exit 1), never internal errors.

docs/reliability.md, section "Limits", lists them.

Deep JSON from a registry or in ``modules.json``, version strings longer than Python converts to
int, file names that are not UTF-8 or hold control characters, package trees 1,000 directories
deep, and module chains 1,000 calls deep.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.files import write_tree
from support.servers import HTTPServer, Registry, Reply, serving
from support.sources import call, run, source_env, summaries

from flatten.lang.options import Options
from flatten.lang.versions import (
    InvalidConstraint,
    InvalidVersion,
    parse_constraints,
    parse_version,
    select_module_version,
)


@pytest.fixture(autouse=True)
def _no_deep_tree_left(tmp_path: Path) -> Iterator[None]:
    """Remove each test's directory here: pytest's clean-up of old ones recurses once per level, and
    a 1,000-deep tree left behind (a chain, or a package the code under test failed to remove)
    would crash a later session."""
    yield
    if tmp_path.exists():
        _remove_deep(tmp_path)


DEEP_JSON = b"[" * 100_000 + b"]" * 100_000  # far past the C stack json.loads nests on
DIGITS = "1" * 5000  # Python refuses int() of more than 4,300 digits


def flatten_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flatten", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "FLATTEN_PARSE_CACHE": "off", **(env or {})},
        timeout=600,
    )


def assert_diagnosed(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr.lower(), proc.stderr[-3000:]
    assert "Error: " in proc.stderr


# -- deep JSON ------------------------------------------------------------------------------------


@pytest.mark.parametrize("route", ["/v1/modules/acme/m/aws/versions", "/.well-known/terraform.json"])
def test_deeply_nested_registry_json_is_an_invalid_response(tmp_path: Path, route: str) -> None:
    with serving(Registry()) as reg:
        assert isinstance(reg, Registry)
        reg.add("acme/m/aws", {"1.0.0": {"main.tf": ""}})
        reg.routes[route] = Reply(200, DEEP_JSON)
        root = write_tree(tmp_path / "root", {"main.tf": call("m", f"{reg.host}/acme/m/aws", "1.0.0")})
        _, _, diags = run(root, source_env(tmp_path, insecure_hosts=frozenset({reg.host})))
    assert diags.has_errors
    assert any("invalid" in d.detail.lower() or "Invalid" in d.summary for d in diags), [
        (d.summary, d.detail) for d in diags
    ]


def test_deeply_nested_modules_json_is_not_reused(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "root",
        {"main.tf": call("vpc", "acme/vpc/aws", "~> 1.0"), ".terraform/modules/vpc/main.tf": ""},
    )
    (root / ".terraform/modules/modules.json").write_bytes(b'{"Modules": ' + DEEP_JSON + b"}")
    _, _, diags = run(root, source_env(tmp_path), Options(offline=True))
    assert summaries(diags) == ["Module not installed"]
    proc = flatten_cli(
        "build",
        str(root),
        "--out",
        str(tmp_path / "out"),
        "--offline",
        env={"FLATTEN_CACHE_DIR": str(tmp_path / "c")},
    )
    assert_diagnosed(proc)
    assert "Module not installed" in proc.stderr


def test_deeply_nested_previous_manifest_is_not_a_lock(tmp_path: Path) -> None:
    from flatten.sources.fetcher import read_lock

    assert read_lock(DEEP_JSON) == {}


# -- versions longer than int() takes --------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [DIGITS, f"1.{DIGITS}.0", f"-{DIGITS}", f"1.0.0-{DIGITS}", f"1.0.0-{DIGITS}.x", f"1.0.0+{DIGITS}"],
    ids=["major", "minor", "negative", "prerelease", "prerelease-dotted", "metadata"],
)
def test_versions_with_thousands_of_digits_parse_or_are_invalid(text: str) -> None:
    try:
        v = parse_version(text)
    except InvalidVersion as exc:
        assert len(str(exc)) < 400  # the digits are cut in the message
    else:
        assert v.compare(v) == 0 and v.compare(parse_version("2.0.0")) == -1
    for constraint in (text, f"= {text}", f"~> {text}", f">= 1.0, < {text}"):
        with contextlib.suppress(InvalidConstraint):
            parse_constraints(constraint).allows("1.0.0")


def test_prereleases_with_thousands_of_digits_compare_like_go() -> None:
    # go-version compares identifiers numerically only when they fit int64; beyond, they clamp.
    a, b = parse_version(f"1.0.0-{DIGITS}"), parse_version(f"1.0.0-{DIGITS}2")
    assert a.compare(b) in (-1, 1)
    assert parse_version("1.0.0-2") < a


def test_a_listed_version_with_thousands_of_digits_is_skipped_as_invalid() -> None:
    selection = select_module_version([DIGITS, f"{DIGITS}.0.0", "1.0.0"], parse_constraints(">= 1.0"))
    assert selection.chosen is not None and str(selection.chosen) == "1.0.0"
    assert len(selection.invalid) == 2
    exact = select_module_version([f"1.0.0-{DIGITS}"], parse_constraints(f"1.0.0-{DIGITS}"))
    assert exact.chosen is not None


def test_a_registry_listing_a_version_with_thousands_of_digits_builds(tmp_path: Path) -> None:
    with serving(Registry()) as reg:
        assert isinstance(reg, Registry)
        reg.add("acme/m/aws", {"1.0.0": {"main.tf": ""}})
        listing = {"modules": [{"versions": [{"version": DIGITS}, {"version": "1.0.0"}]}]}
        reg.routes["/v1/modules/acme/m/aws/versions"] = Reply(200, json.dumps(listing).encode())
        root = write_tree(tmp_path / "root", {"main.tf": call("m", f"{reg.host}/acme/m/aws")})
        graph, _, diags = run(root, source_env(tmp_path, insecure_hosts=frozenset({reg.host})))
    assert summaries(diags) == ["Invalid response from remote module registry"]
    assert graph.node("module.m").package.version == "1.0.0"  # type: ignore[union-attr]


def test_a_constraint_with_thousands_of_digits_through_the_cli(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "root",
        {
            "main.tf": call("m", "acme/m/aws", f">= {DIGITS}")
            + f'terraform {{\n  required_version = "{DIGITS}"\n}}\n'
        },
    )
    proc = flatten_cli(
        "build",
        str(root),
        "--out",
        str(tmp_path / "out"),
        "--offline",
        env={"FLATTEN_CACHE_DIR": str(tmp_path / "c")},
    )
    assert_diagnosed(proc)


# -- package file names and depth --------------------------------------------------------------------

DEEP = 1000  # directories: past Python's recursion limit for os.walk, shutil.rmtree, Path.rglob


def _build_remote(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    root = write_tree(tmp_path / "root", {"main.tf": call("pkg", source)})
    return flatten_cli(
        "build", str(root), "--out", str(tmp_path / "out"), env={"FLATTEN_CACHE_DIR": str(tmp_path / "c")}
    )


def _assert_refused_cleanly(tmp_path: Path, proc: subprocess.CompletedProcess[str], words: str) -> None:
    assert_diagnosed(proc)
    assert words in proc.stderr, proc.stderr[-2000:]
    assert len(proc.stderr) < 5000, "names are cut in messages"
    assert not (tmp_path / "out").exists()
    assert not list((tmp_path / "c").glob("v1/tmp/*")), "no temporary directory is left in the cache"
    assert not list((tmp_path / "c").glob("v1/packages/*"))


def _tar_gz(members: dict[bytes, bytes]) -> bytes:
    from support.fuzzing import TAR_END, pax_member, pax_record, tar_member

    out = b""
    for name, data in members.items():
        out += pax_member(pax_record(b"path", name)) + tar_member(b"placeholder", data)
    import gzip

    return gzip.compress(out + TAR_END)


def _zip(members: dict[bytes, bytes]) -> bytes:
    from support.fuzzing import ZipMember, zip_bytes

    return zip_bytes([ZipMember(name, data, utf8=False) for name, data in members.items()])


def _git_repo(base: Path, members: dict[bytes, bytes]) -> Path:
    from support.servers import git

    work = base / "work"
    work.mkdir(parents=True)
    git("init", "--quiet", "--initial-branch=main", cwd=work)
    for name, data in members.items():
        parent = os.fsencode(work)
        for part in name.split(b"/")[:-1]:  # os.makedirs recurses once per level
            parent = os.path.join(parent, part)
            if not os.path.isdir(parent):
                os.mkdir(parent)
        with open(os.path.join(os.fsencode(work), name), "wb") as f:
            f.write(data)
    git("add", "-A", cwd=work)
    git("commit", "--quiet", "-m", "c", cwd=work)
    git("clone", "--quiet", "--bare", str(work), str(base / "pkg.git"), cwd=base)
    _remove_deep(work)
    return base / "pkg.git"


def _remove_deep(top: Path) -> None:
    """shutil.rmtree (and pytest's clean-up) recurse once per level: remove a deep tree here."""
    for current, _dirs, files in _walk_iteratively(top):
        for name in files:
            os.unlink(os.path.join(current, name))
        os.rmdir(current)


def _walk_iteratively(top: Path) -> list[tuple[bytes, list[bytes], list[bytes]]]:
    """Every directory under ``top``, children before parents, without recursion."""
    order: list[tuple[bytes, list[bytes], list[bytes]]] = []
    stack = [os.fsencode(top)]
    while stack:
        current = stack.pop()
        dirs, files = [], []
        for entry in os.scandir(current):
            (dirs if entry.is_dir(follow_symlinks=False) else files).append(entry.name)
        order.append((current, dirs, files))
        stack.extend(os.path.join(current, d) for d in dirs)
    return order[::-1]


PACKAGES = {
    "deep": ({b"main.tf": b"", b"d/" * DEEP + b"f.txt": b"x"}, "directories deep"),
    "not-utf8": ({b"main.tf": b"", b"caf\xe9.txt": b"x"}, "not valid UTF-8"),
    "newline": ({b"main.tf": b"", b"new\nline.txt": b"x"}, "control character"),
}


@pytest.mark.parametrize("fmt", ["tar.gz", "zip", "git"])
@pytest.mark.parametrize("case", sorted(PACKAGES))
def test_packages_with_names_or_depth_flatten_cannot_write_are_refused(
    tmp_path: Path, fmt: str, case: str
) -> None:
    members, words = PACKAGES[case]
    if fmt == "git":
        from support.servers import GIT, git_daemon

        if GIT is None:
            pytest.skip("git is not installed")
        _git_repo(tmp_path / "repos", members)
        with git_daemon(tmp_path / "repos") as url:
            proc = _build_remote(tmp_path, f"git::{url}/pkg.git")
    else:
        with serving(HTTPServer()) as srv:
            srv.routes[f"/pkg.{fmt}"] = Reply(200, _tar_gz(members) if fmt == "tar.gz" else _zip(members))
            proc = _build_remote(tmp_path, f"{srv.url}/pkg.{fmt}")
    _assert_refused_cleanly(tmp_path, proc, words)


# -- module chains ------------------------------------------------------------------------------------


def test_a_1000_deep_module_chain_is_a_diagnostic_at_the_call_past_the_limit(tmp_path: Path) -> None:
    from flatten.stages.graph import MAX_MODULE_DEPTH

    link = 'module "c" {\n  source = "./c"\n}\n'
    files = {"/".join(["c"] * i + ["main.tf"]): link for i in range(1000)}
    root = write_tree(tmp_path / "root", files)
    proc = flatten_cli(
        "build", str(root), "--out", str(tmp_path / "out"), env={"FLATTEN_CACHE_DIR": str(tmp_path / "c")}
    )
    assert_diagnosed(proc)
    assert "Error: Module tree too deep" in proc.stderr
    where = "/".join(["c"] * MAX_MODULE_DEPTH + ["main.tf"])
    assert f"on {where} line 2" in proc.stderr, proc.stderr[-1500:]
    assert proc.stderr.count("Error: ") == 1
    assert not (tmp_path / "out").exists()
