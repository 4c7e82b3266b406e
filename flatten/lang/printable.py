"""The one place where text from outside (paths, module names, server text, ``modules.json``)
becomes safe to print on a terminal or in a CI log.

Names reach flatten from places the user does not fully control: a directory named
``m\\n::warning file=x::forged`` in a checked-out pull request, a module source, a record of
``.terraform/modules/modules.json``, a server's reply. Printed raw they can

- drive the terminal: ANSI/OSC escapes (``\\x1b[2J``, ``\\x1b]8;;``), BEL, backspace, a carriage
  return that overwrites the line, Unicode bidirectional overrides that make text read as
  something else;
- forge CI commands: the GitHub Actions runner treats every log line that starts with ``::``
  after leading white space as a workflow command (``actions/runner``,
  ``src/Runner.Worker/ActionCommandManager.cs``/``ActionCommand.TryParseV2``), so a newline in a
  name followed by ``::warning`` forges an annotation, and ``::stop-commands::<token>`` turns
  flatten's own annotations off for the rest of the job.

Every renderer that prints text (``render_text``, ``graph``, ``providers``, the annotations, the
download progress line, usage errors) passes each name or whole message through :func:`printable`;
the machine formats (JSON, SARIF, JUnit) escape by their own syntax. Escapes are shown as ``\\xNN``
(``\\uNNNN`` above U+00FF), the way ``strip_controls`` in ``redact.py`` shows a server's text, and
a line that would start a workflow command gets its first colon escaped (``\\x3a:warning``).
"""

from __future__ import annotations

import re

__all__ = ["no_commands", "printable"]

# C0 controls but tab and newline, DEL, C1 controls, the bidirectional embeddings, overrides and
# isolates, and the line and paragraph separators (a new line for some terminals and viewers).
_CONTROL_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
# A line the runner would read as a command: white space, then "::" (TryParseV2 trims the start).
_COMMAND_RE = re.compile(r"^([ \t]*):(?=:)", re.MULTILINE)


def _escape(m: re.Match[str]) -> str:
    code = ord(m[0])
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, lines: bool = False) -> str:
    r"""Return ``text`` safe to print: control characters as escapes, no CI command lines.

    A name is one line: a newline in it is escaped too. With ``lines`` (a message of several
    lines) newlines stay, and each line that would start a workflow command is defused.

    >>> printable("m\n::warning file=x::forged\x1b[31m")
    'm\\x0a::warning file=x::forged\\x1b[31m'
    >>> printable("Error: bad\n  ::stop-commands::tok\n", lines=True)
    'Error: bad\n  \\x3a:stop-commands::tok\n'
    """
    if not lines:
        text = text.replace("\n", "\\x0a")
    text = _CONTROL_RE.sub(_escape, text)
    return _COMMAND_RE.sub(r"\1\\x3a", text)


def no_commands(text: str) -> str:
    r"""Return ``text`` with every line that would start a workflow command defused, and nothing
    else changed (terminal colours kept): the last step of a renderer, after wrapping, since
    wrapping a safe line can make a new line start with ``::`` (issue 38, item 10).

    >>> no_commands("Error: x\n::stop-commands::tok\n\x1b[1mok")
    'Error: x\n\\x3a:stop-commands::tok\n\x1b[1mok'
    """
    return _COMMAND_RE.sub(r"\1\\x3a", text)
