"""A variable's type conversion written as an HCL expression, exactly as Terraform converts.

Rule for the whole file: Terraform gives a module variable ``convert(defaults.Apply(value),
type)``. ``conversion(source, type)`` writes that as one expression over ``source``: primitives
with ``tostring()``/``tonumber()``/``tobool()``, objects as an object constructor of their
declared attributes (extra attributes dropped, a missing or null ``optional()`` attribute given
its default, nested defaults applied the same way), tuples element by element, and collections
element by element. An empty collection keeps its element type: the elements are converted after
a typed sample element, which ``slice`` then drops (``tolist([for …])`` alone would be
``list(dynamic)``); maps go through ``zipmap(keys(…), …)`` for the same reason. A null keeps its
type (``true ? null : <sample>``). Where no exact expression exists (``any`` below a collection's
element), ``conversion`` returns None and the call stays a call.
"""

from __future__ import annotations

from flatten.lang.model import JsonValue
from flatten.lang.types import (
    AnyType,
    ListType,
    MapType,
    ObjectType,
    Primitive,
    SetType,
    TupleType,
    Type,
    has_any,
)
from flatten.syntax.references import json_to_hcl, literal_to_expression

__all__ = ["conversion", "typed_null"]


def _sample(ty: Type) -> str:
    """A non-null value of exactly ``ty`` (its contents do not matter), for typing empty results."""
    if isinstance(ty, Primitive):
        return f"to{ty.name}(null)"
    if isinstance(ty, ListType):
        return f"tolist([{_sample(ty.element)}])"
    if isinstance(ty, SetType):
        return f"toset([{_sample(ty.element)}])"
    if isinstance(ty, MapType):
        return f"tomap({{k = {_sample(ty.element)}}})"
    if isinstance(ty, TupleType):
        return "[" + ", ".join(_sample(e) for e in ty.elements) + "]"
    assert isinstance(ty, ObjectType)
    return "{" + ", ".join(f"{n} = {_sample(t)}" for n, t in ty.attributes) + "}"


def typed_null(ty: Type) -> str:
    """A null of type ``ty`` (``null`` itself for ``any``)."""
    return "null" if has_any(ty) else f"true ? null : {_sample(ty)}"


class _Namer:
    def __init__(self) -> None:
        self.n = 0

    def next(self) -> str:
        self.n += 1
        return f"_v{self.n}" if self.n > 1 else "_v"


def _elements(src: str, elem: Type, names: _Namer) -> str | None:
    """``list(elem)`` of the elements of ``src`` converted, typed even when empty."""
    x = names.next()
    inner = _convert(x, elem, names)
    if inner is None:
        return None
    return f"slice(tolist(concat([{_sample(elem)}], [for {x} in {src} : {inner}])), 1, length({src}) + 1)"


def _convert(src: str, ty: Type, names: _Namer) -> str | None:
    if isinstance(ty, AnyType):
        return src
    if isinstance(ty, Primitive):
        return f"to{ty.name}({src})"
    if isinstance(ty, (ListType, SetType, MapType)) and isinstance(ty.element, AnyType):
        kind = {ListType: "list", SetType: "set", MapType: "map"}[type(ty)]
        return f"to{kind}({src})"
    if has_any(ty):
        return None
    body: str | None
    if isinstance(ty, ListType):
        body = _elements(src, ty.element, names)
    elif isinstance(ty, SetType):
        body = _elements(src, ty.element, names)
        body = None if body is None else f"toset({body})"
    elif isinstance(ty, MapType):
        body = _elements(f"values({src})", ty.element, names)
        body = None if body is None else f"zipmap(keys({src}), {body})"
    elif isinstance(ty, TupleType):
        parts = [_convert(f"{src}[{i}]", e, names) for i, e in enumerate(ty.elements)]
        body = None if any(p is None for p in parts) else "[" + ", ".join(p or "" for p in parts) + "]"
    else:
        assert isinstance(ty, ObjectType)
        defaults = dict(ty.defaults)
        attrs: list[str] = []
        for name, attr in ty.attributes:
            value = f"try({src}.{name}, null)" if name in ty.optional else f"{src}.{name}"
            converted = _convert(value, attr, names)
            if name in defaults and converted is not None:
                # Each branch converted on its own, so both have exactly the attribute's type (a
                # default {} and an object argument would not unify); the default's own nested
                # defaults apply too.
                default = _convert(f"({json_to_hcl(literal_to_expression(defaults[name]))})", attr, names)
                converted = None if default is None else f"{value} == null ? ({default}) : ({converted})"
            if converted is None:
                return None
            attrs.append(f"{name} = {converted}")
        body = "{" + ", ".join(attrs) + "}"
    if body is None:
        return None
    return f"{src} == null ? ({typed_null(ty)}) : {body}"


def conversion(value: JsonValue, ty: Type) -> str | None:
    """Return HCL source giving ``value`` (an expression-mode JSON value) converted to ``ty``.

    None when the conversion cannot be written exactly.

    >>> from flatten.lang.types import parse_type
    >>> conversion("${var.x}", parse_type("string"))
    'tostring(var.x)'
    """
    if value is None:
        return None if has_any(ty) and not isinstance(ty, AnyType) else typed_null(ty)
    src = json_to_hcl(value)
    if not (src.startswith("(") and src.endswith(")")):
        src = f"({src})"
    out = _convert(src, ty, _Namer())
    if out is not None and out.startswith("to") and out.endswith("))") and out.count("(") == 2:
        return out[: out.index("(") + 1] + src[1:-1] + ")"  # tostring((var.x)) -> tostring(var.x)
    if out is not None and isinstance(ty, (ObjectType, TupleType)) and single_interpolation_src(value):
        # Terraform converts the unmarked value and marks the result as a whole; a constructor
        # would mark only the attributes read from a sensitive value (a sensitivity change).
        plain = _convert(f"nonsensitive({src})", ty, _Namer())
        # A tuple index, not a conditional: HCL marks a conditional's result with both results' marks.
        out = f"[sensitive({plain}), {out}][issensitive({src}) ? 0 : 1]"
    return out


def single_interpolation_src(value: JsonValue) -> bool:
    """Whether ``value`` is a lone reference or expression (possibly sensitive), not a literal."""
    return isinstance(value, str) and value.startswith("${") and value.endswith("}")
