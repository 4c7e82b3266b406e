"""JUnit XML for CI test reports: one test case per root, one failure per error.

The root is the unit a pipeline checks, so it is the test case (named by its path in the
repository); each error is a ``<failure>`` (JUnit readers count those elements), and warnings,
which do not fail the build, are listed in the case's ``<system-out>``.
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


def render_junit_many(roots: Sequence[tuple[str, Iterable[Diagnostic], SourceBase]], *, command: str) -> str:
    """Return one JUnit XML report for ``flatten <command>`` on several roots: one test case each
    (in the order given, named by the first of each tuple), in one suite."""
    cases = [(name, list(diags), base) for name, diags, base in roots]
    failed = sum(1 for _, items, _ in cases for d in items if d.severity is Severity.ERROR)
    counts = {"tests": str(len(cases)), "failures": str(failed), "errors": "0", "skipped": "0"}
    suites = ET.Element("testsuites", {"name": f"flatten {command}", **counts})
    suite = ET.SubElement(suites, "testsuite", {"name": f"flatten {command}", **counts})
    for name, items, base in cases:
        errors = [d for d in items if d.severity is Severity.ERROR]
        warnings = [d for d in items if d.severity is Severity.WARNING]
        case = ET.SubElement(suite, "testcase", {"classname": f"flatten.{command}", "name": name})
        for d in errors:
            failure = ET.SubElement(
                case, "failure", {"message": _xml_text(d.summary), "type": rule_id(d.summary)}
            )
            failure.text = _xml_text(_entry(d, base))
        if warnings:
            out = ET.SubElement(case, "system-out")
            out.text = _xml_text("\n\n".join(_entry(d, base) for d in warnings))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
