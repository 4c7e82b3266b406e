"""The name of the block around a position, for Terraform's diagnostic snippet (``context``).

Terraform names it with HCL's ``ContextString`` (internal/command/views/json/diagnostic.go):
hclsyntax/navigation.go gives the header of the top-level block around the offset
(``resource "terraform_data" "a"``); json/navigation.go the dotted path of the object keys down
to the innermost value there (``resource.terraform_data.a.input``).
"""

from __future__ import annotations

import re
from typing import Any

from flatten.syntax._hcl_errors import context_string as _native_context

__all__ = ["context_string"]

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")


def context_string(text: str, filename: str, byte_offset: int) -> str:
    """The context of ``byte_offset`` in the file ``filename`` whose text is ``text``."""
    if byte_offset < 0:
        return ""
    offset = (
        byte_offset if text.isascii() else len(text.encode("utf-8")[:byte_offset].decode("utf-8", "ignore"))
    )
    if filename.endswith(".json"):
        return _json_context(text, offset)
    return _native_context(text, offset)


def _json_context(text: str, offset: int) -> str:
    from flatten.syntax.jsonsyntax import json_tree

    node: Any = json_tree(text)
    steps: list[str] = []
    while node is not None:
        found: Any = None
        for key, ks, ke, child in getattr(node, "pairs", None) or ():
            if ks <= offset < ke or child.start <= offset < child.end:
                steps.append(f".{key}" if _IDENT.match(key) else f"[{key!r}]".replace("'", '"'))
                found = child
                break
        else:
            for i, child in enumerate(getattr(node, "items", None) or ()):
                if child.start <= offset < child.end:
                    steps.append(f"[{i}]")
                    found = child
                    break
        node = found
    return "".join(steps).removeprefix(".")
