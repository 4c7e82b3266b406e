"""Type constraint expressions and default-value conversion (spec §3.4, §7.3): tables, as packaging does."""

from __future__ import annotations

from decimal import Decimal

import pytest

from flatten.lang.model import JsonValue
from flatten.lang.types import (
    ANY,
    NUMBER,
    STRING,
    ConversionError,
    ListType,
    MapType,
    ObjectType,
    TypeExprError,
    apply_defaults,
    convert,
    parse_type,
    type_string,
)

VALID = [
    ("string", "string"),
    ("number", "number"),
    ("bool", "bool"),
    ("any", "any"),
    ("list", "list(any)"),
    ("map", "map(any)"),
    ("list(string)", "list(string)"),
    ("set(number)", "set(number)"),
    ("map(list(bool))", "map(list(bool))"),
    ("tuple([string, number])", "tuple([string, number])"),
    ("tuple([])", "tuple([])"),
    ("object({})", "object({})"),
    ("object({a = string, b = number})", "object({a = string, b = number})"),
    ('object({"a" = string})', "object({a = string})"),
    ("object({a: string})", "object({a = string})"),
    ("object({\n  a = string\n  b = optional(number)\n})", "object({a = string, b = optional(number)})"),
    (
        'list(object({a = optional(string, "x"), b = number}))',
        "list(object({a = optional(string), b = number}))",
    ),
    ("object({a = optional(list(string), [])})", "object({a = optional(list(string))})"),
    (" string ", "string"),
]

INVALID = [
    ("", "type specification"),
    ("strin", 'The keyword "strin" is not a valid type specification.'),
    ("list()", "requires one argument"),
    ("list(string, number)", "exactly one argument"),
    ("set", "requires one argument"),
    ("string(x)", "does not expect arguments"),
    ("optional(string)", "only for object attributes"),
    ("list(optional(string))", "only for object attributes"),
    ("object(string)", "Object type constructor requires a map"),
    ("tuple(string)", "tuple type constructor requires one argument"),
    ("object({a = string, a = number})", "more than once"),
    ('object({a = optional(number, "x")})', "Invalid default value for optional attribute"),
    ("object({a = optional(string, x)})", "must be a constant"),
    ("list(string) extra", "Extra characters"),
    ("list(string", "ends too early"),
    ('"string"', "type specification"),
]


@pytest.mark.parametrize(("text", "canonical"), VALID, ids=[v[0].replace("\n", " ") for v in VALID])
def test_valid_type_expressions(text: str, canonical: str) -> None:
    assert type_string(parse_type(text)) == canonical


@pytest.mark.parametrize(("text", "message"), INVALID, ids=[v[0] or "<empty>" for v in INVALID])
def test_invalid_type_expressions(text: str, message: str) -> None:
    with pytest.raises(TypeExprError, match=None) as info:
        parse_type(text)
    assert message in str(info.value)


CONVERSIONS: list[tuple[str, JsonValue, str, JsonValue]] = [
    ("null-to-anything", None, "list(string)", None),
    ("string-stays", "x", "string", "x"),
    ("number-to-string", 1, "string", "1"),
    ("decimal-to-string", Decimal("1.50"), "string", "1.5"),
    ("bool-to-string", True, "string", "true"),
    ("string-to-number", "01", "number", 1),
    ("string-to-decimal", "1.25", "number", Decimal("1.25")),
    ("string-exponent-to-number", "1e3", "number", 1000),
    ("string-to-bool-true", "true", "bool", True),
    ("string-one-to-bool", "1", "bool", True),
    ("string-zero-to-bool", "0", "bool", False),
    ("any-keeps-value", {"a": [1, "x"]}, "any", {"a": [1, "x"]}),
    ("tuple-to-list", ["a", 1], "list(string)", ["a", "1"]),
    ("tuple-to-set-dedupes", ["a", "a", "b"], "set(string)", ["a", "b"]),
    ("object-to-map", {"a": 1, "b": 2}, "map(number)", {"a": 1, "b": 2}),
    ("object-to-map-of-any-unifies", {"a": 1, "b": "x"}, "map(any)", {"a": "1", "b": "x"}),
    ("list-of-any-unifies", [1, "x"], "list(any)", ["1", "x"]),
    ("tuple-to-tuple", ["1", "2"], "tuple([number, string])", [1, "2"]),
    ("object-drops-extra", {"a": "x", "z": 1}, "object({a = string})", {"a": "x"}),
    (
        "object-optional-missing-is-null",
        {"a": "x"},
        "object({a = string, b = optional(number)})",
        {"a": "x", "b": None},
    ),
    ("nested", {"a": [{"b": "1"}]}, "object({a = list(object({b = number}))})", {"a": [{"b": 1}]}),
]

FAILURES: list[tuple[str, JsonValue, str, str]] = [
    ("list-to-string", ["x"], "string", "string required"),
    ("object-to-number", {}, "number", "number required"),
    ("word-to-number", "abc", "number", "a number is required"),
    ("number-to-bool", 1, "bool", "bool required"),
    ("word-to-bool", "yes", "bool", "a bool is required"),
    ("capital-true", "True", "bool", 'use lowercase "true"'),
    ("string-to-list", "x", "list(string)", "list of string required"),
    ("tuple-to-map", ["x"], "map(string)", "map of string required"),
    ("missing-attribute", {}, "object({a = string})", 'attribute "a" is required'),
    ("tuple-length", [1], "tuple([number, number])", "exactly 2 elements"),
    ("element", [[1]], "list(string)", "element 0: string required"),
    ("mixed-any", [1, [2]], "list(any)", "same type"),
    ("bool-and-number-any", [True, 1], "list(any)", "same type"),
]


@pytest.mark.parametrize(
    ("value", "type_", "expected"), [c[1:] for c in CONVERSIONS], ids=[c[0] for c in CONVERSIONS]
)
def test_conversions(value: JsonValue, type_: str, expected: JsonValue) -> None:
    got = convert(value, parse_type(type_))
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize(
    ("value", "type_", "message"), [c[1:] for c in FAILURES], ids=[c[0] for c in FAILURES]
)
def test_conversion_failures(value: JsonValue, type_: str, message: str) -> None:
    with pytest.raises(ConversionError) as info:
        convert(value, parse_type(type_))
    assert message in str(info.value)


DEFAULTS: list[tuple[str, JsonValue, str, JsonValue]] = [
    ("fills-missing", {"b": 1}, 'object({a = optional(string, "x"), b = number})', {"b": 1, "a": "x"}),
    ("fills-null", {"a": None}, 'object({a = optional(string, "x")})', {"a": "x"}),
    ("keeps-set", {"a": "y"}, 'object({a = optional(string, "x")})', {"a": "y"}),
    ("inside-list", [{}], "list(object({a = optional(number, 1)}))", [{"a": 1}]),
    ("inside-map", {"k": {}}, "map(object({a = optional(bool, true)}))", {"k": {"a": True}}),
    (
        "nested-default",
        {},
        'object({o = optional(object({a = optional(string, "z")}), {})})',
        {"o": {"a": "z"}},
    ),
    ("null-stays-null", None, 'object({a = optional(string, "x")})', None),
    ("converted-default", {}, "object({a = optional(string, 1)})", {"a": "1"}),
]


@pytest.mark.parametrize(
    ("value", "type_", "expected"), [c[1:] for c in DEFAULTS], ids=[c[0] for c in DEFAULTS]
)
def test_apply_defaults(value: JsonValue, type_: str, expected: JsonValue) -> None:
    assert apply_defaults(value, parse_type(type_)) == expected


def test_type_values() -> None:
    assert parse_type("list(any)") == ListType(ANY)
    assert parse_type("map(number)") == MapType(NUMBER)
    obj = parse_type('object({a = optional(string, "x")})')
    assert isinstance(obj, ObjectType)
    assert obj.attribute_map == {"a": STRING} and obj.optional == {"a"} and dict(obj.defaults) == {"a": "x"}
