"""JUnit XML for CI test reports: one test case per finding location, one failure per case.

A CI report view counts test cases, so each place a finding points at (a file and line: the
source line, or the output file a ``--check`` finds stale) is one test case, named by its path
in the repository and its line; the errors there are its ``<failure>`` (one element, which
lists them all when several share the place), and the warnings, which do not fail the build,
its ``<system-out>``. A finding with no place in the repository (a downloaded package's file,
or none at all) belongs to the root's case, named by the root's path. A root with no finding is
one passing case, so a green run still counts its roots. With several roots, each case name
starts with its root (``live/prod: live/prod/main.tf:3``).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence

from flatten.lang.diagnostics import Diagnostic, Severity
from flatten.reports.base import SourceBase, location_text, rule_id

__all__ = ["render_junit", "render_junit_many"]

# Characters XML 1.0 cannot hold at all, even escaped; a message must not make the report unreadable.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_text(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def _where(d: Diagnostic, base: SourceBase) -> str:
    path = base.path_of(d.range.filename) if d.range is not None else None
    return location_text(d, path)


def _entry(d: Diagnostic, base: SourceBase) -> str:
    where = _where(d, base)
    text = f"{d.severity.value.capitalize()}: {d.summary}"
    if where:
        text += f"\n  on {where}"
    if d.detail:
        text += f"\n\n{d.detail}"
    return text


def render_junit(diags: Iterable[Diagnostic], base: SourceBase, *, command: str) -> str:
    """Return the diagnostics of ``flatten <command>`` on ``base.root`` as a JUnit XML report."""
    return render_junit_many([(base.root_path, diags, base)], command=command)


def _case_name(d: Diagnostic, base: SourceBase) -> str | None:
    """Return the place ``d`` points at as a test case's name (``path:line``), or None."""
    if d.range is None:
        return None
    path = base.path_of(d.range.filename)
    return None if path is None else f"{path}:{d.range.start.line}"


def _cases(name: str, items: list[Diagnostic], base: SourceBase) -> dict[str, list[Diagnostic]]:
    """Return the root's findings by test case name, in the order of their first finding."""
    cases: dict[str, list[Diagnostic]] = {}
    for d in items:
        cases.setdefault(_case_name(d, base) or name, []).append(d)
    return cases or {name: []}


def render_junit_many(roots: Sequence[tuple[str, Iterable[Diagnostic], SourceBase]], *, command: str) -> str:
    """Return one JUnit XML report for ``flatten <command>`` on several roots (in the order given,
    each named by the first of its tuple), in one suite: a test case per finding location."""
    many = len(roots) > 1
    cases: list[tuple[str, list[Diagnostic], SourceBase]] = []
    for name, diags, base in roots:
        for case, items in _cases(name, list(diags), base).items():
            shown = f"{name}: {case}" if many and case != name else case
            cases.append((shown, items, base))
    failed = sum(1 for _, items, _ in cases if any(d.severity is Severity.ERROR for d in items))
    counts = {"tests": str(len(cases)), "failures": str(failed), "errors": "0", "skipped": "0"}
    suites = ET.Element("testsuites", {"name": f"flatten {command}", **counts})
    suite = ET.SubElement(suites, "testsuite", {"name": f"flatten {command}", **counts})
    for name, items, base in cases:
        errors = [d for d in items if d.severity is Severity.ERROR]
        warnings = [d for d in items if d.severity is Severity.WARNING]
        element = ET.SubElement(
            suite, "testcase", {"classname": f"flatten.{command}", "name": _xml_text(name)}
        )
        if errors:
            first = errors[0]
            message = first.summary if len(errors) == 1 else f"{first.summary} (and {len(errors) - 1} more)"
            failure = ET.SubElement(
                element, "failure", {"message": _xml_text(message), "type": rule_id(first.summary)}
            )
            failure.text = _xml_text("\n\n".join(_entry(d, base) for d in errors))
        if warnings:
            out = ET.SubElement(element, "system-out")
            out.text = _xml_text("\n\n".join(_entry(d, base) for d in warnings))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
