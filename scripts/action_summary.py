"""The GitHub Action's step summary (scripts/action.sh run): Markdown for $GITHUB_STEP_SUMMARY.

Reads the roots (one per line) on stdin, ``flatten build --check --format json`` (the
diagnostics as ``terraform validate -json`` writes them; an array with a "root" per item for
several roots) from ``--json`` and ``--check --diff``'s unified diff from ``--diff``; writes the
roots, the status, the findings, the stale files (named by the diff's file headers: a finding
points at the source that changed, not at the output file) and the diff itself, folded.
Every text that comes from the user or a server is escaped for Markdown and HTML, so a path
cannot close the table or inject a link. Standard library only: it runs with the action's Python.
"""

from __future__ import annotations

import argparse
import json
import os
import posixpath
import sys
from typing import Any

#: Findings listed in the table; the rest are counted (a step summary holds at most 1 MiB).
MAX_ROWS = 100
STALE_SUMMARY = "Output is out of date"
_MARKDOWN = str.maketrans(
    {
        # Inside a table cell or after "- ": these are the characters that start markup there.
        **{c: "\\" + c for c in "\\`*_{}[]|~"},
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        "\n": " ",
        "\r": " ",
        "\t": " ",
    }
)


def md(text: str) -> str:
    """Return ``text`` as literal Markdown text on one line (no markup, no HTML)."""
    shown = "".join(c if c.isprintable() or c in "\n\r\t" else f"\\x{ord(c):02x}" for c in text)
    return shown.translate(_MARKDOWN)


def _place(root: str, diag: dict[str, Any]) -> str:
    """Return where a diagnostic is, relative to the working directory (``path:line``)."""
    where = diag.get("range") or {}
    filename = where.get("filename")
    if not filename:
        return ""
    path = filename if "//" in filename else posixpath.normpath(posixpath.join(root, filename))
    line = (where.get("start") or {}).get("line")
    return f"{path}:{line}" if line else path


def _stale_file(root: str, diag: dict[str, Any]) -> str:
    """Return the output file a stale finding names (its ``output_file``, else its place)."""
    output_file = diag.get("output_file")
    if isinstance(output_file, str):
        return output_file
    return _place(root, diag).rsplit(":", 1)[0]


#: Lines of the diff shown in the summary (the log has the findings; the rest is counted).
MAX_DIFF_LINES = 400


def stale_from_diff(diff: str) -> list[str]:
    """Return the output files a ``--check --diff`` names, in its order (``a/`` or ``b/`` headers;
    /dev/null for a missing or extra file)."""
    found: dict[str, None] = {}
    for line in diff.split("\n"):
        if line.startswith(("--- a/", "+++ b/")):
            found.setdefault(line[6:], None)
        elif line.startswith("Binary files "):
            name = line.removeprefix("Binary files ").split(" and ", 1)[0]
            found.setdefault(name.removeprefix("a/"), None)
    return list(found)


def summary(
    roots: list[str],
    reports: list[tuple[str, dict[str, Any]]],
    *,
    out: str,
    code: int,
    check: bool,
    diff: str = "",
) -> str:
    """Return the step summary for a run of the Action."""
    findings = [(root, d) for root, report in reports for d in report.get("diagnostics") or ()]
    errors = sum(1 for _, d in findings if d.get("severity") == "error")
    warnings = sum(1 for _, d in findings if d.get("severity") == "warning")
    stale = [(root, d) for root, d in findings if d.get("summary") == STALE_SUMMARY]
    if code == 0:
        status = "✅ up to date" if check else "✅ built"
    elif code == 1 and stale and len(stale) == errors:
        status = "❌ the output is out of date"
    elif code == 1:
        status = "❌ configuration errors"
    else:
        status = f"❌ usage error (exit {code})"
    mode = "flatten build --check" if check else "flatten build"
    lines = [
        f"## flatten: {status}",
        "",
        "| | |",
        "| --- | --- |",
        f"| roots | {', '.join(md(r) for r in roots)} |",
        f"| output | {md(out)} |",
        f"| command | {md(mode)} |",
        f"| exit code | {code} |",
        f"| findings | {errors} errors, {warnings} warnings |",
        f"| stale files | {len(stale)} |",
        "",
    ]
    if findings:
        lines += ["### Findings", "", "| severity | finding | where |", "| --- | --- | --- |"]
        for root, d in findings[:MAX_ROWS]:
            severity, what = md(str(d.get("severity", ""))), md(str(d.get("summary", "")))
            lines.append(f"| {severity} | {what} | {md(_place(root, d))} |")
        if len(findings) > MAX_ROWS:
            lines.append(f"| | and {len(findings) - MAX_ROWS} more (see the log) | |")
        lines.append("")
    if stale:
        lines += ["### Stale files", ""]
        files = stale_from_diff(diff) or sorted({_stale_file(root, d) for root, d in stale})
        lines += [f"- {md(f)}" for f in files[:MAX_ROWS]]
        if len(files) > MAX_ROWS:
            lines.append(f"- and {len(files) - MAX_ROWS} more")
        lines.append("")
    if diff:
        shown = diff.split("\n")
        more = len(shown) - MAX_DIFF_LINES
        text = "\n".join(shown[:MAX_DIFF_LINES]) + (f"\n... and {more} more lines" if more > 0 else "")
        escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        lines += ["<details><summary>The diff (flatten build --check --diff)</summary>", "", "<pre>"]
        lines += [escaped, "</pre>", "</details>", ""]
    return "\n".join(lines) + "\n"


def _reports(roots: list[str], path: str | None) -> list[tuple[str, dict[str, Any]]]:
    if path is None or not os.path.isfile(path):
        return []
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return []
    if isinstance(data, list):
        return [(str(item.get("root", ".")), item) for item in data if isinstance(item, dict)]
    return [(roots[0] if roots else ".", data)] if isinstance(data, dict) else []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", help="flatten build --check --format json's output")
    parser.add_argument("--diff", help="flatten build --check --diff's output")
    parser.add_argument("--out", required=True)
    parser.add_argument("--exit-code", type=int, required=True)
    parser.add_argument("--check", choices=("true", "false"), default="true")
    args = parser.parse_args(argv)
    roots = [line for line in sys.stdin.read().splitlines() if line]
    diff = ""
    if args.diff and os.path.isfile(args.diff):
        with open(args.diff, encoding="utf-8", errors="replace") as f:
            diff = f.read(4 << 20)
    text = summary(
        roots,
        _reports(roots, args.json),
        out=args.out,
        code=args.exit_code,
        check=args.check == "true",
        diff=diff,
    )
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
