"""What flatten says in the cases a new user met with wrong or missing words (issue 39, item 8).

Each case runs the `flatten` program as a user does. A permission error is real: as root, the
command runs without the capabilities that let root read anything (`setpriv`), so a mode-000
directory or file is unreadable to it as to any user.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.files import write_tree

MAIN = 'resource "terraform_data" "a" {\n  input = "x"\n}\n'


def flatten(*args: str | Path, cwd: Path | None = None, prefix: tuple[str, ...] = (), **env: str):
    full = {**{k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"}, **env}
    return subprocess.run(
        [*prefix, sys.executable, "-m", "flatten", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=full,
    )


def _unprivileged() -> tuple[str, ...]:
    """The command prefix under which a mode-000 file cannot be read (empty for a plain user)."""
    if os.geteuid() != 0:
        return ()
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv (util-linux), which drops root's read-anything rights")
    return (setpriv, "--bounding-set=-dac_override,-dac_read_search", "--")


def test_a_missing_root_does_not_exist(tmp_path: Path) -> None:
    proc = flatten("build", tmp_path / "nope", "--out", tmp_path / "out")
    assert proc.returncode == 2
    # `terraform -chdir=nope` says "no such file or directory"; "is not a directory" was wrong.
    assert proc.stderr == f"Error: the root module directory {tmp_path / 'nope'} does not exist.\n"
    (tmp_path / "afile").write_text("")
    proc = flatten("build", tmp_path / "afile", "--out", tmp_path / "out")
    assert proc.returncode == 2
    assert "afile is not a directory: ROOT is the root module's directory." in proc.stderr
    assert not (tmp_path / "out").exists()


def test_a_read_error_advises_reading_not_a_location_to_write_to(tmp_path: Path) -> None:
    prefix = _unprivileged()
    root = write_tree(tmp_path / "root", {"main.tf": MAIN, "locked.tf": 'variable "y" {}\n'})
    (root / "locked.tf").chmod(0)
    proc = flatten(
        "build", root, "--out", tmp_path / "out", prefix=prefix, FLATTEN_CACHE_DIR=str(tmp_path / "c")
    )
    assert proc.returncode == 1, proc.stderr
    assert "Error: Failed to read file" in proc.stderr
    text = " ".join(proc.stderr.split())
    assert "permission was denied (locked.tf)" in text
    assert "flatten must be able to read it and to enter each directory above it" in text
    assert "write to" not in text


def test_an_unreadable_module_directory_is_one_diagnostic(tmp_path: Path) -> None:
    prefix = _unprivileged()
    root = write_tree(
        tmp_path / "root",
        {
            "main.tf": 'module "m" {\n  source = "./m"\n}\n',
            "m/variables.tf": 'variable "x" {\n  default = 1\n}\n',
        },
    )
    (root / "m").chmod(0)
    try:
        proc = flatten(
            "build",
            root,
            "--out",
            tmp_path / "out",
            "--format",
            "json",
            prefix=prefix,
            FLATTEN_CACHE_DIR=str(tmp_path / "c"),
        )
    finally:
        (root / "m").chmod(0o755)
    assert proc.returncode == 1, proc.stderr
    import json

    diags = json.loads(proc.stdout)["diagnostics"]
    # Terraform's one diagnostic (configs/parser_config_dir.go); "Empty module directory" beside
    # it said the opposite of what happened.
    assert [d["summary"] for d in diags] == ["Failed to read module directory"]
    assert diags[0]["detail"].startswith("Module directory m does not exist or cannot be read.")
    assert "write to" not in diags[0]["detail"]


def _fill_cache(tmp_path: Path) -> Path:
    cache = tmp_path / "cache"
    root = write_tree(tmp_path / "root", {"main.tf": MAIN})
    built = flatten("build", root, "--out", tmp_path / "out", FLATTEN_CACHE_DIR=str(cache))
    assert built.returncode == 0, built.stderr
    return cache


def test_cache_clean_max_size_says_why_it_kept_entries(tmp_path: Path) -> None:
    cache = _fill_cache(tmp_path)
    proc = flatten("cache", "clean", "--max-size", "1K", FLATTEN_CACHE_DIR=str(cache))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0].startswith("flatten: removed 0 entries (0 B) from ")
    said = " ".join(lines[1:])
    assert re.search(
        r"the cache still holds \S+ \S+, over 1\.0 KiB: \d+ entries \(\S+ \S+\) were used in the last hour",
        said,
    )
    assert "are kept, as a build running now may be using them" in said
    assert "`flatten cache clean` to remove every entry" in said

    roomy = flatten("cache", "clean", "--max-size", "1G", FLATTEN_CACHE_DIR=str(cache))
    assert roomy.returncode == 0
    assert re.search(r"the cache holds \S+ \S+, within 1\.0 GiB\.", roomy.stderr)

    # Entries older than an hour are removed, and then nothing needs explaining.
    old = time.time() - 7200
    for path in cache.rglob("*"):
        os.utime(path, (old, old), follow_symlinks=False)
    pruned = flatten("cache", "clean", "--max-size", "1K", FLATTEN_CACHE_DIR=str(cache))
    assert pruned.returncode == 0
    assert not pruned.stderr.startswith("flatten: removed 0 entries"), pruned.stderr


def test_help_lists_every_commands_description_whole(tmp_path: Path) -> None:
    import typer.main

    from flatten.cli import app

    group = typer.main.get_command(app)
    for path in ([], ["cache"]):
        proc = flatten(*path, "-h", COLUMNS="80", FLATTEN_CACHE_DIR=str(tmp_path / "c"))
        assert proc.returncode == 0, proc.stderr
        listing = proc.stdout.split("\nCommands:\n", 1)[1]
        assert "..." not in listing
        command = group
        for name in path:
            command = command.commands[name]  # type: ignore[attr-defined]
        words = " ".join(listing.split())
        for name, sub in command.commands.items():  # type: ignore[attr-defined]
            first = " ".join((sub.help or "").split("\n\n")[0].split())
            assert f"{name} {first}" in words, (name, listing)
