"""The names ``dynamic`` blocks bind: a reference rooted at one is the iterator, not an object.

Rule for the whole file: a ``dynamic "NAME"`` block binds ``NAME`` (or its ``iterator``
argument) inside its ``content``, in native syntax and in JSON, where a ``dynamic`` property of
a body is an object of such blocks (HCL's ``dynblock`` extension, which Terraform applies before
it looks for references: ``lang.ReferencesInBlock``).
"""

from __future__ import annotations

from flatten.lang.model import Block, Body, JsonValue

__all__ = ["dynamic_iterators"]

_NONE: frozenset[str] = frozenset()


def dynamic_iterators(body: Body) -> frozenset[str]:
    """Names ``dynamic`` blocks in ``body`` bind (their labels and ``iterator`` arguments)."""
    names: set[str] = set()
    _native_iterators(body, names)
    return frozenset(names) if names else _NONE


def _native_iterators(body: Body, names: set[str]) -> None:
    # One pass over the items (a resource's body is read by every check; most bind nothing).
    for item in body.items:
        if isinstance(item, Block):
            if item.type == "dynamic" and item.labels:
                names.add(item.labels[0])
                it = item.body.attribute("iterator")
                if it is not None and isinstance(it.value, str):
                    names.add(it.value.removeprefix("${").removesuffix("}"))
            _native_iterators(item.body, names)
        elif item.name == "dynamic" and isinstance(item.value, dict):
            names.update(item.value)
            _json_iterators(item.value, names)


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
