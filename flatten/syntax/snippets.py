"""The name of the block around a position, for Terraform's diagnostic snippet (``context``).

Terraform names it with HCL's ``ContextString`` (internal/command/views/json/diagnostic.go):
hclsyntax/navigation.go gives the header of the top-level block around the offset
(``resource "terraform_data" "a"``); json/navigation.go the dotted path of the object keys down
to the innermost object or array holding it (``resource.terraform_data.a``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["context_finder", "context_string"]


def context_string(text: str, filename: str, byte_offset: int) -> str:
    """The context of ``byte_offset`` in the file ``filename`` whose text is ``text``."""
    if byte_offset < 0:
        return ""
    offset = (
        byte_offset if text.isascii() else len(text.encode("utf-8")[:byte_offset].decode("utf-8", "ignore"))
    )
    if filename.endswith(".json"):
        return _json_context(text, offset)
    # Imported here: every build asks for a finder, only a diagnostic asks it (5 ms of imports).
    from flatten.syntax._hcl_errors import context_string as native_context

    return native_context(text, offset)


def context_finder() -> Callable[[str, str, int], str]:
    """``context_string`` that reads each file's blocks once: a rendering of a file with
    thousands of errors asks for the context of each (a parse per question was quadratic).
    JSON files are asked as ``context_string`` does (their context is a key path)."""
    blocks: dict[str, list[tuple[int, int, str]]] = {}

    def find(text: str, filename: str, byte_offset: int) -> str:
        if byte_offset < 0 or filename.endswith(".json"):
            return context_string(text, filename, byte_offset)
        if filename not in blocks:
            from flatten.syntax._hcl_errors import top_blocks

            blocks[filename] = _in_bytes(text, top_blocks(text))
        for start, end, header in blocks[filename]:
            if start <= byte_offset < end:
                return header
        return ""

    return find


def _in_bytes(text: str, spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """``spans`` (character offsets, in order) in UTF-8 byte offsets, the text encoded once."""
    if text.isascii():
        return spans
    out: list[tuple[int, int, str]] = []
    char = byte = 0
    for start, end, header in spans:
        byte += len(text[char:start].encode("utf-8", "surrogatepass"))
        begin = byte
        byte += len(text[start:end].encode("utf-8", "surrogatepass"))
        char = end
        out.append((begin, byte, header))
    return out


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
