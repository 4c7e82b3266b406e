"""Help that reads well at 80 columns, and shell completion through every way flatten starts."""

from __future__ import annotations

import os
import re
import shlex
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
    assert proc.stdout.split() == ["--dialect", "--diagnostics-json", "--diff"]
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
    assert proc.stdout.split() == ["--dialect", "--diagnostics-json", "--diff"]
    assert "wrote" not in proc.stderr


#: Each shell's completion: a line only its script has, and where ``--install-completion`` puts
#: the script (under HOME) with the startup file that loads it (None: the file itself is loaded).
SHELLS = {
    "bash": ("complete -o default -F _flatten_completion flatten", ".bash_completions/flatten.sh", ".bashrc"),
    "zsh": ("#compdef flatten", ".zfunc/_flatten", ".zshrc"),
    "fish": ("complete --command flatten", ".config/fish/completions/flatten.fish", None),
    "powershell": (
        "Register-ArgumentCompleter -Native -CommandName flatten",
        ".config/powershell/Microsoft.PowerShell_profile.ps1",
        None,
    ),
}


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_show_completion_prints_the_named_shells_script(shell: str, tmp_path: Path) -> None:
    # SHELL says bash: the name on the command line wins over the shell flatten runs under.
    proc = _run(["--show-completion", shell], {"SHELL": "/bin/bash"}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    marker = SHELLS[shell][0]
    assert marker in proc.stdout
    assert "_FLATTEN_COMPLETE" in proc.stdout
    others = [SHELLS[other][0] for other in SHELLS if other != shell]
    assert not [m for m in others if m in proc.stdout]


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_install_completion_installs_the_named_shell(shell: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    # No PowerShell on PATH: its profile goes where PowerShell 7 keeps it on Linux and macOS.
    env = {"HOME": str(home), "SHELL": "/bin/bash", "PATH": os.path.dirname(sys.executable)}
    env.pop("XDG_CONFIG_HOME", None)
    proc = _run(["--install-completion", shell], env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    marker, script, startup = SHELLS[shell]
    assert f"{shell} completion installed in {home / script}" in proc.stdout
    assert marker in (home / script).read_text()
    installed = sorted(p.relative_to(home).as_posix() for p in home.rglob("*") if p.is_file())
    assert installed == sorted(p for p in (script, startup) if p is not None)
    if startup is not None:
        assert ("flatten" if shell == "bash" else ".zfunc") in (home / startup).read_text()
    # Twice is the same as once: the script is not appended again.
    before = {p: (home / p).read_text().split() for p in installed}
    assert _run(["--install-completion", shell], env, tmp_path).returncode == 0
    assert {p: (home / p).read_text().split() for p in installed} == before


def test_completion_for_an_unknown_shell_is_a_usage_error(tmp_path: Path) -> None:
    proc = _run(["--show-completion", "tcsh"], {}, tmp_path)
    assert proc.returncode == 2
    assert "bash, zsh, fish, powershell" in proc.stderr
    assert proc.stdout == ""


def test_zsh_completion_request_answers_in_zsh_form(tmp_path: Path) -> None:
    env = {"_FLATTEN_COMPLETE": "complete_zsh", "_TYPER_COMPLETE_ARGS": "flatten build --ex"}
    proc = _run([], env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("_arguments ")
    assert '"--explicit-providers"' in proc.stdout


@pytest.mark.parametrize("path", HELP_PATHS, ids=lambda p: " ".join(p) or "flatten")
def test_dash_h_is_help(path: list[str], tmp_path: Path) -> None:
    long = _run([*path, "--help"], {"COLUMNS": "80"}, tmp_path)
    short = _run([*path, "-h"], {"COLUMNS": "80"}, tmp_path)
    assert short.returncode == 0, short.stderr
    assert short.stdout == long.stdout
    assert "-h, --help" in short.stdout


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_without_a_shell_name_detects_the_shell(shell: str, tmp_path: Path) -> None:
    """Issue 39 item 4: `--show-completion` and `--install-completion` with no shell name, run
    from that shell, use it (shellingham, as typer does)."""
    program = shutil.which(shell)
    if program is None:
        pytest.skip(f"{shell} is not installed (Debian: apt-get install {shell})")
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "FLATTEN_CACHE_DIR": str(tmp_path / "cache"),
        "SHELL": "/bin/sh",  # not what decides: the shell the command runs under does
        "XDG_CONFIG_HOME": str(home / ".config"),
    }
    marker, script, _startup = SHELLS[shell]
    flatten = f"{shlex.quote(sys.executable)} -m flatten"
    for args in ("--show-completion", "--install-completion"):
        # `exec`-free: the shell stays the parent of python, as at a prompt.
        proc = subprocess.run(
            [program, "-c", f"{flatten} {args}; true"], capture_output=True, text=True, env=env, cwd=tmp_path
        )
        assert proc.returncode == 0, proc.stderr
        assert "requires an argument" not in proc.stderr
        if args == "--show-completion":
            assert marker in proc.stdout
            assert not [m for other, (m, _, _) in SHELLS.items() if other != shell and m in proc.stdout]
        else:
            assert f"{shell} completion installed in {home / script}" in proc.stdout, (
                proc.stdout + proc.stderr
            )
            assert marker in (home / script).read_text()


def test_completion_under_a_shell_without_a_script_says_so(tmp_path: Path) -> None:
    sh = shutil.which("sh")
    if sh is None:
        pytest.skip("sh is not installed")
    env = {**os.environ, "HOME": str(tmp_path), "FLATTEN_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run(
        [sh, "-c", f"{shlex.quote(sys.executable)} -m flatten --show-completion; exit $?"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 2, proc.stdout
    assert proc.stdout == ""
    assert "flatten runs under sh, which has no completion script; name one" in proc.stderr
