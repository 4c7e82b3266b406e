"""The names ``dynamic`` blocks bind: a reference rooted at one is the iterator, not an object.

Rule for the whole file: a ``dynamic "NAME"`` block binds ``NAME`` (or its ``iterator``
argument) inside its ``content``, in native syntax and in JSON, where a ``dynamic`` property of
a body is an object of such blocks (HCL's ``dynblock`` extension, which Terraform applies before
it looks for references: ``lang.ReferencesInBlock``).
"""

from __future__ import annotations

from flatten.lang.model import Body, JsonValue

__all__ = ["dynamic_iterators"]


def dynamic_iterators(body: Body) -> frozenset[str]:
    """Names ``dynamic`` blocks in ``body`` bind (their labels and ``iterator`` arguments)."""
    names: set[str] = set()
    for block in body.blocks:
        if block.type == "dynamic" and block.labels:
            names.add(block.labels[0])
            it = block.body.attribute("iterator")
            if it is not None and isinstance(it.value, str):
                names.add(it.value.removeprefix("${").removesuffix("}"))
        names |= dynamic_iterators(block.body)
    for attr in body.attributes:
        if attr.name == "dynamic" and isinstance(attr.value, dict):
            names.update(attr.value)
            _json_iterators(attr.value, names)
    return frozenset(names)


def _json_iterators(value: JsonValue, names: set[str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "iterator" and isinstance(item, str):
                names.add(item)
            if key == "dynamic" and isinstance(item, dict):
                names.update(item)
            _json_iterators(item, names)
    elif isinstance(value, list):
        for item in value:
            _json_iterators(item, names)
