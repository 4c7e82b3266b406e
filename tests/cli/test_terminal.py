"""Terraform's terminal manners: colour and wrapping on a terminal (a pty), plain text when piped.

What terraform's internal/command/format/diagnostic.go draws: "Error:" in bold red, "Warning:" in
bold yellow, the summary in bold, the subject underlined in the snippet, each diagnostic inside
a coloured left rule, detail paragraphs wrapped to the terminal's width. --no-color, NO_COLOR
and a pipe give plain text, wrapped at 80 columns when the width is unknown.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

BOLD_RED_ERROR = "\x1b[1m\x1b[31mError: \x1b[0m\x1b[1mUnsupported argument\x1b[0m"
BOLD_YELLOW_WARNING = "\x1b[1m\x1b[33mWarning: \x1b[0m\x1b[1mNo configuration files\x1b[0m"
ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
EMPTY_ROOT_DETAIL = (
    "The directory has no Terraform configuration files. You may begin working with Terraform "
    "immediately by creating Terraform configuration files."
)


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "FLATTEN_CACHE_DIR": str(tmp_path / "cache"), "TERM": "xterm", **extra}
    for name in ("NO_COLOR", "COLUMNS", *(k for k in extra if extra[k] == "")):
        if not extra.get(name):
            env.pop(name, None)
    return env


def on_terminal(args: list[str], env: dict[str, str], columns: int = 60) -> tuple[int, str]:
    """Run ``flatten`` with stderr on a pty ``columns`` wide; return its exit code and what the
    terminal shows (each line as left after carriage returns: a progress line drawn and cleared
    leaves nothing)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "flatten", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=follower,
        env=env,
    )
    os.close(follower)
    data = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: every writer closed the terminal
            break
        if not chunk:
            break
        data += chunk
    os.close(leader)
    code = proc.wait(timeout=120)
    text = data.decode().replace("\r\n", "\n")
    shown = [line.rsplit("\r", 1)[-1].removeprefix("\x1b[K") for line in text.split("\n")]
    return code, "\n".join(shown)


def piped(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flatten", *args], capture_output=True, text=True, env=env, timeout=120
    )


@pytest.fixture
def bad_root(tmp_path: Path) -> Path:
    root = tmp_path / "bad"
    root.mkdir()
    (root / "main.tf").write_text('variable "x" {\n  default = 1\n  bogus   = "value"\n}\n')
    return root


@pytest.fixture
def empty_root(tmp_path: Path) -> Path:
    root = tmp_path / "empty"
    root.mkdir()
    return root


def _detail_lines(text: str, first_words: str) -> list[str]:
    """The detail paragraph starting with ``first_words``, line by line, without rule or colour."""
    lines = [ESCAPE.sub("", line).removeprefix("│").removeprefix(" ") for line in text.split("\n")]
    start = next(i for i, line in enumerate(lines) if line.startswith(first_words))
    end = next((i for i in range(start, len(lines)) if not lines[i]), len(lines))
    return lines[start:end]


def test_on_a_terminal_severities_are_coloured_and_the_subject_underlined(
    tmp_path: Path, bad_root: Path
) -> None:
    code, shown = on_terminal(["build", str(bad_root), "--out", str(tmp_path / "out")], _env(tmp_path))
    assert code == 1
    assert BOLD_RED_ERROR in shown
    # The subject (the argument's name) underlined in the snippet line, as terraform does.
    assert '   3:   \x1b[4mbogus\x1b[0m   = "value"' in shown
    # Inside a red left rule, which starts and ends the diagnostic.
    assert "\x1b[31m╷\x1b[0m\n\x1b[31m│\x1b[0m " + BOLD_RED_ERROR in shown
    assert shown.rstrip().endswith("\x1b[31m╵\x1b[0m")


def test_on_a_terminal_warnings_are_yellow_and_details_wrap_at_its_width(
    tmp_path: Path, empty_root: Path
) -> None:
    code, shown = on_terminal(
        ["build", str(empty_root), "--out", str(tmp_path / "out")], _env(tmp_path), columns=60
    )
    assert code == 0
    assert BOLD_YELLOW_WARNING in shown
    lines = _detail_lines(shown, "The directory has")
    assert len(lines) > 2
    assert max(len(line) for line in lines) <= 60 - 3  # room for the rule, as terraform leaves
    assert " ".join(lines) == EMPTY_ROOT_DETAIL


@pytest.mark.parametrize("how", ["--no-color", "NO_COLOR"])
def test_no_color_on_a_terminal_is_plain_text_still_wrapped(
    tmp_path: Path, empty_root: Path, how: str
) -> None:
    args = ["build", str(empty_root), "--out", str(tmp_path / "out")]
    env = _env(tmp_path, NO_COLOR="1") if how == "NO_COLOR" else _env(tmp_path)
    code, shown = on_terminal([*args, "--no-color"] if how == "--no-color" else args, env, columns=50)
    assert code == 0
    assert "\x1b[1m" not in shown and "│" not in shown
    assert "Warning: No configuration files" in shown
    lines = _detail_lines(shown, "The directory has")
    assert max(len(line) for line in lines) <= 50 - 1
    assert " ".join(lines) == EMPTY_ROOT_DETAIL


def test_piped_output_is_plain_and_wrapped_at_80_columns(
    tmp_path: Path, empty_root: Path, bad_root: Path
) -> None:
    proc = piped(["build", str(empty_root), "--out", str(tmp_path / "out")], _env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stderr
    lines = _detail_lines(proc.stderr, "The directory has")
    assert len(lines) > 1
    assert max(len(line) for line in lines) <= 79
    assert " ".join(lines) == EMPTY_ROOT_DETAIL
    proc = piped(["build", str(bad_root), "--out", str(tmp_path / "out2")], _env(tmp_path))
    assert proc.returncode == 1
    assert proc.stderr.startswith(
        'Error: Unsupported argument\n\n  on main.tf line 3, in variable "x":\n   3:   bogus '
    )


def test_graph_takes_no_color_too(tmp_path: Path, bad_root: Path) -> None:
    code, shown = on_terminal(["graph", str(bad_root), "--no-color"], _env(tmp_path))
    assert code == 1
    assert "Error: Unsupported argument" in shown
    assert "\x1b[" not in shown
    code, shown = on_terminal(["graph", str(bad_root)], _env(tmp_path))
    assert code == 1
    assert BOLD_RED_ERROR in shown
