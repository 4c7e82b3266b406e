"""What ``flatten affected`` prints, in the forms CI systems read (docs/monorepo.md).

- ``text``: on stdout the roots to plan, one a line (affected, added, undecided), so that
  ``xargs`` and shell loops take them; on stderr why each is listed (the changed file, the module
  call path that reads it, the output files and blocks that changed), removed roots, and with
  ``verbose`` every unaffected root with its reason, then a summary line.
- ``json``: one object (``format_version``, ``roots``: every root with its status, reason, causes,
  changed files and blocks, package changes and diagnostics).
- ``github-matrix``: ``{"include": [{"root": ...}, ...]}`` for a job's ``strategy.matrix``, on
  one line (a ``GITHUB_OUTPUT`` value); stderr as with text.
- ``atlantis``: an ``atlantis.yaml`` (version 3) with one project per root, whose
  ``autoplan.when_modified`` lists exactly the files the root reads, relative to it.

Pure functions of the verdicts: the same verdicts give the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from flatten.lang.diagnostics import render_json
from flatten.lang.printable import printable
from flatten.stages.changes import Verdict

__all__ = ["render"]

FORMATS = ("text", "json", "github-matrix", "atlantis")


def render(fmt: str, verdicts: Sequence[Verdict], *, verbose: bool, since: str) -> tuple[str, str]:
    """Return what goes to stdout and what goes to stderr."""
    if fmt == "json":
        return _json(verdicts, since), ""
    if fmt == "github-matrix":  # the why goes to the log, as text's does
        return matrix(verdicts) + "\n", _text(verdicts, verbose=verbose, since=since)[1]
    if fmt == "atlantis":
        return _atlantis(verdicts), ""
    return _text(verdicts, verbose=verbose, since=since)


def matrix(verdicts: Sequence[Verdict]) -> str:
    """The ``strategy.matrix`` object, on one line (a ``GITHUB_OUTPUT`` value is one line)."""
    rows = [{"root": v.root} for v in verdicts if v.planned]
    return json.dumps({"include": rows}, ensure_ascii=False, separators=(",", ":"))


def _text(verdicts: Sequence[Verdict], *, verbose: bool, since: str) -> tuple[str, str]:
    out = "".join(printable(v.root) + "\n" for v in verdicts if v.planned)
    err: list[str] = []
    for v in verdicts:
        if v.status == "unaffected" and not verbose:
            continue
        err.append(f"{printable(v.root)}: {v.status}: {printable(v.reason)}\n")
        err.extend(_why(v))
    planned = sum(v.planned for v in verdicts)
    removed = sum(v.status == "removed" for v in verdicts)
    tail = f", {removed} removed" if removed else ""
    err.append(f"flatten: {planned} of {len(verdicts)} roots to plan since {printable(since)}{tail}\n")
    return out, "".join(err)


def _why(v: Verdict) -> list[str]:
    lines = [
        "  " + " <- ".join(printable(c) for c in cause.chain) + " <- " + printable(cause.file) + "\n"
        for cause in v.causes
    ]
    lines.extend(f"  package {printable(p)}\n" for p in v.packages)
    for change in v.change.files:
        lines.append(f"  {change.how}: {printable(change.path)}\n")
    for block in v.change.blocks:
        lines.append(f"    {block.how} {block.kind}: {printable(block.address)}\n")
    return lines


def _json(verdicts: Sequence[Verdict], since: str) -> str:
    roots = []
    for v in verdicts:
        roots.append(
            {
                "root": v.root,
                "status": v.status,
                "plan": v.planned,
                "reason": v.reason,
                "causes": [{"file": c.file, "chain": list(c.chain)} for c in v.causes],
                "files": [{"path": f.path, "change": f.how} for f in v.change.files],
                "blocks": [
                    {
                        "address": b.address,
                        "kind": b.kind,
                        "change": b.how,
                        "file": b.file,
                        "modules": list(b.calls),
                    }
                    for b in v.change.blocks
                ],
                "packages": list(v.packages),
                "failed": v.failed or None,
                "diagnostics": json.loads(render_json(v.diagnostics))["diagnostics"] if v.diagnostics else [],
            }
        )
    doc = {"format_version": "1.0", "since": since, "roots": roots}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _atlantis(verdicts: Sequence[Verdict]) -> str:
    """``atlantis.yaml``: each string written as a JSON string, which YAML reads as the same."""
    lines = ["version: 3", "automerge: false", "projects:"]
    for v in verdicts:
        if v.status == "removed":
            continue
        name = v.root.strip("/").replace("/", "-") or "root"
        lines.append(f"- name: {json.dumps(name)}")
        lines.append(f"  dir: {json.dumps(v.root)}")
        lines.append("  autoplan:")
        lines.append("    enabled: true")
        lines.append("    when_modified:")
        for path in v.reads or ("*.tf", "*.tf.json"):
            lines.append(f"    - {json.dumps(path)}")
    return "\n".join(lines) + "\n"
