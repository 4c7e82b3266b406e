"""Diagnostics: what went wrong, where, and what to do; carried beside values, never raised.

A summary is a short fixed phrase copied word for word from Terraform or OpenTofu; where the two
engines word it differently the text comes from ``SUMMARIES`` (one table, not ``if`` statements
at call sites). The detail is full sentences. Rendering follows ``terraform validate`` for text
and ``terraform validate -json`` for JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from flatten.lang.model import Range
from flatten.lang.options import Dialect
from flatten.lang.redact import redact_url

__all__ = [
    "Diagnostic",
    "Diagnostics",
    "Severity",
    "render_json",
    "render_text",
    "summary",
]


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem found in the configuration.

    ``module`` is the module path (``module.a.module.b``) for anything outside the root.
    ``refusal`` marks an error of flatten's own about an input Terraform accepts but no output
    could reproduce (docs/overrides.md): the build fails, but later checks run as Terraform's
    would, as if it were absent, so the user sees every error Terraform would report too.
    """

    severity: Severity
    summary: str
    detail: str = ""
    range: Range | None = None
    module: str = ""
    refusal: bool = False

    @classmethod
    def error(
        cls, summary: str, detail: str = "", range: Range | None = None, module: str = ""
    ) -> Diagnostic:
        return cls(Severity.ERROR, summary, detail, range, module)

    @classmethod
    def warning(
        cls, summary: str, detail: str = "", range: Range | None = None, module: str = ""
    ) -> Diagnostic:
        return cls(Severity.WARNING, summary, detail, range, module)


class Diagnostics(list[Diagnostic]):
    """A list of diagnostics that knows whether any is an error."""

    @property
    def has_errors(self) -> bool:
        return any(d.severity is Severity.ERROR for d in self)

    @property
    def has_terraform_errors(self) -> bool:
        """Whether an error is one Terraform reports too (not a refusal of flatten's own)."""
        return any(d.severity is Severity.ERROR and not d.refusal for d in self)

    def error(self, summary: str, detail: str = "", range: Range | None = None) -> None:
        self.append(Diagnostic.error(summary, detail, range))

    def warning(self, summary: str, detail: str = "", range: Range | None = None) -> None:
        self.append(Diagnostic.warning(summary, detail, range))

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self if d.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self if d.severity is Severity.WARNING]


# Summaries that Terraform and OpenTofu word differently (spec §2, §3, §4.7).
SUMMARIES: dict[str, dict[Dialect, str]] = {
    "duplicate_backend": {
        Dialect.TERRAFORM: "Duplicate 'backend' configuration block",
        Dialect.OPENTOFU: "Duplicate backend configuration",
    },
    "duplicate_cloud": {
        Dialect.TERRAFORM: "Duplicate HCP Terraform configurations",
        Dialect.OPENTOFU: "Duplicate cloud configurations",
    },
    "backend_and_cloud": {
        Dialect.TERRAFORM: "Conflicting 'cloud' and 'backend' configuration blocks are present",
        Dialect.OPENTOFU: "Both a backend and a cloud configuration are present",
    },
    "duplicate_ephemeral": {
        Dialect.TERRAFORM: 'Duplicate ephemeral "{type}" configuration',
        Dialect.OPENTOFU: 'Duplicate ephemeral resource "{type}" configuration',
    },
    "module_incompatible_meta": {
        Dialect.TERRAFORM: "Module is incompatible with count, for_each, and depends_on",
        Dialect.OPENTOFU: "Module is incompatible with count, for_each, enabled and depends_on",
    },
}


def summary(key: str, dialect: Dialect, **fields: str) -> str:
    """Return the summary for ``key`` in ``dialect``'s wording, with ``fields`` filled in."""
    return SUMMARIES[key][dialect].format(**fields)


def _range_json(r: Range) -> dict[str, object]:
    return {
        "filename": r.filename,
        "start": {"line": r.start.line, "column": r.start.column, "byte": r.start.byte},
        "end": {"line": r.end.line, "column": r.end.column, "byte": r.end.byte},
    }


def render_json(diags: Iterable[Diagnostic]) -> str:
    """Return the diagnostics as ``terraform validate -json`` prints them (one JSON object)."""
    items = list(diags)
    errors = sum(1 for d in items if d.severity is Severity.ERROR)
    out: list[dict[str, object]] = []
    for d in items:
        entry: dict[str, object] = {
            "severity": d.severity.value,
            # Any stage may quote a source address: no URL userinfo is ever shown.
            "summary": redact_url(d.summary),
            "detail": redact_url(d.detail),
        }
        if d.range is not None:
            entry["range"] = _range_json(d.range)
        if d.module:
            entry["module"] = d.module
        out.append(entry)
    doc = {
        "format_version": "1.0",
        "valid": errors == 0,
        "error_count": errors,
        "warning_count": len(items) - errors,
        "diagnostics": out,
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _snippet(root: Path | None, r: Range) -> str | None:
    if root is None:
        return None
    try:
        lines = (root / r.filename).read_text(encoding="utf-8-sig", errors="replace").splitlines()
    except OSError:
        return None
    if 1 <= r.start.line <= len(lines):
        return f"{r.start.line:>4}: {redact_url(lines[r.start.line - 1])}"
    return None


def render_text(diags: Iterable[Diagnostic], *, root: Path | None = None) -> str:
    """Return the diagnostics as Terraform prints them: ``Error: summary``, location, detail."""
    blocks: list[str] = []
    for d in diags:
        lines = [f"{d.severity.value.capitalize()}: {redact_url(d.summary)}"]
        if d.range is not None:
            lines.append("")
            where = f"  on {d.range.filename} line {d.range.start.line}"
            if d.module:
                where += f", in {d.module}"
            lines.append(where + ":")
            snippet = _snippet(root, d.range)
            if snippet:
                lines.append(snippet)
        elif d.module:
            lines += ["", f"  in {d.module}"]
        if d.detail:
            lines += ["", redact_url(d.detail)]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + ("\n" if blocks else "")
