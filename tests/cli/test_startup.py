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
    *args: str | Path, env: dict[str, str] | None = None
) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    """Run ``flatten ARGS`` under ``-X importtime``; return the modules it imported and the run."""
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
    assert "flatten.cli" in names, proc.stderr  # the measurement sees modules imported late
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
    assert "networkx" in names  # a graph was built
    assert loaded(names, REMOTE) == []
