"""GitHub Actions annotations: ``::error file=...,line=...,col=...,title=...::message`` lines.

The runner turns such lines (on stdout or stderr) into annotations on the pull request's files.
Escaping follows GitHub's toolkit (``@actions/core``, ``command.ts``): ``%``, CR and LF in the
message, and also ``:`` and ``,`` in property values, which would otherwise end them.
"""

from __future__ import annotations

from collections.abc import Iterable

from flatten.lang.diagnostics import Diagnostic
from flatten.lang.printable import printable
from flatten.lang.redact import redact_url
from flatten.reports.base import SourceBase, location_text

__all__ = ["escape_data", "escape_property", "render_github"]


def escape_data(text: str) -> str:
    # GitHub's escapes, then the other control characters as escapes (lang/printable.py): an
    # annotation is also a line of the job's log, read on a terminal.
    return printable(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _annotation(d: Diagnostic, base: SourceBase) -> str:
    path = base.path_of(d.range.filename) if d.range is not None else None
    props: list[tuple[str, str]] = []
    if path is not None and d.range is not None:
        props += [("file", path), ("line", str(d.range.start.line)), ("col", str(d.range.start.column))]
        if d.range.end.line >= d.range.start.line:
            props += [("endLine", str(d.range.end.line)), ("endColumn", str(d.range.end.column))]
    props.append(("title", redact_url(d.summary)))
    message = redact_url(d.detail or d.summary)
    where = location_text(d) if path is None else (f"in {d.module}" if d.module else "")
    if where:
        # Not placed on a file of the checkout (or placed, but inside a module call): say where.
        message = f"{where}: {message}" if path is None else f"{message}\n\n({where})"
    head = ",".join(f"{key}={escape_property(value)}" for key, value in props)
    return f"::{d.severity.value} {head}::{escape_data(message)}"


def render_github(diags: Iterable[Diagnostic], base: SourceBase) -> str:
    """Return one workflow-command line per diagnostic (``::error`` or ``::warning``)."""
    return "".join(_annotation(d, base) + "\n" for d in diags)
