"""Start-up: what each command line imports (issue 16, docs/performance.md "Start-up").

``--version``, ``--help`` and shell completion must not load the pipeline, the caches or the
graph library, and a build whose modules are all local must never load the HTTP and archive
stack. Each case runs the real ``flatten`` process under ``python -X importtime``, which lists
every module imported (in the forked prefetching child too), however late.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

MAIN = 'module "a" {\n  source = "./a"\n}\n'
CHILD = 'resource "terraform_data" "a" {\n  input = "x"\n}\n'

#: What no command that only answers from the command line may import.
PIPELINE = (
    "flatten.build",
    "flatten.stages",
    "flatten.syntax",
    "flatten.sources",
    "flatten.providers",
    "flatten.inline",
    "flatten.shell.replay",
    "flatten.shell.parse_cache",
    "flatten.shell.prefetch",
    "flatten.shell.memo",
    "flatten.shell.build_cache",
    "networkx",
    "hcl2",
    "lark",
)

#: What a replayed build does not import (it reads its record; shell.replay is all it runs).
REPLAY_NEEDS_NONE = tuple(name for name in PIPELINE if name != "flatten.shell.replay")

OLD = 1_600_000_000_000_000_000  # an mtime (2020) safely older than any build's start

#: The network and archive stack: a build of local modules needs none of it.
REMOTE = (
    "http.client",
    "ssl",
    "urllib.request",
    "tarfile",
    "flatten.sources.archive",
    "flatten.sources.getter",
    "flatten.sources.registry",
    "flatten.sources.transport",
)


def imported(
    *args: str | Path, env: dict[str, str] | None = None, cli: bool = True
) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    """Run ``flatten ARGS`` under ``-X importtime``; return the modules it imported and the run
    (its stderr without the import lines). ``cli``: it must have imported the command line."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "flatten", *map(str, args)],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )
    names = {
        line.rsplit("|", 1)[-1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:")
    }
    if cli:
        assert "flatten.cli" in names, proc.stderr  # the measurement sees modules imported late
    lines = proc.stderr.splitlines(keepends=True)
    proc.stderr = "".join(line for line in lines if not line.startswith("import time:"))
    return names, proc


def loaded(names: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(n for n in names if n in prefixes or n.startswith(tuple(p + "." for p in prefixes)))


@pytest.mark.parametrize(
    "args", [("--version",), ("--help",), ("build", "--help"), ("graph", "--help")], ids=" ".join
)
def test_answers_from_the_command_line_import_no_pipeline(args: tuple[str, ...]) -> None:
    names, proc = imported(*args)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout
    assert loaded(names, PIPELINE) == []


def test_version_reads_no_package_metadata() -> None:
    """importlib.metadata brings in the email package (15 ms); the version file says the same."""
    names, proc = imported("--version")
    assert "python-hcl2 8.1.4" in proc.stdout
    assert "importlib.metadata" not in names


def test_shell_completion_imports_no_pipeline() -> None:
    names, proc = imported(
        env={"_FLATTEN_COMPLETE": "complete_bash", "COMP_WORDS": "flatten bu", "COMP_CWORD": "1"}
    )
    assert proc.returncode == 0, proc.stderr
    assert "build" in proc.stdout.split()
    assert loaded(names, PIPELINE) == []


def test_local_build_imports_no_network_or_archive_code(tree, tmp_path: Path) -> None:
    root = tree({"main.tf": MAIN, "a/main.tf": CHILD})
    names, proc = imported("build", root, "--out", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "main.tf.json").is_file()
    assert "flatten.stages.graph" in names  # a graph was built
    assert loaded(names, REMOTE) == []
    # The module tree is plain dictionaries; networkx explains a dependency cycle only.
    assert loaded(names, ("networkx",)) == []


def test_an_identical_rebuild_replays_before_the_command_line_is_parsed(tree, tmp_path: Path) -> None:
    """The same command line, nothing changed: the recorded build replays without importing typer,
    flatten.cli or the pipeline (shell/replay.py ``aliased``, ``replay_alias``). Another spelling of the same
    build is parsed first, and replays from the record after that; a change builds."""
    root = tree({"main.tf": MAIN, "a/main.tf": CHILD})
    for path in (root / "a" / "main.tf", root / "a", root / "main.tf", root):
        os.utime(path, ns=(OLD, OLD))  # older than the build's start: it may be recorded
    env = {"FLATTEN_CACHE_DIR": str(tmp_path / "cache")}
    out = tmp_path / "out"
    _, first = imported("build", root, "--out", out, env=env)
    assert first.returncode == 0 and first.stderr.endswith(f"files to {out}\n"), first.stderr
    names, again = imported("build", root, "--out", out, env=env, cli=False)
    assert again.returncode == 0 and again.stderr == first.stderr
    assert "flatten.shell.replay" in names
    assert loaded(names, ("typer", "click", "flatten.cli", *REPLAY_NEEDS_NONE)) == []
    # Nor dataclasses (nor the start-up's change to them, shell/dataclass_methods.py): 11 ms.
    assert loaded(names, ("dataclasses", "flatten.shell.dataclass_methods")) == []
    names, other = imported("build", "--out", out, root, env=env)
    assert other.returncode == 0 and other.stderr == first.stderr
    assert loaded(names, ("flatten.build",)) == []  # parsed, then replayed from the record
    (root / "a" / "main.tf").write_text(CHILD.replace('"x"', '"y"'))
    names, changed = imported("build", root, "--out", out, env=env)
    # Built: the changed module loaded again (only it: shell/incremental.py), not replayed.
    assert changed.returncode == 0 and "flatten.stages.load" in names
    assert '"y"' in (out / "a" / "main.tf.json").read_text()


def test_a_replay_before_parsing_follows_a_re_pointed_out_link(tree, tmp_path: Path) -> None:
    """`--out current`, with `current` a symlink re-pointed since: the same command line is a
    build into the new target, never a replay of the old one."""
    root = tree({"main.tf": MAIN, "a/main.tf": CHILD})
    for path in (root / "a" / "main.tf", root / "a", root / "main.tf", root):
        os.utime(path, ns=(OLD, OLD))
    env = {"FLATTEN_CACHE_DIR": str(tmp_path / "cache")}
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    link = tmp_path / "current"
    link.symlink_to("one")
    for _ in range(2):
        _, proc = imported("build", root, "--out", link, env=env, cli=False)
        assert proc.returncode == 0, proc.stderr
    link.unlink()
    link.symlink_to("two")
    names, proc = imported("build", root, "--out", link, env=env, cli=False)
    assert proc.returncode == 0, proc.stderr
    assert "flatten.cli" in names and (tmp_path / "two" / "main.tf.json").is_file()
