"""SARIF 2.1.0 (OASIS) for code scanning: one run per root, one rule per summary, one result per diagnostic.

Paths are relative to the repository root (``%SRCROOT%``), which is where GitHub code scanning
and other SARIF viewers look files up; no absolute path is written, so the log is the same on
every machine. GitHub rejects a whole log when any result has no file location, so a diagnostic
that has none in the checkout (a downloaded package, a file outside the repository, or no range
at all) is placed on the root module directory and its own location goes into the message.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from types import MappingProxyType
from urllib.parse import quote

from flatten.lang.diagnostics import Diagnostic, Severity
from flatten.lang.release import __version__
from flatten.reports.base import SourceBase, location_text, rule_id

__all__ = ["SCHEMA_URI", "render_sarif", "render_sarif_many"]

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
_SRCROOT = "%SRCROOT%"
_LEVEL = MappingProxyType({Severity.ERROR: "error", Severity.WARNING: "warning"})


def _uri(path: str) -> str:
    # A relative URI reference: percent-encode what a path may hold that a URI may not (spaces, %, #).
    return quote(path, safe="/")


def _region(d: Diagnostic) -> dict[str, int] | None:
    if d.range is None:
        return None
    start, end = d.range.start, d.range.end
    region = {"startLine": max(start.line, 1), "startColumn": max(start.column, 1)}
    if (end.line, end.column) >= (start.line, start.column):
        region["endLine"] = end.line
        region["endColumn"] = end.column
    return region


def _location(d: Diagnostic, base: SourceBase) -> tuple[dict[str, object], bool]:
    """Return the result's location and whether it is the diagnostic's own file and region."""
    path = base.path_of(d.range.filename) if d.range is not None else None
    physical: dict[str, object]
    if path is not None:
        physical = {"artifactLocation": {"uri": _uri(path), "uriBaseId": _SRCROOT}}
        region = _region(d)
        if region is not None:
            physical["region"] = region
    else:
        root = "" if base.root_path == "." else base.root_path + "/"
        physical = {"artifactLocation": {"uri": _uri(root) or "./", "uriBaseId": _SRCROOT}}
    location: dict[str, object] = {"physicalLocation": physical}
    if d.module:
        location["logicalLocations"] = [{"fullyQualifiedName": d.module, "kind": "module"}]
    return location, path is not None


def render_sarif(diags: Iterable[Diagnostic], base: SourceBase) -> str:
    """Return the diagnostics as a SARIF 2.1.0 log (JSON text ending in a newline)."""
    return _log([_run(diags, base)])


def render_sarif_many(roots: Sequence[tuple[str, Iterable[Diagnostic], SourceBase]]) -> str:
    """Return one SARIF 2.1.0 log for several roots: one run per root, in the order given, each
    named by ``automationDetails.id`` ``flatten/<label>/`` (what code scanning calls a category,
    so each root's alerts are tracked on their own)."""
    runs = []
    for label, diags, base in roots:
        run = _run(diags, base)
        run["automationDetails"] = {"id": f"flatten/{label}/"}
        runs.append(run)
    return _log(runs)


def _log(runs: list[dict[str, object]]) -> str:
    log = {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": runs}
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


def _run(diags: Iterable[Diagnostic], base: SourceBase) -> dict[str, object]:
    rules: list[dict[str, object]] = []
    index: dict[str, int] = {}
    results: list[dict[str, object]] = []
    for d in diags:
        rid = rule_id(d.summary)
        if rid not in index:
            index[rid] = len(rules)
            rules.append(
                {
                    "id": rid,
                    "shortDescription": {"text": d.summary},
                    "defaultConfiguration": {"level": _LEVEL[d.severity]},
                }
            )
        location, own = _location(d, base)
        text = d.summary
        if not own and (d.range is not None or d.module):
            text += f" ({location_text(d)})"
        if d.detail:
            text += "\n\n" + d.detail
        results.append(
            {
                "ruleId": rid,
                "ruleIndex": index[rid],
                "level": _LEVEL[d.severity],
                "message": {"text": text},
                "locations": [location],
            }
        )
    return {
        "tool": {"driver": {"name": "flatten", "version": __version__, "rules": rules}},
        # Ranges come from the HCL reader, whose columns count characters.
        "columnKind": "unicodeCodePoints",
        "results": results,
    }
