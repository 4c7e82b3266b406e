"""Tests for flatten.syntax.jsonsyntax: JSON parsing, positions, block structure and diagnostics (spec §7)."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flatten.lang.model import Attribute, Block, Body, JsonValue
from flatten.lang.options import Dialect, Options
from flatten.syntax.jsonsyntax import parse_json

OPTS = Options()


def parse(text: str, dialect: Dialect = Dialect.TERRAFORM) -> tuple[Body, list[tuple[str, int, int, int]]]:
    body, diags = parse_json(text, "main.tf.json", options=Options(dialect=dialect))
    out = []
    for d in diags:
        assert d.range is not None
        out.append((d.summary, d.range.start.line, d.range.start.column, d.range.start.byte))
    return body, out


def local(text: str) -> JsonValue:
    body, diags = parse(text)
    assert diags == []
    attr = body.blocks[0].body.attribute("v")
    assert attr is not None
    return attr.value


def shape(item: Attribute | Block) -> Any:
    if isinstance(item, Attribute):
        return (item.name, item.value)
    return (item.address, [shape(i) for i in item.body.items])


def shapes(text: str, dialect: Dialect = Dialect.TERRAFORM) -> list[Any]:
    body, diags = parse(text, dialect)
    assert diags == []
    return [shape(i) for i in body.items]


@pytest.mark.parametrize(
    ("src", "expected"),
    [
        ("0.1000000000000000055511151231257827", Decimal("0.1000000000000000055511151231257827")),
        ("12345678901234567890", 12345678901234567890),
        ("1e400", Decimal("1e400")),
        ("-0.5E-3", Decimal("-0.0005")),
        ("-7", -7),
        ('"a\\u00e9\\n\\"b"', 'aé\n"b'),
        ('"\\ud83d\\ude00"', "\U0001f600"),
        ('"\\ud800x"', "\ufffdx"),
        ('"\\udc00\\ud800"', "\ufffd\ufffd"),
        ('{"//": 1, "${k}": [null, true, false]}', {"//": 1, "${k}": [None, True, False]}),
        ('{"a": 1, "b": {"c": []}}', {"a": 1, "b": {"c": []}}),
        ("[]", []),
        ("{}", {}),
    ],
    ids=lambda v: repr(v)[:30],
)
def test_values_are_exact(src: str, expected: JsonValue) -> None:
    value = local('{"locals": {"v": ' + src + "}}")
    assert value == expected
    assert type(value) is type(expected)


@pytest.mark.parametrize(
    ("src", "expected"),
    [
        ('{"locals": {"v": 1}, "locals": {"w": 2}}', [("locals", [("v", 1)]), ("locals", [("w", 2)])]),
        ('[{"locals": {"v": 1}}, {"locals": {"w": 2}}]', [("locals", [("v", 1)]), ("locals", [("w", 2)])]),
        ('{"locals": [{"v": 1}, {"w": 2}]}', [("locals", [("v", 1)]), ("locals", [("w", 2)])]),
        ('{"locals": null, "moved": null}', []),
        ('{"//": "c", "locals": {"//": "c", "v": {"//": "kept"}}}', [("locals", [("v", {"//": "kept"})])]),
        (
            '{"variable": {"a": {}, "b": {"type": "string"}}}',
            [("variable.a", []), ("variable.b", [("type", "string")])],
        ),
        ('{"variable": [{"a": {}}, {"b": {}}]}', [("variable.a", []), ("variable.b", [])]),
        ('{"variable": {"a": null}}', []),
        ('{"resource": {"//": {"x": {}}}}', [("resource.//.x", [])]),
        (
            '{"provider": {"aws": [{"region": "x"}, {"alias": "w"}]}}',
            [("provider.aws", [("region", "x")]), ("provider.aws", [("alias", "w")])],
        ),
        (
            '{"resource": {"t": {"a": {"tags": {"k": "v"}}, "b": {}}}, "data": {"d": {"n": {}}}}',
            [("resource.t.a", [("tags", {"k": "v"})]), ("resource.t.b", []), ("data.d.n", [])],
        ),
        (
            '{"check": {"c": {"data": {"t": {"n": {"x": 1}}}, "assert": [{"condition": "${true}"}, {}]}}}',
            [("check.c", [("data.t.n", [("x", 1)]), ("assert", [("condition", "${true}")]), ("assert", [])])],
        ),
        (
            '{"resource": {"t": {"n": {"provisioner": [{"local-exec": {"command": "a"}}, {"file": {}}],'
            ' "lifecycle": {"create_before_destroy": true}, "connection": {"type": "ssh"}}}}}',
            [
                (
                    "resource.t.n",
                    [
                        ("provisioner.local-exec", [("command", "a")]),
                        ("provisioner.file", []),
                        ("lifecycle", [("create_before_destroy", True)]),
                        ("connection", [("type", "ssh")]),
                    ],
                )
            ],
        ),
        (
            '{"resource": {"t": {"n": {"dynamic": {"setting": {"for_each": "${x}", "iterator": "s",'
            ' "content": {"name": "${s.value}", "dynamic": {"inner": {"content": {}}}}}}}}}}',
            [
                (
                    "resource.t.n",
                    [
                        (
                            "dynamic.setting",
                            [
                                ("for_each", "${x}"),
                                ("iterator", "s"),
                                ("content", [("name", "${s.value}"), ("dynamic.inner", [("content", [])])]),
                            ],
                        )
                    ],
                )
            ],
        ),
        (
            '{"resource": {"t": {"n": {"ebs": {"a": 1}, "ebs": [{"b": 2}, {"c": 3}], "x": [1]}}}}',
            [("resource.t.n", [("ebs", [{"a": 1}, {"b": 2}, {"c": 3}]), ("x", [1])])],
        ),
        (
            '{"terraform": {"required_providers": {"//": 1, "aws": {"source": "hashicorp/aws"}},'
            ' "backend": {"s3": {"bucket": "b"}}}}',
            [
                (
                    "terraform",
                    [
                        ("required_providers", [("aws", {"source": "hashicorp/aws"})]),
                        ("backend.s3", [("bucket", "b")]),
                    ],
                )
            ],
        ),
        (
            '{"module": {"m": {"source": "./m", "providers": {"aws.dst": "aws.west"}, "input": {"a": [1]}}}}',
            [
                (
                    "module.m",
                    [("source", "./m"), ("providers", {"aws.dst": "aws.west"}), ("input", {"a": [1]})],
                )
            ],
        ),
        (
            '{"moved": [{"from": "a.b", "to": "a.c"}], "import": {"to": "a.b", "id": "i"},'
            ' "removed": {"from": "a.b", "lifecycle": {"destroy": false}}}',
            [
                ("moved", [("from", "a.b"), ("to", "a.c")]),
                ("import", [("to", "a.b"), ("id", "i")]),
                ("removed", [("from", "a.b"), ("lifecycle", [("destroy", False)])]),
            ],
        ),
        (
            '{"output": {"o": {"value": "${1}", "precondition": [{"condition": "x"}]}}}',
            [("output.o", [("value", "${1}"), ("precondition", [("condition", "x")])])],
        ),
    ],
)
def test_block_shapes(src: str, expected: list[Any]) -> None:
    assert shapes(src) == expected


def test_opentofu_blocks() -> None:
    assert shapes('{"language": {"edition": "tofu2024"}}', Dialect.OPENTOFU) == [
        ("language", [("edition", "tofu2024")])
    ]
    _, diags = parse('{"language": {}}')
    assert diags[0][0] == "Extraneous JSON object property"


# Every error HCL reports, with its recovery (hashicorp/hcl json/parser.go: a value that fails
# becomes an invalid value and its container goes on), as `terraform validate -json` (1.11) gives them.
SYNTAX = [
    (
        '{"locals": {"a": 1,}}',
        [("Trailing comma in object", 1, 19, 18), ("Incorrect JSON value type", 1, 12, 11)],
    ),
    (
        '{"locals": [1,]}',
        [
            ("Trailing comma in array", 1, 14, 13),
            ("Mismatched braces", 1, 16, 15),
            ("Root value must be object", 1, 1, 0),
        ],
    ),
    ('{"locals": {"a": NaN}}', [("Invalid JSON keyword", 1, 18, 17)]),
    ('{"locals": {"a": True}}', [("Invalid JSON keyword", 1, 18, 17)]),
    ('{"locals": {"a": 01}}', [("Invalid JSON number", 1, 18, 17)]),
    ('{"locals": {"a": 1.}}', [("Invalid JSON number", 1, 18, 17)]),
    ('{"locals": {"a": "x\\q"}}', [("Invalid JSON string", 1, 22, 21)]),
    (
        '{"locals": {"a": "x\n"}}',
        [
            ("Invalid JSON string", 1, 20, 19),
            ("Missing attribute seperator comma", 2, 4, 23),
            ("Unclosed object", 1, 1, 0),
            ("Root value must be object", 1, 1, 0),
        ],
    ),
    ('{"a" 1}', [("Missing property value colon", 1, 6, 5), ("Root value must be object", 1, 1, 0)]),
    ('{"a" = 1}', [("Missing property value colon", 1, 6, 5), ("Root value must be object", 1, 1, 0)]),
    ('{"a"}', [("Missing object value", 1, 5, 4), ("Root value must be object", 1, 1, 0)]),
    ('{"a": }', [("Missing JSON value", 1, 7, 6), ("Extraneous JSON object property", 1, 2, 1)]),
    ("[1, ]", [("Trailing comma in array", 1, 3, 2), ("Root value must be object", 1, 1, 0)]),
    (
        "[,]",
        [
            ("Invalid start of value", 1, 2, 1),
            ("Trailing comma in array", 1, 2, 1),
            ("Root value must be object", 1, 1, 0),
        ],
    ),
    ("{1: 2}", [("Invalid object property name", 1, 2, 1), ("Root value must be object", 1, 1, 0)]),
    (
        '{"a": 1 "b": 2}',
        [("Missing attribute seperator comma", 1, 16, 15), ("Root value must be object", 1, 1, 0)],
    ),
    ("[1 2]", [("Missing attribute seperator comma", 1, 6, 5), ("Root value must be object", 1, 1, 0)]),
    ('{"a": 1]', [("Mismatched braces", 1, 9, 8), ("Root value must be object", 1, 1, 0)]),
    ("[1}", [("Mismatched brackets", 1, 4, 3), ("Root value must be object", 1, 1, 0)]),
    ("[1: 2]", [("Invalid array value", 1, 7, 6), ("Root value must be object", 1, 1, 0)]),
    ('{"a": 1', [("Unclosed object", 1, 1, 0), ("Root value must be object", 1, 1, 0)]),
    ("[1", [("Unclosed object", 1, 1, 0), ("Root value must be object", 1, 1, 0)]),
    ("", [("Missing value", 1, 1, 0), ("Root value must be object", 1, 1, 0)]),
    ("  \n ", [("Missing value", 2, 2, 4), ("Root value must be object", 2, 2, 4)]),
    ("{} {}", [("Extraneous data after value", 1, 4, 3)]),
    ("{} // c", [("Extraneous data after value", 1, 4, 3)]),
    ("@", [("Invalid start of value", 1, 1, 0), ("Root value must be object", 1, 1, 0)]),
    (
        '{"a": [@]}',
        [
            ("Invalid start of value", 1, 8, 7),
            ("Missing attribute seperator comma", 1, 9, 8),
            ("Unclosed object", 1, 1, 0),
            ("Root value must be object", 1, 1, 0),
        ],
    ),
    ('"x"', [("Root value must be object", 1, 1, 0)]),
    ("null", [("Root value must be object", 1, 1, 0)]),
    (
        "[" * 100_000,
        [("Nesting too deep", 1, 501, 500)],
    ),
    (
        "[" * 100_000 + "]" * 100_000,
        [("Nesting too deep", 1, 501, 500)],
    ),
    (
        '{"locals": {"v": ' + "[" * 600 + "]" * 600 + "}}",
        [("Nesting too deep", 1, 516, 515)],
    ),
]


@pytest.mark.parametrize(("src", "expected"), SYNTAX, ids=[s[:24] for s, _ in SYNTAX])
def test_syntax_errors(src: str, expected: list[tuple[str, int, int, int]]) -> None:
    body, diags = parse(src)
    assert diags == expected
    if any(d[0] == "Root value must be object" for d in expected):
        assert body == Body()


STRUCTURE = [
    ('{"resourc": {}}', [("Extraneous JSON object property", 1, 2, 1)], 'Did you mean "resource"?'),
    ('{"output": {}}', [("Missing block label", 1, 12, 11)], "output block's name"),
    ('{"module": null}', [("Missing block label", 1, 12, 11)], "module block's name"),
    ('{"data": {"a": []}}', [("Missing block label", 1, 16, 15)], "data block's name"),
    ('{"locals": "x"}', [("Incorrect JSON value type", 1, 12, 11)], 'more "locals" blocks'),
    ('{"variable": {"a": 1}}', [("Incorrect JSON value type", 1, 20, 19)], 'more "variable" blocks'),
    (
        '{"variable": "a"}',
        [("Incorrect JSON value type", 1, 14, 13), ("Missing block label", 1, 14, 13)],
        "to specify name",
    ),
    ('{"variable": [1]}', [("Incorrect JSON value type", 1, 15, 14), ("Missing block label", 1, 14, 13)], ""),
    ("[1]", [("Incorrect JSON value type", 1, 2, 1)], "to define arguments and child blocks"),
    ('{"moved": [1]}', [("Incorrect JSON value type", 1, 12, 11)], "to define arguments and child blocks"),
    ('{"locals": [[{"a": 1}]]}', [("Incorrect JSON value type", 1, 13, 12)], "setting the arguments"),
    ('{"variable": {"a": {"bogus": 1}}}', [("Extraneous JSON object property", 1, 21, 20)], '"bogus".'),
    ('{"variable": {"a": {"typ": 1}}}', [("Extraneous JSON object property", 1, 21, 20)], 'mean "type"?'),
    (
        '{"locals": {"a": 1, "a": 2}}',
        [("Duplicate attribute definition", 1, 21, 20)],
        "main.tf.json:1,13-19.",
    ),
    (
        '{"terraform": {"required_providers": {"a": "1", "a": "2"}}}',
        [("Duplicate attribute definition", 1, 49, 48)],
        "",
    ),
    ('{"variable": {"a": {"type": "x",\n "type": "y"}}}', [("Duplicate argument", 2, 2, 34)], ":1,21-32."),
    ('{"resource": {"t": {"n": {"x": 1, "x": 2}}}}', [("Duplicate argument", 1, 35, 34)], ""),
    ('{"resource": {"t": {"n": {"x": {}, "x": 2}}}}', [("Duplicate argument", 1, 36, 35)], ""),
    ('{"resource": {"t": {"n": {"count": {}, "count": {}}}}}', [("Duplicate argument", 1, 40, 39)], ""),
    ('{"locals": {"v": {"k": 1, "k": 2}}}', [("Duplicate object attribute", 1, 32, 31)], '"k"'),
    (
        '{"resource": {"t": {"n": {"provider": "${aws.w}"}}}}',
        [("Invalid provider configuration reference", 1, 39, 38)],
        "",
    ),
    ('{"resource": {"t": {"n": {"depends_on": ["${a.b}"]}}}}', [("Invalid expression", 1, 42, 41)], "static"),
    ('{"output": {"o": {"depends_on": "a.b"}}}', [("Invalid expression", 1, 33, 32)], "static list"),
    ('{"moved": {"from": "${a.b}", "to": "a.c"}}', [("Invalid expression", 1, 20, 19)], ""),
    ('{"removed": {"from": "${a.b}"}}', [("Invalid expression", 1, 22, 21)], ""),
    (
        '{"import": {"to": "${a.b}", "id": "x"}}',
        [("Invalid character", 1, 19, 18), ("Invalid expression", 1, 19, 18)],
        "",
    ),
    (
        '{"module": {"m": {"providers": {"${a}": "a", "b": "${b}"}}}}',
        [("Invalid provider configuration reference", 1, 33, 32)] * 1
        + [("Invalid provider configuration reference", 1, 51, 50)],
        "The providers argument",
    ),
    (
        '{"terraform": {"required_providers": {"a": {"configuration_aliases": ["${a.b}"]}}}}',
        [("Invalid expression", 1, 71, 70)],
        "",
    ),
    (
        '{"resource": {"t": {"n": {"lifecycle": {"ignore_changes": ["*", "${a}"]}}}}}',
        [("Invalid ignore_changes wildcard", 1, 59, 58), ("Invalid expression", 1, 65, 64)],
        "",
    ),
    ('{"resource": {"t": {"n": {"lifecycle": {"ignore_changes": "all"}}}}}', [], ""),
]


@pytest.mark.parametrize(("src", "expected", "detail"), STRUCTURE, ids=[s[:40] for s, _, _ in STRUCTURE])
def test_structure_diagnostics(src: str, expected: list[tuple[str, int, int, int]], detail: str) -> None:
    _, diags = parse(src)
    assert diags == expected
    if detail:
        _, full = parse_json(src, "main.tf.json", options=OPTS)
        assert detail in full[0].detail


def pos(r: Any) -> tuple[int, int, int, int, int, int]:
    return (r.start.line, r.start.column, r.start.byte, r.end.line, r.end.column, r.end.byte)


@pytest.mark.parametrize(
    ("prefix", "line", "column", "byte"),
    [
        ("", 1, 1, 0),
        ("\ufeff", 1, 1, 3),
        ("\n\n  ", 3, 3, 4),
        ("\t", 1, 3, 1),
        ("\r\n", 2, 1, 2),
    ],
    ids=["plain", "bom", "lines", "tab", "crlf"],
)
def test_positions(prefix: str, line: int, column: int, byte: int) -> None:
    src = prefix + '{"locals": {"é😀": "ü", "v": 1}, "resource": {"t": {"n": [{}]}}}'
    body, diags = parse_json(src, "main.tf.json", options=OPTS)
    assert list(diags) == []
    locals_, res = body.blocks

    def at(col: int, byte: int) -> tuple[int, int, int]:
        return (line, column + col - 1, byte + byte_)

    byte_ = byte
    assert pos(locals_.range) == (*at(12, 11), *at(13, 12))
    first, second = locals_.body.attributes
    assert pos(first.name_range) == (*at(13, 12), *at(17, 20))  # "é😀": 2 characters, 6 bytes
    assert pos(first.expr.range) == (*at(19, 22), *at(22, 26))
    assert pos(second.name_range) == (*at(24, 28), *at(27, 31))
    assert pos(second.expr.range) == (*at(29, 33), *at(30, 34))
    assert res.labels == ("t", "n")
    assert [pos(r) for r in res.label_ranges] == [(*at(46, 50), *at(49, 53)), (*at(52, 56), *at(55, 59))]
    assert pos(res.range) == (*at(57, 61), *at(58, 62))  # the array's bracket, as HCL's DefRange
    assert res.body.range is not None and pos(res.body.range) == (*at(58, 62), *at(60, 64))


@pytest.mark.parametrize("path", ["tests/data/jsonsyntax/full.tf.json"])
def test_data_file(path: str) -> None:
    with open(path, encoding="utf-8") as f:
        body, diags = parse_json(f.read(), "full.tf.json", options=OPTS)
    assert list(diags) == []
    assert [b.address for b in body.blocks] == [
        "terraform",
        "provider.aws",
        "variable.v",
        "locals",
        "resource.aws_instance.web",
        "data.aws_ami.a",
        "module.m",
        "output.o",
        "check.c",
    ]


def generated(size: int) -> str:
    resources = {}
    i = 0
    while len(json.dumps(resources)) < size:
        for _ in range(100):
            resources[f"r{i}"] = {
                "ami": "ami-123456",
                "count": 2,
                "tags": {"Name": f"web-{i}", "x": [1.5, True, None]},
                "depends_on": ["aws_vpc.main"],
                "lifecycle": {"ignore_changes": ["tags"]},
            }
            i += 1
    return json.dumps({"resource": {"aws_instance": resources}}, indent=2)


def test_large_file_loads_every_block() -> None:
    # Speed is measured in scripts/bench, never here; this checks a 1 MB file loads completely.
    text = generated(1_000_000)
    body, diags = parse_json(text, "big.tf.json", options=OPTS)
    assert list(diags) == [] and len(body.blocks) > 1000


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)


# A JSON string is a template (hcl/json/structure.go, issue 40): text holding "${" or "%{" is read
# as one, and is an error where it is no template ("%{" alone: "Invalid template directive", as
# `terraform validate` says; test_strings_of_expressions_are_templates). The round trip is of
# literal values: strings and keys that start no template sequence.
_LITERAL_TEXT = st.text().filter(lambda s: "${" not in s and "%{" not in s)
LITERAL_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _LITERAL_TEXT,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(_LITERAL_TEXT.filter(lambda s: len(s) <= 5), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(LITERAL_VALUES)
def test_locals_value_roundtrip(value: Any) -> None:
    text = json.dumps({"locals": {"v": value}}, ensure_ascii=bool(len(str(value)) % 2))
    expected = json.loads(json.dumps(value), parse_float=Decimal)
    assert local(text) == expected


TOP_KEYS = st.sampled_from(
    ["locals", "resource", "variable", "module", "check", "moved", "bogus", "//", "dynamic"]
)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(TOP_KEYS, JSON_VALUES, max_size=4)
    | st.lists(st.dictionaries(TOP_KEYS, JSON_VALUES))
    | JSON_VALUES
)
def test_never_raises(doc: Any) -> None:
    text = json.dumps(doc)
    for cut in (len(text), len(text) // 2):
        body, diags = parse_json(text[:cut], "x.tf.json", options=OPTS)
        assert isinstance(body, Body)
        assert all(d.range is not None for d in diags)


def _recovered(text: str, resume: bool) -> tuple[Any, list[tuple[str, int, int]]]:
    """The recovering parser's tree and errors, from the start or resumed where _tree stopped."""
    from flatten.syntax import jsonsyntax

    try:
        jsonsyntax._tree(text, 0)
    except jsonsyntax._SyntaxError as exc:
        read = exc.open if resume else None
    else:
        read = None

    def tree(node: Any) -> Any:
        if node.kind == jsonsyntax._OBJ:
            return ("{", node.start, node.end, [(k, ks, ke, tree(v)) for k, ks, ke, v in node.pairs])
        if node.kind == jsonsyntax._ARR:
            return ("[", node.start, node.end, [tree(v) for v in node.items])
        return (node.kind, node.start, node.end, node.value)

    root, errors = jsonsyntax._Recovering(text, 0, read).file()
    return tree(root), [(e.summary, e.start, e.end) for e in errors]


_PIECES = [
    '{"a": 1',
    ', "b": [1, 2',
    "]",
    "}",
    ",",
    ":",
    '"k"',
    "[",
    "{",
    " ",
    "\n",
    "=",
    "true",
    "nul",
    '"x\n"',
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=14), st.integers(min_value=0, max_value=60))
def test_recovery_resumed_after_the_fast_parse_reads_as_a_fresh_one(pieces: list[str], cut: int) -> None:
    # On a syntax error the recovering parser takes what the fast parse already read (a 20 MB file
    # broken at its end is not read twice); every error and every node must be as if it had read
    # the file again from its start.
    valid = '{"locals": {"a": [1, {"b": "c"}, 3], "d": {"e": [true, null]}}, "x": [{"y": 1}]}'
    text = valid[:cut] + "".join(pieces) + valid[cut:]
    assert _recovered(text, resume=True) == _recovered(text, resume=False)


@pytest.mark.parametrize(
    ("template", "errors"),
    [
        ("${local.a}", []),
        ('${lookup(var.m, \\"k\\", \\"}\\")}', []),
        ("%{ if var.b }yes%{ else }no%{ endif }", []),
        ("$${not.a.template} and %%{ nor this", []),
        ('${[for x in var.l : x if x != \\"\\"]}', []),
        # hcl/json/structure.go parses each string as a template (issue 40); positions start one
        # column after the opening quote.
        ("${local.a", [("Unclosed template interpolation sequence", 1, 29)]),
        ("a ${local.a b}", [("Extra characters after interpolation expression", 1, 41)]),
        ("%{ if var.b }x", [("Unexpected end of template", 1, 43)]),
        # terraform 1.11.4 validate -json on these two outputs: the same summaries and columns.
        ("%{", [("Invalid template directive", 1, 31)]),
        ("a ${", [("Missing expression", 1, 33)]),
    ],
)
def test_strings_of_expressions_are_templates(template: str, errors: list[tuple[str, int, int]]) -> None:
    src = '{"output": {"a": {"value": "' + template + '"}}}'
    _, diags = parse_json(src, "main.tf.json", options=Options())
    found = [(d.summary, d.range.start.line, d.range.start.column) for d in diags.errors if d.range]
    assert found == errors
