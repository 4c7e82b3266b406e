"""Terraform type constraints and the conversion of a literal default value into one.

Rule for the whole file: behave as HCL's ``typeexpr`` (parsing) and cty's ``convert`` package
(conversion) do, on the values this tool holds: JSON values, where a list is a tuple and an object
an object until a type says otherwise (spec §3.4 type/default interplay, §7.3 type expressions).

Errors are narrow exceptions (:class:`TypeExprError`, :class:`ConversionError`), like
packaging's ``InvalidVersion``; the merge stage turns them into diagnostics.

>>> t = parse_type('object({a = optional(string, "x"), b = number})')
>>> convert(apply_defaults({"b": "2"}, t), t)
{'a': 'x', 'b': 2}
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from types import MappingProxyType
from typing import TypeAlias, Union

from flatten.lang.model import JsonValue

__all__ = [
    "ANY",
    "BOOL",
    "NUMBER",
    "STRING",
    "AnyType",
    "ConversionError",
    "DefaultsMismatch",
    "ListType",
    "MapType",
    "ObjectType",
    "Primitive",
    "SetType",
    "TupleType",
    "Type",
    "TypeExprError",
    "apply_defaults",
    "convert",
    "has_any",
    "has_collection",
    "has_defaults",
    "parse_type",
    "type_expression",
    "type_string",
    "with_defaults_of",
]


class TypeExprError(ValueError):
    """A type expression is not valid; ``str()`` is the detail of "Invalid type specification"."""


class ConversionError(ValueError):
    """A value cannot be converted to a type; ``str()`` is cty's message (with the path)."""


@dataclass(frozen=True, slots=True)
class Primitive:
    name: str  # "string", "number" or "bool"


@dataclass(frozen=True, slots=True)
class AnyType:
    pass


@dataclass(frozen=True, slots=True)
class ListType:
    element: Type


@dataclass(frozen=True, slots=True)
class SetType:
    element: Type


@dataclass(frozen=True, slots=True)
class MapType:
    element: Type


@dataclass(frozen=True, slots=True)
class TupleType:
    elements: tuple[Type, ...]


@dataclass(frozen=True, slots=True)
class ObjectType:
    """``object({...})``: attribute types, which are optional, and optional defaults (if any)."""

    attributes: tuple[tuple[str, Type], ...]
    optional: frozenset[str] = frozenset()
    defaults: tuple[tuple[str, JsonValue], ...] = field(default=())

    @property
    def attribute_map(self) -> dict[str, Type]:
        return dict(self.attributes)


Type: TypeAlias = Union[  # noqa: UP007 - a runtime alias needs Union before 3.12
    Primitive, AnyType, ListType, SetType, MapType, TupleType, ObjectType
]

STRING = Primitive("string")
NUMBER = Primitive("number")
BOOL = Primitive("bool")
ANY = AnyType()

_PRIMITIVES: MappingProxyType[str, Primitive] = MappingProxyType(
    {"string": STRING, "number": NUMBER, "bool": BOOL}
)
_COLLECTIONS: MappingProxyType[str, type[ListType] | type[SetType] | type[MapType]] = MappingProxyType(
    {
        "list": ListType,
        "set": SetType,
        "map": MapType,
    }
)


def type_string(ty: Type) -> str:
    """Return ``ty`` written as a type expression (optional defaults are left out)."""
    if isinstance(ty, Primitive):
        return ty.name
    if isinstance(ty, AnyType):
        return "any"
    if isinstance(ty, ListType):
        return f"list({type_string(ty.element)})"
    if isinstance(ty, SetType):
        return f"set({type_string(ty.element)})"
    if isinstance(ty, MapType):
        return f"map({type_string(ty.element)})"
    if isinstance(ty, TupleType):
        return "tuple([" + ", ".join(type_string(e) for e in ty.elements) + "])"
    parts = []
    for name, attr in ty.attributes:
        inner = type_string(attr)
        parts.append(f"{name} = optional({inner})" if name in ty.optional else f"{name} = {inner}")
    return "object({" + ", ".join(parts) + "})"


def type_expression(ty: Type) -> str:
    """Return ``ty`` written as a type expression with its optional defaults.

    >>> type_expression(parse_type('object({a = optional(string, "x"), b = list(number)})'))
    'object({a = optional(string, "x"), b = list(number)})'
    """
    if isinstance(ty, ListType):
        return f"list({type_expression(ty.element)})"
    if isinstance(ty, SetType):
        return f"set({type_expression(ty.element)})"
    if isinstance(ty, MapType):
        return f"map({type_expression(ty.element)})"
    if isinstance(ty, TupleType):
        return "tuple([" + ", ".join(type_expression(e) for e in ty.elements) + "])"
    if not isinstance(ty, ObjectType):
        return type_string(ty)
    defaults = dict(ty.defaults)
    parts = []
    for name, attr in ty.attributes:
        inner = type_expression(attr)
        if name in defaults:
            inner = f"optional({inner}, {_literal_text(defaults[name])})"
        elif name in ty.optional:
            inner = f"optional({inner})"
        parts.append(f"{name} = {inner}")
    return "object({" + ", ".join(parts) + "})"


def _literal_text(value: JsonValue) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, Decimal)):
        return _number_text(value)
    if isinstance(value, str):
        escaped = json.dumps(value, ensure_ascii=False).replace("${", "$${").replace("%{", "%%{")
        return escaped
    if isinstance(value, list):
        return "[" + ", ".join(_literal_text(v) for v in value) + "]"
    return (
        "{"
        + ", ".join(f"{json.dumps(k, ensure_ascii=False)} = {_literal_text(v)}" for k, v in value.items())
        + "}"
    )


def has_defaults(ty: Type) -> bool:
    """Whether ``ty`` holds an optional attribute default anywhere."""
    if isinstance(ty, ObjectType):
        return bool(ty.defaults) or any(has_defaults(t) for _, t in ty.attributes)
    if isinstance(ty, (ListType, SetType, MapType)):
        return has_defaults(ty.element)
    if isinstance(ty, TupleType):
        return any(has_defaults(t) for t in ty.elements)
    return False


def has_collection(ty: Type) -> bool:
    """Whether ``ty`` holds a list, set or map type anywhere."""
    if isinstance(ty, (ListType, SetType, MapType)):
        return True
    if isinstance(ty, ObjectType):
        return any(has_collection(t) for _, t in ty.attributes)
    if isinstance(ty, TupleType):
        return any(has_collection(t) for t in ty.elements)
    return False


class DefaultsMismatch(ValueError):
    """No type expression has one type's constraint and another type's optional defaults."""


def with_defaults_of(constraint: Type, defaults_of: Type | None) -> Type:
    """Return ``constraint`` carrying the optional-attribute defaults of ``defaults_of`` instead of its own.

    Terraform merges an override's ``type`` into a variable's type constraint but keeps the
    defaults of the first declaration's type (``configs.Variable.merge`` does not copy
    ``TypeDefaults``; docs/overrides.md). A default applies where the value has the attribute or
    lacks it, so it is kept at each attribute both types have (the attribute becomes optional);
    one for an attribute the new type lacks is dropped by conversion anyway. Raises
    ``DefaultsMismatch`` where a default would apply to a value the new type reads another way
    (an object's defaults under a map or ``any``).

    >>> old = parse_type("object({a = optional(number, 3)})")
    >>> type_expression(with_defaults_of(parse_type("object({a = optional(number, 7), b = string})"), old))
    'object({a = optional(number, 3), b = string})'
    """
    if defaults_of is None or not has_defaults(defaults_of):
        return _strip_defaults(constraint)
    if isinstance(constraint, ObjectType) and isinstance(defaults_of, ObjectType):
        old_attrs = defaults_of.attribute_map
        old_defaults = dict(defaults_of.defaults)
        attrs = []
        optional = set(constraint.optional)
        defaults = []
        for name, attr in constraint.attributes:
            attrs.append((name, with_defaults_of(attr, old_attrs.get(name))))
            if name in old_defaults:
                try:
                    defaults.append((name, convert(old_defaults[name], attr)))
                except ConversionError as exc:
                    raise DefaultsMismatch(f'the default of attribute "{name}" ({exc})') from None
                optional.add(name)
        return ObjectType(tuple(attrs), frozenset(optional), tuple(defaults))
    sequences = (ListType, SetType)
    if isinstance(constraint, sequences) and isinstance(defaults_of, sequences):
        return type(constraint)(with_defaults_of(constraint.element, defaults_of.element))
    if isinstance(constraint, MapType) and isinstance(defaults_of, MapType):
        return MapType(with_defaults_of(constraint.element, defaults_of.element))
    if (
        isinstance(constraint, TupleType)
        and isinstance(defaults_of, TupleType)
        and len(constraint.elements) == len(defaults_of.elements)
    ):
        pairs = zip(constraint.elements, defaults_of.elements, strict=True)
        return TupleType(tuple(with_defaults_of(n, o) for n, o in pairs))
    raise DefaultsMismatch(
        f"{type_string(defaults_of)} has defaults that {type_string(constraint)} cannot hold"
    )


def _strip_defaults(ty: Type) -> Type:
    if isinstance(ty, ObjectType):
        return ObjectType(tuple((n, _strip_defaults(t)) for n, t in ty.attributes), ty.optional)
    if isinstance(ty, (ListType, SetType, MapType)):
        return type(ty)(_strip_defaults(ty.element))
    if isinstance(ty, TupleType):
        return TupleType(tuple(_strip_defaults(t) for t in ty.elements))
    return ty


# --- tokenizer and parser for HCL type expressions ------------------------------------------

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<ident>[A-Za-z_][A-Za-z0-9_-]*)
      | (?P<number>-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)
      | (?P<string>"(?:[^"\\]|\\.)*")
      | (?P<punct>[(){}\[\],=:])
      | (?P<comment>\#[^\n]*|//[^\n]*|/\*.*?\*/)
    )""",
    re.VERBOSE | re.DOTALL,
)

_ESCAPES = MappingProxyType({"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"})


def _unquote(text: str) -> str:
    body = text[1:-1]
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
                i += 2
                continue
            if nxt == "u" and i + 6 <= len(body):
                out.append(chr(int(body[i + 2 : i + 6], 16)))
                i += 6
                continue
            raise TypeExprError(f"Invalid escape sequence in {text}.")
        if body.startswith("${", i) or body.startswith("%{", i):
            raise TypeExprError("A default value in a type expression must be a constant, without templates.")
        if body.startswith("$${", i) or body.startswith("%%{", i):
            out.append(body[i + 1 : i + 3])
            i += 3
            continue
        out.append(ch)
        i += 1
    return "".join(out)


@dataclass(slots=True)
class _Tok:
    kind: str
    text: str
    newline: bool = False  # a newline comes between this token and the one before it


def _tokenize(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    pos = 0
    newline = False
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            bad = text[pos:].strip()[:1]
            raise TypeExprError(f"Unexpected character {bad!r} in type expression {text!r}.")
        kind = m.lastgroup or ""
        newline = newline or "\n" in text[pos : m.start(kind)]
        pos = m.end()
        if kind == "comment":
            newline = newline or "\n" in m.group(kind)
            continue
        toks.append(_Tok(kind, m.group(kind), newline))
        newline = False
    return toks


_SPEC_HINT = (
    "A type specification is either a primitive type keyword (bool, number, string) or a complex "
    "type constructor call, like list(string)."
)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0

    def peek(self) -> _Tok | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self) -> _Tok:
        tok = self.peek()
        if tok is None:
            raise TypeExprError(f"The type expression {self.text!r} ends too early. {_SPEC_HINT}")
        self.i += 1
        return tok

    def expect(self, punct: str, what: str) -> None:
        tok = self.take()
        if tok.kind != "punct" or tok.text != punct:
            raise TypeExprError(what)

    def separator(self, close: str) -> None:
        """Take the comma after an item of an object or a list; HCL's parser (hclsyntax
        parser.go, ``parseObjectCons``/``parseTupleCons``) also takes a newline, and reports a
        missing one ("Missing attribute separator" / "Missing item separator"), which Terraform's
        type reader gives as an invalid type specification (the JSON syntax's string)."""
        if self.at(","):
            self.take()
            return
        tok = self.peek()
        if tok is not None and not self.at(close) and not tok.newline:
            raise TypeExprError(_SPEC_HINT)

    def at(self, punct: str) -> bool:
        tok = self.peek()
        return tok is not None and tok.kind == "punct" and tok.text == punct

    def type_(self, *, optional_ok: bool = False) -> tuple[Type, bool, JsonValue, bool]:
        """Return (type, is_optional, default, has_default)."""
        tok = self.take()
        if tok.kind != "ident":
            raise TypeExprError(_SPEC_HINT)
        name = tok.text
        if name in _PRIMITIVES or name == "any":
            if self.at("("):
                raise TypeExprError(f'Primitive type keyword "{name}" does not expect arguments.')
            found: Type = _PRIMITIVES.get(name, ANY)
            return found, False, None, False
        if name in _COLLECTIONS or name in ("tuple", "object", "optional"):
            if not self.at("("):
                if name in _COLLECTIONS:
                    raise TypeExprError(
                        f"The {name} type constructor requires one argument specifying the element type."
                    )
                raise TypeExprError(f"The {name} type constructor requires one argument.")
            self.take()
            if name in _COLLECTIONS:
                if self.at(")"):
                    raise TypeExprError(
                        f"The {name} type constructor requires one argument specifying the element type."
                    )
                elem, *_ = self.type_()
                self.expect(")", f"The {name} type constructor requires exactly one argument.")
                return _COLLECTIONS[name](elem), False, None, False
            if name == "tuple":
                elems = self.tuple_body()
                self.expect(")", "The tuple type constructor requires exactly one argument.")
                return TupleType(elems), False, None, False
            if name == "object":
                obj = self.object_body()
                self.expect(")", "The object type constructor requires exactly one argument.")
                return obj, False, None, False
            # optional(...)
            if not optional_ok:
                raise TypeExprError("Optional attribute modifier is only for object attributes.")
            inner, *_ = self.type_()
            if self.at(","):
                self.take()
                default = self.literal()
                self.expect(")", "Optional attribute modifier expects at most two arguments.")
                return inner, True, default, True
            self.expect(")", "Optional attribute modifier expects at most two arguments.")
            return inner, True, None, False
        raise TypeExprError(f'The keyword "{name}" is not a valid type specification.')

    def tuple_body(self) -> tuple[Type, ...]:
        if not self.at("["):
            raise TypeExprError(
                "The tuple type constructor requires one argument specifying the element types as a list."
            )
        self.take()
        elems: list[Type] = []
        while not self.at("]"):
            elem, *_ = self.type_()
            elems.append(elem)
            if self.at(","):
                self.take()
            elif not self.at("]"):
                raise TypeExprError("Tuple element types must be separated by commas.")
        self.take()
        return tuple(elems)

    def object_body(self) -> ObjectType:
        if not self.at("{"):
            raise TypeExprError(
                "Object type constructor requires a map whose keys are attribute names and whose "
                "values are the corresponding attribute types."
            )
        self.take()
        attrs: dict[str, Type] = {}
        optional: set[str] = set()
        defaults: dict[str, JsonValue] = {}
        while not self.at("}"):
            key = self.take()
            if key.kind == "ident":
                name = key.text
            elif key.kind == "string":
                name = _unquote(key.text)
            else:
                raise TypeExprError("Object constructor map keys must be attribute names.")
            tok = self.take()
            if tok.kind != "punct" or tok.text not in ("=", ":"):
                raise TypeExprError(f'Missing "=" after attribute name "{name}" in an object type.')
            if name in attrs:
                raise TypeExprError(f'Attribute "{name}" is defined more than once in an object type.')
            ty, is_opt, default, has_default = self.type_(optional_ok=True)
            attrs[name] = ty
            if is_opt:
                optional.add(name)
            if has_default:
                try:
                    defaults[name] = convert(default, ty)
                except ConversionError as exc:
                    raise TypeExprError(
                        f'Invalid default value for optional attribute "{name}": {exc}.'
                    ) from None
            self.separator("}")
        self.take()
        return ObjectType(tuple(attrs.items()), frozenset(optional), tuple(defaults.items()))

    def literal(self) -> JsonValue:
        tok = self.take()
        if tok.kind == "string":
            return _unquote(tok.text)
        if tok.kind == "number":
            return _number(tok.text)
        if tok.kind == "ident":
            if tok.text in ("true", "false"):
                return tok.text == "true"
            if tok.text == "null":
                return None
            raise TypeExprError(
                f"A default value in a type expression must be a constant; {tok.text!r} is not."
            )
        if tok.text == "[":
            items: list[JsonValue] = []
            while not self.at("]"):
                items.append(self.literal())
                self.separator("]")
            self.take()
            return items
        if tok.text == "{":
            obj: dict[str, JsonValue] = {}
            while not self.at("}"):
                key = self.take()
                if key.kind not in ("ident", "string"):
                    raise TypeExprError("Object keys in a default value must be names or strings.")
                name = _unquote(key.text) if key.kind == "string" else key.text
                sep = self.take()
                if sep.text not in ("=", ":"):
                    raise TypeExprError(f'Missing "=" after key "{name}" in a default value.')
                obj[name] = self.literal()
                self.separator("}")
            self.take()
            return obj
        raise TypeExprError(f"Unexpected {tok.text!r} in a default value.")


def parse_type(text: str) -> Type:
    """Return the type that the type expression ``text`` denotes; raise TypeExprError if invalid.

    The bare keywords ``list`` and ``map`` mean ``list(any)`` and ``map(any)``, as Terraform
    accepts them in a variable's ``type`` (spec §7.3).

    >>> type_string(parse_type("map(list(number))"))
    'map(list(number))'
    """
    stripped = text.strip()
    if stripped == "list":
        return ListType(ANY)
    if stripped == "map":
        return MapType(ANY)
    if not stripped:
        raise TypeExprError(_SPEC_HINT)
    parser = _Parser(text)
    ty, *_ = parser.type_()
    if parser.peek() is not None:
        raise TypeExprError(f"Extra characters after the type expression {text!r}.")
    return ty


# --- values ------------------------------------------------------------------------------------

_NUMBER_RE = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$")


def _number(text: str) -> int | Decimal:
    try:
        value = Decimal(text)
    except InvalidOperation:  # pragma: no cover - guarded by the regexes
        raise ConversionError("a number is required") from None
    if value.is_zero():
        return Decimal("-0") if value.is_signed() else 0  # Terraform keeps the sign of zero
    if value == value.to_integral_value() and abs(value.adjusted()) < 64:
        return int(value)
    return value


def _number_text(value: int | Decimal) -> str:
    if isinstance(value, int):
        return str(value)
    if value.is_zero():
        return "-0" if value.is_signed() else "0"  # tostring(-0) is "-0" in Terraform
    if value == value.to_integral_value() and abs(value.adjusted()) < 64:
        return str(int(value))
    text = format(value.normalize(), "f")
    return text


def _is_number(value: JsonValue) -> bool:
    return isinstance(value, (int, Decimal)) and not isinstance(value, bool)


def _kind(value: JsonValue) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if _is_number(value):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "tuple"
    return "object"


def _fail(path: str, message: str) -> ConversionError:
    return ConversionError(f"{path}: {message}" if path else message)


def has_any(ty: Type) -> bool:
    """Whether ``any`` appears anywhere in ``ty`` (its conversions then decide types from values)."""
    if isinstance(ty, AnyType):
        return True
    if isinstance(ty, (ListType, SetType, MapType)):
        return has_any(ty.element)
    if isinstance(ty, TupleType):
        return any(has_any(e) for e in ty.elements)
    if isinstance(ty, ObjectType):
        return any(has_any(t) for _, t in ty.attributes)
    return False


def _required(ty: Type) -> str:
    """cty's mismatch wording: "string required", "list of number required", …"""
    if isinstance(ty, Primitive):
        return f"{ty.name} required"
    if isinstance(ty, ListType):
        return f"list of {type_string(ty.element)} required"
    if isinstance(ty, SetType):
        return f"set of {type_string(ty.element)} required"
    if isinstance(ty, MapType):
        return f"map of {type_string(ty.element)} required"
    if isinstance(ty, TupleType):
        return "tuple required"
    return "object required"


def _infer(value: JsonValue) -> Type | None:
    """The type of a value as cty sees a literal (None for null: it unifies with anything)."""
    kind = _kind(value)
    if kind == "null":
        return None
    if kind in _PRIMITIVES:
        return _PRIMITIVES[kind]
    if isinstance(value, list):
        return TupleType(tuple(_infer(v) or ANY for v in value))
    assert isinstance(value, dict)
    return ObjectType(tuple((k, _infer(v) or ANY) for k, v in value.items()))


def _unify(types: list[Type]) -> Type | None:
    """cty's ``unify``: one type every given type converts to, or None."""
    concrete = [t for t in types if not isinstance(t, AnyType)]
    if not concrete:
        return ANY
    first = concrete[0]
    if all(t == first for t in concrete):
        return first
    if all(isinstance(t, Primitive) for t in concrete):
        kinds = {t.name for t in concrete if isinstance(t, Primitive)}
        return STRING if "string" in kinds else None
    if all(isinstance(t, (ObjectType, MapType)) for t in concrete):
        objs = [t for t in concrete if isinstance(t, ObjectType)]
        if len(objs) == len(concrete) and len({tuple(sorted(o.attribute_map)) for o in objs}) == 1:
            names = [n for n, _ in objs[0].attributes]
            attrs: list[tuple[str, Type]] = []
            for name in names:
                u = _unify([o.attribute_map[name] for o in objs])
                if u is None:
                    return None
                attrs.append((name, u))
            return ObjectType(tuple(attrs))
        elems: list[Type] = []
        for t in concrete:
            if isinstance(t, ObjectType):
                elems.extend(a for _, a in t.attributes)
            elif isinstance(t, MapType):
                elems.append(t.element)
        u = _unify(elems)
        return MapType(u) if u is not None else None
    if all(isinstance(t, (TupleType, ListType)) for t in concrete):
        tuples = [t for t in concrete if isinstance(t, TupleType)]
        if len(tuples) == len(concrete) and len({len(t.elements) for t in tuples}) == 1:
            parts: list[Type] = []
            for i in range(len(tuples[0].elements)):
                u = _unify([t.elements[i] for t in tuples])
                if u is None:
                    return None
                parts.append(u)
            return TupleType(tuple(parts))
        elems = []
        for t in concrete:
            if isinstance(t, TupleType):
                elems.extend(t.elements)
            elif isinstance(t, ListType):
                elems.append(t.element)
        u = _unify(elems)
        return ListType(u) if u is not None else None
    return None


def _convert_elements(values: list[JsonValue], elem: Type, path: str, what: str) -> list[JsonValue]:
    out = [_convert(v, elem, f"{path}[{i}]" if path else f"{what} {i}") for i, v in enumerate(values)]
    if has_any(elem) and len(out) > 1:
        inferred = [t for t in (_infer(v) for v in out) if t is not None]
        unified = _unify(inferred) if inferred else ANY
        if unified is None:
            raise _fail(path, "all elements must have the same type")
        if not isinstance(unified, AnyType):
            out = [_convert(v, unified, path) for v in out]
    return out


def _convert(value: JsonValue, ty: Type, path: str) -> JsonValue:
    if value is None or isinstance(ty, AnyType):
        return value
    kind = _kind(value)
    if isinstance(ty, Primitive):
        if ty.name == "string":
            if kind == "string":
                return value
            if kind == "number":
                assert isinstance(value, (int, Decimal))
                return _number_text(value)
            if kind == "bool":
                return "true" if value else "false"
            raise _fail(path, "string required")
        if ty.name == "number":
            if kind == "number":
                return value
            if kind == "string":
                assert isinstance(value, str)
                if _NUMBER_RE.match(value):
                    return _number(value)
                raise _fail(path, "a number is required")
            raise _fail(path, "number required")
        if kind == "bool":
            return value
        if kind == "string":
            assert isinstance(value, str)
            if value in ("true", "1"):
                return True
            if value in ("false", "0"):
                return False
            if value.lower() in ("true", "false"):
                hint = f'use lowercase "{value.lower()}"'
                raise _fail(path, f"a bool is required; to convert from string, {hint}")
            raise _fail(path, "a bool is required")
        raise _fail(path, "bool required")
    if isinstance(ty, (ListType, SetType)):
        if not isinstance(value, list):
            raise _fail(path, _required(ty))
        out = _convert_elements(value, ty.element, path, "element")
        if isinstance(ty, SetType):
            unique: list[JsonValue] = []
            for item in out:
                if not any(_same(item, seen) for seen in unique):
                    unique.append(item)
            out = unique
        return out
    if isinstance(ty, MapType):
        if not isinstance(value, dict):
            raise _fail(path, _required(ty))
        keys = list(value)
        converted = _convert_elements([value[k] for k in keys], ty.element, path, "element")
        return dict(zip(keys, converted, strict=True))
    if isinstance(ty, TupleType):
        if not isinstance(value, list):
            raise _fail(path, _required(ty))
        if len(value) != len(ty.elements):
            raise _fail(path, f"tuple required with exactly {len(ty.elements)} elements")
        pairs = enumerate(zip(value, ty.elements, strict=True))
        return [_convert(v, t, f"{path}[{i}]" if path else f"element {i}") for i, (v, t) in pairs]
    assert isinstance(ty, ObjectType)
    if not isinstance(value, dict):
        raise _fail(path, _required(ty))
    result: dict[str, JsonValue] = {}
    for name, attr_ty in ty.attributes:
        if name not in value:
            if name in ty.optional:
                result[name] = None
                continue
            raise _fail(path, f'attribute "{name}" is required')
        result[name] = _convert(value[name], attr_ty, f"{path}.{name}" if path else f"attribute {name!r}")
    return result


def _same(a: JsonValue, b: JsonValue) -> bool:
    return _kind(a) == _kind(b) and a == b


def convert(value: JsonValue, ty: Type) -> JsonValue:
    """Return ``value`` converted to ``ty`` as cty's ``convert.Convert`` does, or raise ConversionError.

    Null converts to every type. Numbers, strings and bools convert among each other as cty
    converts them (``"1"``/``"true"`` to bool, numbers to their shortest decimal string).
    Objects lose attributes the type does not name; a missing optional attribute becomes null.

    >>> convert(["1", 2], parse_type("list(number)"))
    [1, 2]
    """
    return _convert(value, ty, "")


def apply_defaults(value: JsonValue, ty: Type) -> JsonValue:
    """Return ``value`` with the optional-attribute defaults of ``ty`` filled in (``Defaults.Apply``).

    Null stays null: a null default is how a nullable variable opts out.
    """
    if value is None:
        return None
    if isinstance(ty, ObjectType) and isinstance(value, dict):
        out = dict(value)
        defaults = dict(ty.defaults)
        for name, attr_ty in ty.attributes:
            if name in defaults and out.get(name) is None:
                out[name] = defaults[name]
            if name in out:
                out[name] = apply_defaults(out[name], attr_ty)
        return out
    if isinstance(ty, (ListType, SetType)) and isinstance(value, list):
        return [apply_defaults(v, ty.element) for v in value]
    if isinstance(ty, MapType) and isinstance(value, dict):
        return {k: apply_defaults(v, ty.element) for k, v in value.items()}
    if isinstance(ty, TupleType) and isinstance(value, list) and len(value) == len(ty.elements):
        return [apply_defaults(v, t) for v, t in zip(value, ty.elements, strict=True)]
    return value
