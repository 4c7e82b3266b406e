"""Your files and the output directory (docs/reliability.md): what flatten refuses to write over,
what a remote package may reach, and how files are copied.

Each test proves one promise of issue 19's items 1, 2, 3, 12 and 13 and fails without its fix.
"""

from __future__ import annotations

import builtins
import errno
import io
import json
import os
import stat
import subprocess
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.cli import run_flatten
from support.files import at_fd
from support.files import write_tree as write_files
from support.servers import HTTPServer, Registry, Reply, git, make_tar, needs_git, serving
from typer.testing import CliRunner

from flatten import cli
from flatten.build import build
from flatten.lang.options import Options
from flatten.shell import cache_auth, parse_cache
from flatten.sources.env import SourceEnv
from flatten.sources.fetcher import RemoteFetcher
from flatten.stages import output
from flatten.stages.emit import MANIFEST_NAME, write_tree
from flatten.stages.graph import build_graph


def flatten_cli(
    *args: str | Path, tmp: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m flatten`` with its own cache under ``tmp`` (``env`` adds or overrides)."""
    return run_flatten(*args, cache=tmp / "cache", env=env)


# -- --out on a mount point (item 12) -----------------------------------------------------------------


def _old_output(out: Path) -> None:
    write_tree(out, {"main.tf.json": b"old\n", "gone/x.json": b"old\n", MANIFEST_NAME: b"{}\n"})


def _unrenamable(monkeypatch: pytest.MonkeyPatch, out: Path) -> list[tuple[str, str]]:
    """Make ``out`` behave like a mount point for renames: renaming it from or to anywhere is EBUSY.

    (Tests cannot mount a filesystem; the kernel's answer is simulated in process, for
    ``os.rename`` and for the atomic exchange alike.) Returns the log of renames that went through.
    """
    real_rename = os.rename
    done: list[tuple[str, str]] = []

    def rename(src: str, dst: str, *, src_dir_fd: int | None = None, dst_dir_fd: int | None = None) -> None:
        whole_src, whole_dst = at_fd(src, src_dir_fd), at_fd(dst, dst_dir_fd)
        if os.fspath(out) in (whole_src, whole_dst):
            raise OSError(errno.EBUSY, "Device or resource busy", whole_src)
        real_rename(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)
        done.append((whole_src, whole_dst))

    monkeypatch.setattr(os, "rename", rename)
    real_exchange = output._exchange
    monkeypatch.setattr(
        output, "_exchange", lambda base, a, b: False if b == out.name else real_exchange(base, a, b)
    )
    return done


def _listing(top: Path) -> dict[str, bytes]:
    return {p.relative_to(top).as_posix(): p.read_bytes() for p in sorted(top.rglob("*")) if p.is_file()}


def test_an_out_that_cannot_be_renamed_gets_its_contents_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "volume"
    _old_output(out)
    inode = out.stat().st_ino
    _unrenamable(monkeypatch, out)
    new = {"main.tf.json": b"new\n", "modules/a/main.tf.json": b"a\n", MANIFEST_NAME: b'{"v": 2}\n'}
    write_tree(out, new)
    assert _listing(out) == new
    assert out.stat().st_ino == inode  # the directory itself stayed where it was
    assert sorted(p.name for p in tmp_path.iterdir()) == ["volume"]  # no temporary directory left


def test_a_mount_point_out_is_written_in_place_without_renaming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "volume"
    _old_output(out)
    renames = _unrenamable(monkeypatch, out)
    monkeypatch.setattr(os.path, "ismount", lambda p: Path(p) == out)
    write_tree(out, {"main.tf.json": b"new\n", MANIFEST_NAME: b"{}\n"})
    assert _listing(out) == {"main.tf.json": b"new\n", MANIFEST_NAME: b"{}\n"}
    # Chosen up front: nothing was written beside the mount point, only inside it.
    assert all(Path(a).parent != tmp_path and Path(b).parent != tmp_path for a, b in renames), renames


def test_a_failure_during_the_in_place_swap_puts_the_old_output_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "volume"
    _old_output(out)
    before = _listing(out)
    monkeypatch.setattr(os.path, "ismount", lambda p: Path(p) == out)
    real_rename = os.rename
    arrived = 0

    def rename(src: str, dst: str, *, src_dir_fd: int | None = None, dst_dir_fd: int | None = None) -> None:
        nonlocal arrived
        if Path(at_fd(dst, dst_dir_fd)).parent == out:
            arrived += 1
            if arrived == 2:  # the new manifest is in, the next entry fails
                raise OSError(errno.EIO, "Input/output error", at_fd(src, src_dir_fd))
        real_rename(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)

    monkeypatch.setattr(os, "rename", rename)
    with pytest.raises(OSError):
        write_tree(out, {"main.tf.json": b"new\n", "z.json": b"z\n", MANIFEST_NAME: b"{}\n"})
    assert _listing(out) == before
    assert sorted(p.name for p in out.iterdir()) == sorted({"gone", "main.tf.json", MANIFEST_NAME})


def test_leftovers_of_a_killed_in_place_swap_do_not_block_the_next_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "volume"
    out.mkdir()
    # SIGKILL between moving the old entries out and the new ones in: only our directories remain.
    (out / ".flatten-old-x").mkdir()
    (out / ".flatten-old-x" / MANIFEST_NAME).write_text("{}")
    (out / ".flatten-new-y").mkdir()
    monkeypatch.setattr(os.path, "ismount", lambda p: Path(p) == out)
    write_tree(out, {"main.tf.json": b"new\n", MANIFEST_NAME: b"{}\n"})
    assert sorted(p.name for p in out.iterdir()) == sorted({"main.tf.json", MANIFEST_NAME})


# -- modes of copied files (item 13) -------------------------------------------------------------------


def test_copied_files_lose_setuid_and_group_and_world_write(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    modes = {"suid.sh": 0o4777, "script.sh": 0o755, "private.txt": 0o600, "shared.txt": 0o664}
    for name, mode in modes.items():
        (src / name).write_text(name)
        os.chmod(src / name, mode)
    out = tmp_path / "out"
    write_tree(out, {MANIFEST_NAME: b"{}\n"}, {name: src / name for name in modes})
    got = {name: stat.S_IMODE((out / name).stat().st_mode) for name in modes}
    assert got == {"suid.sh": 0o755, "script.sh": 0o755, "private.txt": 0o600, "shared.txt": 0o644}


def _tar(members: dict[str, tuple[bytes, int]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, (data, mode) in sorted(members.items()):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_an_archive_member_4777_is_vendored_0755(tmp_path: Path) -> None:
    archive = tmp_path / "pkg.tgz"
    archive.write_bytes(_tar({"main.tf": (b"locals {}\n", 0o644), "run.sh": (b"#!/bin/sh\n", 0o4777)}))
    root = write_files(tmp_path / "src", {"main.tf": f'module "m" {{\n  source = "file://{archive}"\n}}\n'})
    proc = flatten_cli("build", root, "--out", tmp_path / "out", tmp=tmp_path)
    assert proc.returncode == 0, proc.stderr
    [vendored] = (tmp_path / "out").rglob("run.sh")
    assert stat.S_IMODE(vendored.stat().st_mode) == 0o755
    [cached] = (tmp_path / "cache").rglob("run.sh")  # the extracted package, too
    assert stat.S_IMODE(cached.stat().st_mode) == 0o755


# -- an --out that would delete the sources (item 2) -----------------------------------------------------


def _refused(proc: subprocess.CompletedProcess[str], words: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith("Error: ") and words in proc.stderr, proc.stderr


def test_an_out_holding_the_root_is_refused_even_with_a_manifest(tmp_path: Path) -> None:
    out = write_files(
        tmp_path / "OUT", {MANIFEST_NAME: "{}\n", "live/main.tf": "locals {}\n", "live/README": "x"}
    )
    before = _listing(out)
    proc = flatten_cli("build", out / "live", "--out", out, tmp=tmp_path)
    _refused(proc, "contains the root module")
    assert _listing(out) == before
    # Through a symlink to OUT, too: paths are compared after resolving links.
    os.symlink(out, tmp_path / "alias")
    _refused(
        flatten_cli("build", out / "live", "--out", tmp_path / "alias", tmp=tmp_path), "contains the root"
    )
    assert _listing(out) == before


def test_an_out_holding_or_inside_a_module_directory_is_refused(tmp_path: Path) -> None:
    root = write_files(
        tmp_path / "env" / "live", {"main.tf": 'module "vpc" {\n  source = "../../shared/vpc"\n}\n'}
    )
    shared = write_files(tmp_path / "shared", {MANIFEST_NAME: "{}\n", "vpc/main.tf": "locals {}\n"})
    before = _listing(shared)
    _refused(flatten_cli("build", root, "--out", shared, tmp=tmp_path), "module.vpc")
    _refused(
        flatten_cli("build", root, "--out", shared / "vpc" / "out", tmp=tmp_path), "is inside the directory"
    )
    assert _listing(shared) == before and not (shared / "vpc" / "out").exists()
    # A local directory used as a package (an absolute source) is the user's too.
    pkg = write_files(tmp_path / "pkgs", {MANIFEST_NAME: "{}\n", "p/main.tf": "locals {}\n"})
    write_files(root, {"main.tf": f'module "p" {{\n  source = "{pkg / "p"}"\n}}\n'})
    _refused(flatten_cli("build", root, "--out", pkg, tmp=tmp_path), "module.p")
    assert (pkg / "p" / "main.tf").is_file()


def test_an_out_holding_the_cache_is_refused(tmp_path: Path) -> None:
    root = write_files(tmp_path / "src", {"main.tf": "locals {}\n"})
    home = write_files(tmp_path / "home", {MANIFEST_NAME: "{}\n", "cache/keep": "cached"})
    env = {"FLATTEN_CACHE_DIR": str(home / "cache")}
    _refused(flatten_cli("build", root, "--out", home, tmp=tmp_path, env=env), "cache directory")
    _refused(
        flatten_cli("build", root, "--out", home / "cache" / "out", tmp=tmp_path, env=env), "cache directory"
    )
    # (The cache may have gained entries: it is the cache.)
    assert (home / "cache" / "keep").read_text() == "cached" and (home / MANIFEST_NAME).read_text() == "{}\n"
    assert not (home / "cache" / "out").exists() and not (home / "main.tf.json").exists()


def test_symlink_loops_as_root_or_out_are_usage_errors(tmp_path: Path) -> None:
    root = write_files(tmp_path / "src", {"main.tf": "locals {}\n"})
    os.symlink(tmp_path / "loop", tmp_path / "loop")
    _refused(flatten_cli("build", tmp_path / "loop", "--out", tmp_path / "out", tmp=tmp_path), "symlink loop")
    _refused(flatten_cli("build", root, "--out", tmp_path / "loop" / "out", tmp=tmp_path), "symlink loop")
    _refused(flatten_cli("graph", tmp_path / "loop", tmp=tmp_path), "symlink loop")


# -- what a remote package may reach (item 1) -------------------------------------------------------------

SECRET = b"-----BEGIN OPENSSH PRIVATE KEY----- stand-in"


def _secret_dir(tmp_path: Path) -> Path:
    return write_files(tmp_path / "home" / ".ssh", {"id_ed25519": SECRET, "main.tf": "locals {}\n"})


def _assert_nothing_written(proc: subprocess.CompletedProcess[str], out: Path) -> None:
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    assert not out.exists()


def test_a_downloaded_package_cannot_call_a_directory_on_this_machine(tmp_path: Path) -> None:
    ssh = _secret_dir(tmp_path)
    package = {
        "main.tf": (
            f'module "abs" {{\n  source = "{ssh}"\n}}\n'
            f'module "url" {{\n  source = "file://{ssh}"\n}}\n'
            f'module "git" {{\n  source = "git::{ssh}"\n}}\n'
            'module "inside" {\n  source = "./sub"\n}\n'
        ),
        "sub/main.tf": "locals {}\n",
    }
    with serving(HTTPServer()) as srv:
        srv.routes["/pkg.tgz"] = Reply(200, make_tar(package))
        root = write_files(
            tmp_path / "src", {"main.tf": f'module "app" {{\n  source = "{srv.url}/pkg.tgz"\n}}\n'}
        )
        out = tmp_path / "out"
        proc = flatten_cli("build", root, "--out", out, tmp=tmp_path)
    _assert_nothing_written(proc, out)
    blocks = proc.stderr.split("Error: ")[1:]
    assert len(blocks) == 3, proc.stderr
    for name in ["abs", "git", "url"]:
        [block] = [b for b in blocks if f'Module "{name}" in the package {srv.url}/pkg.tgz' in b]
        assert block.startswith("Invalid module source address"), block
        # Located in the package's file, by the package's address (never the cache's path).
        assert f"on {srv.url}/pkg.tgz//main.tf line" in block, block
    assert str(tmp_path / "cache") not in proc.stderr


def test_a_directory_package_on_this_machine_from_the_root_is_still_used(tmp_path: Path) -> None:
    # The user's own configuration may name an absolute path (Terraform copies it); only packages may not.
    shared = write_files(tmp_path / "shared", {"main.tf": 'output "x" {\n  value = 1\n}\n'})
    root = write_files(tmp_path / "src", {"main.tf": f'module "s" {{\n  source = "{shared}"\n}}\n'})
    proc = flatten_cli("build", root, "--out", tmp_path / "out", tmp=tmp_path)
    assert proc.returncode == 0, proc.stderr


def test_a_server_or_registry_cannot_redirect_a_download_to_this_machine(tmp_path: Path) -> None:
    archive = tmp_path / "local.tgz"
    archive.write_bytes(make_tar({"main.tf": "locals {}\n", "id_ed25519": SECRET}))
    with serving(Registry()) as reg:
        assert isinstance(reg, Registry)
        reg.routes["/v1/modules/acme/m/aws/versions"] = Reply(
            200, b'{"modules":[{"versions":[{"version":"1.0.0"}]}]}'
        )
        reg.routes["/v1/modules/acme/m/aws/1.0.0/download"] = Reply(
            204, b"", {"X-Terraform-Get": f"file://{archive}"}
        )
        reg.routes["/indirect"] = Reply(204, b"", {"X-Terraform-Get": f"file://{archive}"})
        main = (
            f'module "reg" {{\n  source = "{reg.host}/acme/m/aws"\n  version = "1.0.0"\n}}\n'
            f'module "web" {{\n  source = "{reg.url}/indirect"\n}}\n'
        )
        root = write_files(tmp_path / "src", {"main.tf": main})
        env = SourceEnv(cache_dir=tmp_path / "cache", insecure_hosts=frozenset({reg.host}))
        options = Options()
        _, diags = build_graph(
            root,
            options=options,
            fetcher=RemoteFetcher(root, options=options, env=env, cache_auth=cache_auth),
        )
    errors = {d.summary: d.detail for d in diags.errors}
    assert "local download address" in errors["Invalid response from remote module registry"]
    assert "answered with the local address" in errors["Failed to download module"]
    assert not list((tmp_path / "cache").rglob("id_ed25519"))


def _installed(root: Path, source: str, directory: str) -> None:
    record = {"Key": "m", "Source": source, "Dir": directory}
    write_files(root, {".terraform/modules/modules.json": json.dumps({"Modules": [record]})})


GIT_SOURCE = "git::https://example.invalid/x.git"


def test_a_modules_json_record_outside_dot_terraform_is_refused_even_offline(tmp_path: Path) -> None:
    _secret_dir(tmp_path)
    root = write_files(tmp_path / "src", {"main.tf": f'module "m" {{\n  source = "{GIT_SOURCE}"\n}}\n'})
    out = tmp_path / "out"
    _installed(root, GIT_SOURCE, "../home/.ssh")
    proc = flatten_cli("build", root, "--out", out, "--offline", tmp=tmp_path)
    _assert_nothing_written(proc, out)
    assert "Error: Invalid module installation" in proc.stderr and 'module "m"' in proc.stderr, proc.stderr
    # A link inside .terraform/modules that leads out is the same place.
    os.symlink(tmp_path / "home" / ".ssh", root / ".terraform" / "modules" / "m")
    _installed(root, GIT_SOURCE, ".terraform/modules/m")
    proc = flatten_cli("build", root, "--out", out, "--offline", tmp=tmp_path)
    _assert_nothing_written(proc, out)
    assert "leads through a symlink out of .terraform/modules" in proc.stderr, proc.stderr


def test_terraforms_own_link_for_a_local_directory_source_is_reused(tmp_path: Path) -> None:
    # terraform init installs `source = "/abs/dir"` as a symlink .terraform/modules/<key> -> /abs/dir.
    shared = write_files(tmp_path / "shared", {"main.tf": 'output "x" {\n  value = 1\n}\n'})
    root = write_files(tmp_path / "src", {"main.tf": f'module "m" {{\n  source = "{shared}"\n}}\n'})
    _installed(root, f"file://{shared}", ".terraform/modules/m")
    os.symlink(shared, root / ".terraform" / "modules" / "m")
    proc = flatten_cli("build", root, "--out", tmp_path / "out", "--offline", tmp=tmp_path)
    assert proc.returncode == 0, proc.stderr


# -- symlinks inside a downloaded package (item 3) ----------------------------------------------------------


def _repo_with_links(tmp_path: Path, files: dict[str, str], links: dict[str, Path]) -> Path:
    """Return a git repository (a real clone source) holding ``files`` and symlinks ``links``."""
    work = write_files(tmp_path / "repo", files)
    git("init", "--quiet", "--initial-branch=main", cwd=work)
    for name, target in links.items():
        os.symlink(target, work / name)
    git("add", "-A", cwd=work)
    git("commit", "--quiet", "-m", "links", cwd=work)
    return work


@needs_git
def test_a_package_symlink_to_a_local_file_or_directory_is_never_read(tmp_path: Path) -> None:
    ssh = _secret_dir(tmp_path)
    (ssh / "evil.tf").write_text('output "key" {\n  value = "PRIVATE-FROM-TF"\n}\n')
    repo = _repo_with_links(
        tmp_path,
        {"main.tf": 'module "d" {\n  source = "./dir"\n}\n'},
        {"linked.tf": ssh / "evil.tf", "dir": ssh},
    )
    main = (
        f'module "m" {{\n  source = "git::file://{repo}"\n}}\n'
        f'module "s" {{\n  source = "git::file://{repo}//dir"\n}}\n'
    )
    root = write_files(tmp_path / "src", {"main.tf": main})
    out = tmp_path / "out"
    # 1.14: Terraform 1.15 does not load the calls of module m, whose linked.tf is refused, so the
    # escape inside it would not be reported (docs/dialects.md, "Terraform versions").
    proc = flatten_cli("build", root, "--out", out, "--terraform-version", "1.14", tmp=tmp_path)
    _assert_nothing_written(proc, out)
    errors = [b.split("\n")[0] for b in proc.stderr.split("Error: ")[1:]]
    assert sorted(errors) == [
        "Failed to read file",
        "Local module path escapes module package",
        "Local module path escapes module package",
    ], proc.stderr
    assert "'linked.tf' is a symbolic link to" in proc.stderr and "did not read" in proc.stderr
    assert 'module directory "dir" of module "d"' in proc.stderr
    assert 'module directory "dir" of module "s"' in proc.stderr
    assert str(tmp_path / "cache") not in proc.stderr  # packages are named by address


@needs_git
def test_a_package_symlink_beside_a_module_is_named_by_the_package_and_not_copied(tmp_path: Path) -> None:
    ssh = _secret_dir(tmp_path)
    repo = _repo_with_links(tmp_path, {"main.tf": "locals {}\n"}, {"key.txt": ssh / "id_ed25519"})
    root = write_files(tmp_path / "src", {"main.tf": f'module "m" {{\n  source = "git::file://{repo}"\n}}\n'})
    out = tmp_path / "out"
    proc = flatten_cli("build", root, "--out", out, tmp=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Warning: Module file not copied" in proc.stderr
    assert f"key.txt in the module directory git::file://{repo} was not copied" in proc.stderr, proc.stderr
    assert "outside the module package" in proc.stderr and str(tmp_path / "cache") not in proc.stderr
    assert all(SECRET not in p.read_bytes() for p in out.rglob("*") if p.is_file())


# -- a file beside a module that cannot be read (item 13) -------------------------------------------------

UNREADABLE_TREE = {
    "main.tf": 'module "a" {\n  source = "./a"\n}\n',
    "a/main.tf": "locals {}\n",
    "a/notes.txt": "private",
}


def _deny_reading(monkeypatch: pytest.MonkeyPatch, denied: Path) -> None:
    """Make ``denied`` unreadable for this process, as chmod 000 does for a user other than root.

    (The tests run as root, whom file modes do not stop, and a FIFO or a directory in its place
    is not a file flatten copies at all; so the kernel's EACCES is simulated for every way of
    opening that one path.)
    """

    def guard(opener: Callable[..., Any]) -> Callable[..., Any]:
        def open_(file: Any, *args: Any, **kwargs: Any) -> Any:
            if isinstance(file, (str, os.PathLike)) and os.path.abspath(file) == str(denied):
                raise PermissionError(errno.EACCES, "Permission denied", os.fspath(file))
            return opener(file, *args, **kwargs)

        return open_

    monkeypatch.setattr(os, "open", guard(os.open))
    monkeypatch.setattr(io, "open", guard(io.open))
    monkeypatch.setattr(builtins, "open", guard(builtins.open))


def test_an_unreadable_file_beside_a_module_is_an_error_naming_the_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_files(tmp_path / "src", UNREADABLE_TREE)
    monkeypatch.setitem(parse_cache._CACHE, "cache", None)  # in process: never the user's cache
    _deny_reading(monkeypatch, root / "a" / "notes.txt")
    result, diags = build(root, options=Options(offline=True))
    [err] = diags.errors
    assert (err.summary, err.module) == ("Failed to read file", "module.a")
    assert err.range is not None and err.range.filename == "a/notes.txt"
    assert "notes.txt in the module directory a cannot be read: Permission denied" in err.detail
    assert result.files == {}  # an error: no output tree


def test_an_unreadable_file_beside_a_module_exits_1_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_files(tmp_path / "src", UNREADABLE_TREE)
    monkeypatch.setenv("FLATTEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("FLATTEN_PARSE_CACHE", "off")
    _deny_reading(monkeypatch, root / "a" / "notes.txt")
    out = tmp_path / "out"
    result = CliRunner().invoke(cli.app, ["build", str(root), "--out", str(out), "--offline"])
    assert result.exit_code == 1, result.output
    assert "Error: Failed to read file" in result.output and "on a/notes.txt line 1" in result.output, (
        result.output
    )
    assert not out.exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="running as root: chmod 000 does not stop root from reading")
def test_a_file_made_unreadable_with_chmod_is_an_error_naming_the_module(tmp_path: Path) -> None:
    root = write_files(tmp_path / "src", UNREADABLE_TREE)
    (root / "a" / "notes.txt").chmod(0)
    proc = flatten_cli("build", root, "--out", tmp_path / "out", "--offline", tmp=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "Error: Failed to read file" in proc.stderr and "in module.a" in proc.stderr, proc.stderr


def test_an_unreadable_directory_beside_a_module_is_an_error_naming_the_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_files(tmp_path / "src", {**UNREADABLE_TREE, "a/templates/x.tpl": "x"})
    monkeypatch.setitem(parse_cache._CACHE, "cache", None)
    denied = root / "a" / "templates"
    real_scandir = os.scandir

    def scandir(path: Any = ".") -> Any:  # EACCES on listing that one directory, as for a non-root user
        if os.path.abspath(path) == str(denied):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    result, diags = build(root, options=Options(offline=True))
    [err] = diags.errors
    assert (err.summary, err.module) == ("Failed to read file", "module.a")
    assert "templates/ in the module directory a cannot be read: Permission denied" in err.detail
    assert result.files == {}


def test_diagnostics_in_a_package_module_name_the_package_file(tmp_path: Path) -> None:
    archive = tmp_path / "pkg.tgz"
    archive.write_bytes(make_tar({"main.tf": 'terraform {\n  backend "s3" {}\n}\n'}))
    # The root's own main.tf has other text on line 2: a diagnostic must not quote it.
    root = write_files(tmp_path / "src", {"main.tf": f'module "m" {{\n  source = "file://{archive}"\n}}\n'})
    env = SourceEnv(cache_dir=tmp_path / "cache")
    options = Options(terraform_version=(1, 14))  # 1.15 ignores a child's backend silently
    _, diags = build_graph(
        root, options=options, fetcher=RemoteFetcher(root, options=options, env=env, cache_auth=cache_auth)
    )
    [warning] = diags
    assert warning.summary == "Backend configuration ignored"
    assert warning.range is not None and warning.range.filename == f"file://{archive}//main.tf"
