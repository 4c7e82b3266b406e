"""MkDocs hooks (mkdocs.yml ``hooks:``): the command reference comes from the CLI itself.

A page holding ``<!-- flatten-reference: build -->`` gets that command's usage, arguments and
options, rendered by typer's own Markdown generator (what ``typer flatten.cli utils docs``
prints) from the same app the ``flatten`` command runs, so the reference cannot drift from
``--help``. ``<!-- flatten-reference: -->`` (no name) is the program itself, without its
subcommands (each has its own page). An unknown command name fails the build.

mkdocs-click was the first choice, but typer 0.28 ships its own copy of click (``typer._click``):
mkdocs-click's ``isinstance`` checks against the real click drop every option in its table style,
and its plain style works only by calling the real click's methods on typer's objects.
"""

from __future__ import annotations

import re
from typing import Any

import typer
import typer.main
from typer.cli import get_docs_for_click

from flatten.cli import app

_MARKER = re.compile(r"<!-- flatten-reference: *([a-z -]*?) *-->")


def command_reference(path: str) -> str:
    """Return the Markdown reference of ``flatten PATH`` (``""``: the program itself)."""
    command = typer.main.get_command(app)
    ctx = typer.Context(command, info_name="flatten")
    names = path.split()
    for name in names:
        command = command.commands[name]  # type: ignore[attr-defined]
        ctx = typer.Context(command, info_name=name, parent=ctx)
    if names:
        text = get_docs_for_click(obj=command, ctx=ctx, name=" ".join(names), call_prefix="flatten")
    else:
        text = get_docs_for_click(obj=command, ctx=ctx, name="flatten")
        text = text.split("\n## ", 1)[0]  # the subcommands have their own pages
    # The page has its own title: drop the generated heading line.
    return _escape_html(text.split("\n", 1)[1].strip()) + "\n"


def _escape_html(markdown: str) -> str:
    """Escape ``<``, ``>`` and ``&`` outside code: help text such as ``OUT/<ROOT>`` is prose to
    Markdown, and a raw ``<ROOT>`` would be taken for an HTML tag (the page showed "OUT/)")."""
    lines, fenced = [], False
    for line in markdown.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            parts = line.split("`")  # even parts lie outside code spans
            line = "`".join(
                part if i % 2 else part.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
                for i, part in enumerate(parts)
            )
        lines.append(line)
    return "\n".join(lines)


def on_page_markdown(markdown: str, **_: Any) -> str:
    return _MARKER.sub(lambda match: command_reference(match.group(1)), markdown)
