"""Help that reads well at 80 columns, and shell completion through every way flatten starts."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main
from support.paths import SAMPLES

from flatten.cli import app

SAMPLE = SAMPLES / "web-service"

COMMAND = typer.main.get_command(app)
# Every command line a user asks help for: the program itself and each subcommand.
HELP_PATHS = [[], *([name] for name in sorted(COMMAND.commands))]  # type: ignore[attr-defined]


def _option_names(path: list[str]) -> list[str]:
    command = COMMAND
    for name in path:
        command = command.commands[name]  # type: ignore[attr-defined]
    names = []
    # get_params adds what the command line adds: --help, and --install/--show-completion.
    for param in command.get_params(typer.Context(command)):
        if param.param_type_name == "option" and not param.hidden:
            names.extend(param.opts)
            names.extend(param.secondary_opts)
    return names


def _run(args: list[str], env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "FLATTEN_CACHE_DIR": str(tmp_path / "cache"), **env}
    return subprocess.run(
        [sys.executable, "-m", "flatten", *args], capture_output=True, text=True, env=full_env
    )


@pytest.mark.parametrize("path", HELP_PATHS, ids=lambda p: " ".join(p) or "flatten")
def test_help_at_80_columns_names_every_option_whole(path: list[str], tmp_path: Path) -> None:
    proc = _run([*path, "--help"], {"COLUMNS": "80", "TERM": "xterm"}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    names = _option_names(path)
    assert "--help" in names
    for name in names:
        # Whole: not followed by more of a name, and not cut with an ellipsis.
        assert re.search(rf"(?<![\w-]){re.escape(name)}(?![\w…-])", text), f"{name} cut or missing:\n{text}"
    assert "…" not in text
    too_wide = [line for line in text.splitlines() if len(line) > 80]
    assert not too_wide, too_wide
    # One program name however flatten was started (here `python -m flatten`).
    assert text.startswith(f"Usage: flatten {' '.join(path)}".rstrip() + " ")


def test_build_help_names_its_root_argument_as_the_docstring_does(tmp_path: Path) -> None:
    proc = _run(["build", "--help"], {"COLUMNS": "80"}, tmp_path)
    assert "Usage: flatten build [OPTIONS] [ROOT...]" in proc.stdout


def _complete(
    argv: list[str], words: str, tmp_path: Path, program: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "FLATTEN_CACHE_DIR": str(tmp_path / "cache"),
        "_FLATTEN_COMPLETE": "complete_bash",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words.split()) - 1),
    }
    return subprocess.run(
        [*(program or [sys.executable, "-m", "flatten"]), *argv], capture_output=True, text=True, env=env
    )


def test_completion_through_python_m_flatten(tmp_path: Path) -> None:
    proc = _complete([], "flatten build --d", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["--dialect", "--diagnostics-json"]
    proc = _complete([], "flatten gr", tmp_path)
    assert proc.stdout.split() == ["graph"]


def test_completion_through_the_console_script(tmp_path: Path) -> None:
    script = shutil.which("flatten", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip(f"no `flatten` console script beside {sys.executable} (project not installed)")
    # The script imports the flatten on sys.path; PYTHONPATH (if set) keeps it this checkout's.
    proc = _complete([], "flatten build --exp", tmp_path, program=[script])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["--explicit-providers"]


def test_a_completion_request_never_builds(tmp_path: Path) -> None:
    """With _FLATTEN_COMPLETE set the answer is completions, even when argv holds a build.

    The warm-build record would otherwise replay the build (the parse cache reads argv first).
    """
    out = tmp_path / "out"
    argv = ["build", str(SAMPLE), "--out", str(out)]
    env = {"FLATTEN_CACHE_DIR": str(tmp_path / "cache")}
    for _ in range(2):  # the second run leaves a replayable record
        proc = subprocess.run(
            [sys.executable, "-m", "flatten", *argv],
            capture_output=True,
            text=True,
            env={**os.environ, **env},
        )
        assert proc.returncode == 0, proc.stderr
    proc = _complete(argv, "flatten build --d", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["--dialect", "--diagnostics-json"]
    assert "wrote" not in proc.stderr


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_show_completion_prints_a_script_for_flatten(shell: str, tmp_path: Path) -> None:
    proc = _run(["--show-completion", shell], {}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "_FLATTEN_COMPLETE" in proc.stdout
    assert "flatten" in proc.stdout


def test_install_completion_writes_the_shell_startup_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    proc = _run(["--install-completion", "bash"], {"HOME": str(home)}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    bashrc = (home / ".bashrc").read_text()
    installed = sorted(p.relative_to(home).as_posix() for p in home.rglob("*") if p.is_file())
    assert any("flatten" in p for p in installed), installed
    assert "flatten" in bashrc
