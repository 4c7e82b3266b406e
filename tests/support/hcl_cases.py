"""The native-syntax corpus (tests/data/hcl/*.txt), read once for every reader that checks it.

Each file is one case:

    # mode: expr              (optional: the text is one expression, converted in EXPR mode)
    # dialect: opentofu       (optional)
    <HCL>
    # --- expected
    <JSON: the expression's value, or the file as plain JSON; SKIP to check diagnostics only>
    # --- diagnostics         (optional; without it the case must give no diagnostics)
    error: <summary> @ <line>:<column>

The plain-JSON form of a body (``plain``): attributes map to their values; blocks group by type,
labels become nested keys, and repeated blocks become a list.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flatten.lang.model import Block, Body
from support.paths import DATA

HCL = DATA / "hcl"
# One case per file; the format is in read_case.
CASES = sorted(HCL.glob("*.txt"))


def plain(body: Body) -> dict[str, Any]:
    """The body as plain JSON: attributes by name, blocks grouped by type and labels."""
    out: dict[str, Any] = {}
    for item in body.items:
        if not isinstance(item, Block):
            out[item.name] = item.value
            continue
        parent = out
        key = item.type
        for label in item.labels:
            parent = parent.setdefault(key, {})
            key = label
        value = plain(item.body)
        if key not in parent:
            parent[key] = value
        elif isinstance(parent[key], list):
            parent[key].append(value)
        else:
            parent[key] = [parent[key], value]
    return out


def read_case(path: Path) -> tuple[dict[str, str], str, str, list[str]]:
    text = path.read_bytes().decode("utf-8")
    headers: dict[str, str] = {}
    while text.startswith("# ") and not text.startswith("# ---"):
        line, text = text.split("\n", 1)
        key, _, value = line[2:].partition(":")
        headers[key.strip()] = value.strip()
    source, _, rest = text.partition("\n# --- expected\n")
    if text.startswith("# --- expected\n"):
        source, rest = "", text[len("# --- expected\n") :]
    expected, _, diag_text = rest.partition("# --- diagnostics\n")
    diags = [ln.strip() for ln in diag_text.splitlines() if ln.strip()]
    if headers.get("mode") != "expr":
        source += "\n" if not source.endswith("\n") else ""
    return headers, source, expected.strip(), diags
