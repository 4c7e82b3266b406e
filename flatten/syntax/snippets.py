"""The name of the block around a position, for Terraform's diagnostic snippet (``context``).

Terraform names it with HCL's ``ContextString`` (internal/command/views/json/diagnostic.go):
hclsyntax/navigation.go gives the header of the top-level block around the offset
(``resource "terraform_data" "a"``); json/navigation.go the dotted path of the object keys down
to the innermost object or array holding it (``resource.terraform_data.a``).
"""

from __future__ import annotations

from typing import Any

from flatten.syntax._hcl_errors import context_string as _native_context

__all__ = ["context_string"]


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
    """json/navigation.go ``navigationStepsRev``: descend only into a property or element whose
    value is an object or an array and whose value's range holds the offset (a key does not count,
    nor a string or number value); each property adds ``.name`` as written (no quoting), each
    element ``[i]``; nothing found at the root is no context at all."""
    from flatten.syntax.jsonsyntax import json_tree

    node: Any = json_tree(text)
    steps: list[str] = []
    while node is not None:
        found: Any = None
        for key, _ks, _ke, child in getattr(node, "pairs", None) or ():
            if _is_container(child) and child.start <= offset < child.end:
                steps.append(f".{key}")
                found = child
                break
        else:
            for i, child in enumerate(getattr(node, "items", None) or ()):
                if _is_container(child) and child.start <= offset < child.end:
                    steps.append(f"[{i}]")
                    found = child
                    break
        node = found
    return "".join(steps).removeprefix(".")


def _is_container(node: Any) -> bool:
    return hasattr(node, "pairs") or hasattr(node, "items")
