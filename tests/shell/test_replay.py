"""Build records (flatten/shell/replay.py): a build into a new --out writes the previous identical
build's output, and only when every input and that output are still as recorded."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from support.cli import OLD, age_tree, run_cli
from support.files import write_tree

from flatten.build import build
from flatten.lang.options import Options


def _tree(root: Path) -> Path:
    write_tree(
        root,
        {
            "main.tf": 'module "a" {\n  source = "./modules/a"\n}\n'
            'module "b" {\n  source = "./modules/b"\n}\n',
            "modules/a/main.tf": 'variable "v" {\n  default = 1\n}\n',
            "modules/a/run.sh": "#!/bin/sh\necho hi\n",
            "modules/b/main.tf": 'resource "terraform_data" "r" {\n  input = "b"\n}\n',
        },
    )
    os.chmod(root / "modules" / "a" / "run.sh", 0o755)  # copied along with its executable bit
    age_tree(root)
    return root


def _uncached(root: Path) -> dict[str, bytes]:
    """The output of a build without any memo (the reference every cached build must equal)."""
    return build(root, options=Options())[0].files


def _listing(top: Path) -> dict[str, tuple[bytes, int]]:
    return {
        p.relative_to(top).as_posix(): (p.read_bytes(), stat.S_IMODE(p.stat().st_mode))
        for p in sorted(top.rglob("*"))
        if p.is_file()
    }


def test_a_new_out_gets_the_previous_identical_builds_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _tree(tmp_path / "src")
    calls: list[int] = []
    assert run_cli(["build", str(root), "--out", str(tmp_path / "one")], calls) == 0
    first = capsys.readouterr().err
    assert calls == [1] and first.endswith(f"files to {tmp_path / 'one'}\n")
    assert run_cli(["build", str(root), "--out", str(tmp_path / "two")], calls) == 0
    assert calls == [1]  # written from the record, not built
    assert capsys.readouterr().err == first.replace(str(tmp_path / "one"), str(tmp_path / "two"))
    assert _listing(tmp_path / "two") == _listing(tmp_path / "one")
    assert _listing(tmp_path / "two")["modules/a/run.sh"][1] == 0o755
    # ... and the new --out has its own record: the same command again replays.
    assert run_cli(["build", str(root), "--out", str(tmp_path / "two")], calls) == 0
    assert calls == [1]
    assert {rel: data for rel, (data, _) in _listing(tmp_path / "two").items()} == _uncached(root)
    (tmp_path / "empty").mkdir()  # as a CI job may make it
    assert run_cli(["build", str(root), "--out", str(tmp_path / "empty")], calls) == 0
    assert calls == [1] and _listing(tmp_path / "empty") == _listing(tmp_path / "one")


@pytest.mark.parametrize(
    "change", ["input", "mode", "previous output", "out exists", "out inside root", "umask"]
)
def test_a_new_out_is_built_when_anything_differs(
    tmp_path: Path, change: str, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _tree(tmp_path / "src")
    calls: list[int] = []
    assert run_cli(["build", str(root), "--out", str(tmp_path / "one")], calls) == 0
    out = tmp_path / "two"
    if change == "input":
        (root / "modules" / "b" / "main.tf").write_text('resource "terraform_data" "r" {\n  input = "c"\n}\n')
        age_tree(root)  # same mtime as recorded: the digest notices
    elif change == "mode":
        os.chmod(root / "modules" / "a" / "run.sh", 0o644)
    elif change == "previous output":
        (tmp_path / "one" / "modules" / "b" / "main.tf.json").write_text("{}\n")
    elif change == "out exists":
        out.mkdir()
        (out / "mine.txt").write_text("not flatten's")
    elif change == "out inside root":
        out = root / "out"
    capsys.readouterr()
    previous = os.umask(0o077 if change == "umask" else 0o022)  # it decides the files' modes
    try:
        code = run_cli(["build", str(root), "--out", str(out)], calls)
    finally:
        os.umask(previous)
    assert calls == [1, 1]  # built (or refused) as without any record
    if change == "out exists":
        assert code == 2 and (out / "mine.txt").exists()
    elif change == "out inside root":
        assert code == 2 and "inside the root module" in capsys.readouterr().err
    else:
        assert code == 0
        assert {rel: data for rel, (data, _) in _listing(out).items()} == _uncached(root)
        assert _listing(out)["modules/a/run.sh"][1] == (0o644 if change == "mode" else 0o755)
        assert _listing(out)["main.tf.json"][1] == (0o600 if change == "umask" else 0o644)


def test_a_record_with_symlinked_modules_replays_until_a_link_moves(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "src"
    write_tree(
        root,
        {
            "main.tf": 'module "a" {\n  source = "./lib/a"\n}\n',
            "real1/a/main.tf": 'variable "v" {\n  default = 1\n}\n',
            "real2/a/main.tf": 'variable "v" {\n  default = 2\n}\n',
        },
    )
    os.symlink("real1", root / "lib")  # an ancestor of the module directory is a link
    age_tree(root)
    calls: list[int] = []
    out = tmp_path / "out"
    for _ in range(2):
        assert run_cli(["build", str(root), "--out", str(out)], calls) == 0
    assert calls == [1]  # the second replayed
    (root / "lib").unlink()
    os.symlink("real2", root / "lib")
    age_tree(root)
    assert run_cli(["build", str(root), "--out", str(out)], calls) == 0
    assert calls == [1, 1] and {rel: data for rel, (data, _) in _listing(out).items()} == _uncached(root)


@pytest.mark.parametrize(
    "change",
    [
        "same size, mtime set back",
        "file added to a module",
        "file removed from a module",
        "tree restored with its mtimes",
        "file added to the output",
        "output file rewritten, mtime set back",
    ],
)
def test_an_identical_rebuild_replays_only_while_every_fingerprint_holds(
    tmp_path: Path, change: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A replay compares size, mtime, ctime, inode and mode of every input and output (no file is
    read): any write, added or removed entry, or restored copy changes a ctime, which no program
    sets back, so each of these changes builds again."""
    root = _tree(tmp_path / "src")
    out = tmp_path / "out"
    calls: list[int] = []
    for _ in range(2):
        assert run_cli(["build", str(root), "--out", str(out)], calls) == 0
    assert calls == [1]  # unchanged: replayed
    module = root / "modules" / "b" / "main.tf"
    if change == "same size, mtime set back":
        module.write_text(module.read_text().replace('"b"', '"c"'))
        age_tree(root)  # size and mtime as recorded: only the ctime tells
    elif change == "file added to a module":
        (root / "modules" / "b" / "extra.tf").write_text('output "x" {\n  value = 1\n}\n')
        age_tree(root)
    elif change == "file removed from a module":
        (root / "modules" / "a" / "run.sh").unlink()
        age_tree(root)
    elif change == "tree restored with its mtimes":
        import shutil

        saved = tmp_path / "saved"
        shutil.copytree(root, saved, symlinks=True)  # copy2: mtimes kept
        (saved / "modules" / "b" / "main.tf").write_text(module.read_text().replace('"b"', '"c"'))
        os.utime(saved / "modules" / "b" / "main.tf", ns=(OLD, OLD))
        shutil.rmtree(root)
        shutil.copytree(saved, root, symlinks=True)  # as a CI cache restore does
    elif change == "file added to the output":
        (out / "modules" / "b" / "stray.tf.json").write_text("{}\n")
    elif change == "output file rewritten, mtime set back":
        target = out / "main.tf.json"
        st = target.stat()
        target.write_bytes(target.read_bytes().replace(b"a", b"z"))
        os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert run_cli(["build", str(root), "--out", str(out)], calls) == 0
    assert calls == [1, 1]  # built, not replayed
    expected = dict(_uncached(root))
    if change == "file added to the output":  # the user's (not in the manifest): kept (issue 39)
        expected["modules/b/stray.tf.json"] = b"{}\n"
    assert {rel: data for rel, (data, _) in _listing(out).items()} == expected
    assert run_cli(["build", str(root), "--out", str(out)], calls) == 0
    assert calls == [1, 1]  # and the new record replays


def test_a_record_keys_on_var_file_contents_and_tf_var_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OpenTofu's early evaluation reads --var-file files (anywhere) and TF_VAR_ variables: a
    replay must not hand out the output another value chose (stages/variables.py)."""
    root = write_tree(
        tmp_path / "src",
        {
            "main.tf": 'variable "env" {\n  default = "dev"\n}\n'
            'module "c" {\n  source = "./m/${var.env}"\n}\n',
            "m/dev/main.tf": "",
            "m/prod/main.tf": "",
            "m/qa/main.tf": "",
        },
    )
    var_file = tmp_path / "vars" / "env.tfvars"
    var_file.parent.mkdir()
    var_file.write_text('env = "prod"\n')
    age_tree(root)
    age_tree(var_file.parent)
    out = tmp_path / "out"
    argv = ["build", str(root), "--out", str(out), "--dialect", "opentofu", "--var-file", str(var_file)]
    calls: list[int] = []
    assert run_cli(argv, calls) == 0 and calls == [1]
    assert run_cli(argv, calls) == 0 and calls == [1]  # replayed
    var_file.write_text('env = "qa"\n')  # same size, new ctime
    age_tree(var_file.parent)
    assert run_cli(argv, calls) == 0 and calls == [1, 1]  # built again
    assert '"./m/qa"' in (out / "main.tf.json").read_text()
    monkeypatch.setenv("TF_VAR_env", "dev")  # lower than the file: the same output, still a new key
    assert run_cli(argv, calls) == 0 and calls == [1, 1, 1]


_REPLAY_IMPORTS = """
import sys
from flatten.shell import process

sys.argv = ["flatten", *sys.argv[1:]]
try:
    process.main()
except SystemExit as exc:
    code = exc.code
heavy = ("typer", "dataclasses", "ctypes", "shutil", "flatten.shell.forks")
heavy = sorted(m for m in heavy if m in sys.modules)
print(code, *heavy)
"""


def test_an_identical_rebuild_replays_before_importing_the_build(tmp_path: Path) -> None:
    # A replay's whole time is its imports and its checks (identical rebuild: 0.05 s on flat 200,
    # goal 0.1x `terraform get`): it imports neither typer nor what only a build needs
    # (dataclasses through the gate, ctypes through forks' allocator hint, shutil): issue 41,
    # ninth round, where those were 10 ms of it.
    import subprocess
    import sys

    root = _tree(tmp_path / "src")
    age_tree(root)
    out = tmp_path / "out"
    env = {**os.environ, "FLATTEN_CACHE_DIR": str(tmp_path / "cache")}
    command = [sys.executable, "-c", _REPLAY_IMPORTS, "build", str(root), "--out", str(out)]
    for _ in range(2):  # the build, then one that records it (its inputs old enough)
        subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    replayed = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    assert replayed.stdout.split() == ["0"], replayed.stdout
