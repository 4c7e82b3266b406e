"""Files a module names through ``path.module`` or ``path.root``: ``"${path.module}/snap.tfstate"``.

The layout copies every ordinary file beside a module, but leaves out engine files (state,
plans) and hidden files, and the user's ``.terraformignore``/``--exclude`` leave out more. A
file the configuration itself names by its literal path after ``path.module``/``path.root``
(``data "terraform_remote_state"`` with ``config = { path = "${path.module}/snap.tfstate" }``,
``file("${path.root}/.secret.json")``) is read when Terraform plans, so the layout copies it, or
warns naming it when the user excluded it. References are found with the one reference scanner
(flatten/syntax/references.py); the literal text that follows the reference up to the end of
its string is the path. A path built at run time (``"${path.module}/${var.name}.tfstate"``,
``format("%s/x", path.module)``) cannot be told statically; docs/files.md says so.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator

from flatten.lang.model import Block, Body, JsonValue, Module
from flatten.syntax.references import ExpressionError, Scans

__all__ = ["path_reads"]

_ENDS = frozenset('"$%}')


def _strings(value: JsonValue) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)


def _body_strings(body: Body) -> Iterator[str]:
    # Every body is read once: one from the module cache is not left decoded (Body.peek_items).
    for item in body.peek_items():
        if isinstance(item, Block):
            yield from _body_strings(item.body)
        else:
            yield from _strings(item.value)


def _literal_after(text: str, at: int) -> str:
    """The literal text right after a reference's interpolation closes (``}``), up to the next
    quote, interpolation or end of string."""
    while at < len(text) and text[at] in " \t\n~":
        at += 1  # "${ path.module ~}"
    if at >= len(text) or text[at] != "}":
        return ""
    end = at + 1
    while end < len(text) and text[end] not in _ENDS:
        end += 1
    return text[at + 1 : end]


def path_reads(module: Module) -> tuple[tuple[str, str], ...]:
    """Return ``(base, path)`` for each file ``module`` names literally after ``path.module``
    (base ``"module"``) or ``path.root`` (``"root"``), normalised, sorted, without duplicates.

    Only paths that stay inside their base directory are returned.
    """
    found: set[tuple[str, str]] = set()
    scans = Scans(record=module.scans)  # the module's scan record (syntax/references.py)
    # A reference to ``path`` is only ever inside a template, and a record that is not empty
    # holds every template of the module (``scan_module``): its texts are read, not the bodies
    # again (issue 41: 0.06 s of flat 200's 1.5 s cold build). An empty record (``--checks
    # init`` keeps none, nor does a module of more than RECORD_BLOCKS blocks) walks the bodies.
    texts = module.scans.keys() if module.scans else (t for b in module.blocks for t in _body_strings(b.body))
    for text in texts:
        if "path." not in text:
            continue
        try:
            refs = scans.references(text)
        except ExpressionError:
            continue
        for ref in refs:
            base = ref.name(1)
            if ref.root != "path" or base not in ("module", "root") or len(ref.steps) != 1:
                continue
            literal = _literal_after(text, ref.end)
            if not literal.startswith("/") or len(literal) < 2:
                continue
            rel = posixpath.normpath(literal[1:])
            if rel.startswith("../") or rel in ("..", ".") or literal.endswith("/"):
                continue
            found.add((base, rel))
    return tuple(sorted(found))
