"""The fast reader's shortcut for one-line computed expressions (``_hcl_shapes.other_end``).

Where the shortcut answers, the reader must read exactly what its recursive descent reads (the
same node: kind ``_OTHER``, the same end) and the whole file what python-hcl2 reads; where the
descent declines, the shortcut must decline too. Checked on the edges it must leave alone and on
generated one-line expressions.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flatten.lang.blocks import top_schema
from flatten.lang.options import Options
from flatten.syntax import _hcl_shapes, hcl_fast
from flatten.syntax.hcl import parse_native

SUFFIXES = ["", "\n", " # c\n", " // c\n", " /* c */\n", ")", ", x", " }", "]", " ?", "\r\n", " :"]


def _descent(text: str, nl: bool) -> object:
    """The reader's node and end for the expression at 0 (or "unsure")."""
    reader = hcl_fast._Reader(text, "main.tf")
    try:
        return reader.expr(0, nl)
    except hcl_fast._Unsure:
        return "unsure"


def _agree(expr: str) -> bool:
    """Assert the shortcut changes nothing the reader reads; return whether it answered."""
    answered = False
    for suffix in SUFFIXES:
        text = expr + suffix
        for nl in (False, True):
            with_shortcut = _descent(text, nl)
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(hcl_fast, "other_end", lambda text, i: -1)
                without = _descent(text, nl)
            assert with_shortcut == without, (text, nl)
            answered |= _hcl_shapes.other_end(text + "\x00", 0) >= 0
    # And the whole file agrees with python-hcl2 whenever the fast reader answers.
    source = "locals {\n  v = " + expr + "\n}\n"
    fast = hcl_fast.read_fast(source, "main.tf", options=Options())
    if fast is not None:
        ref = parse_native(source, "main.tf", options=Options())
        assert repr(fast) == repr(ref), source
    return answered


# The shapes the shortcut reads (each must answer) ...
READ = [
    "var.n > 0 ? 1 : 0",
    'var.n > 1 ? local.sizes["large"] : local.sizes["small"]',
    'merge(var.tags, { index = "0" })',
    "[for s in local.names : upper(s) if length(s) > 3]",
    '[for k, v in local.sizes : "${var.name}-${k}" if v > 1]',
    "map(string)",
    "f(a, )",
    "f()",
    "f (x)",
    "!x.y",
    "! x",
    "a - -1",
    "a * -1.5e3",
    "x[*].id == 1",
    "x.*.id != null_x",
    "f(x)[0].y",
    "f(x).*",
    "(a + b) * c",
    "(a ? b : c)",
    '"$${x}" == "%%{y}"',
    '"a$b%c" == x',
    "a-b + c",
    "true-1 == x",
    "a && b || !c",
    "a[0] <= b[x.y]",
    "f([1, 2], [])",
    "f({}, { a = 1, })",
    "[for x in xs : x]",
    "[for x in f(a, b) : x ? 1 : 2]",
    "a / b",
    "a % b >= 2",
    "format_x(1)",
]

# ... and the ones it must leave to the reader (which may read them or decline).
LEFT = [
    "a",
    "a.b[0]",
    "1",
    "-1",
    '"x${y}"',
    "[1, 2]",
    "{ a = 1 }",
    "a.in > 1",
    "x.0.id + 1",
    "x.0.1 + 1",
    "f(x...)",
    "a ? b ? c : d : e",
    "a ? b : c ? d : e",
    "-x + 1",
    "a -1",
    "a << b",
    "a += 1",
    "a =< 1",
    "!!x",
    "!-1",
    "true(1)",
    "true.x == 1",
    "core::max(1, 2)",
    "a::b ? 1 : 2",
    "x ? y::z : w",
    '"a".b == 1',
    '"a"[0] == 1',
    '"${in}" == x',
    '"${true}" == x',
    '"${ x }" == y',
    '"%{if x}y%{endif}" == y',
    '"a\\nb" == x',
    "{ for = 1 } == x",
    "f({ for = 1 })",
    "[for(x)]",
    "[format(x)]",
    "[for x, y in m : y if(x)]",
    "[for x in xs: x]",
    "[for x in xs :: x]",
    "[ for in in xs : x]",
    "[for true in xs : x]",
    "f({ a = 1 b = 2 })",
    "f({ a == 1 })",
    "f({ a => 1 })",
    'f({ "a" = 1 })',
    "f({ a : 1 })",
    "f(,)",
    "(a).b + 1",
    "(a)[0] + 1",
    "a /* c */ + b",
    "a / /x",
    "1.5.x + 1",
    "1e + 1",
    "1.x + 1",
    "a[1.5] + 1",
    "a[-1] + 1",
    "a[f(x)] + 1",
    "a.b.c..d",
    "a ? b :: c",
    "a ?",
    "a ? b",
    "f(a b)",
    "f(a\n)",
    "a +\n b",
    "a\n+ b",
    "f(<<EOT\nx\nEOT\n)",
    "é(1)",
    "for_each(x)",
    "a > b > c ? d : e ? f : g",
    "{ a = 1 }.a == 1",
    "[x][0] == 1",
    "! (a)",
    "!{} == 1",
    "a===b",
    "a ==> b",
    "a & b",
    "a | b",
    "a ! b",
    "a ** b",
    "a >> b",
]


@pytest.mark.parametrize("expr", READ)
def test_reads_common_shapes(expr: str) -> None:
    assert _agree(expr)


@pytest.mark.parametrize("expr", LEFT)
def test_leaves_the_rest_to_the_reader(expr: str) -> None:
    _agree(expr)


def test_declines_what_is_not_certainly_computed() -> None:
    # A literal, string, tuple, object or reference is decoded by the reader: never a shortcut.
    for expr in ["a", "a.b[0]", "1", "-1", '"x${y}"', "[1, 2]", "[for x in y : x", "{ a = 1 }", "true"]:
        assert _hcl_shapes.other_end(expr + "\x00", 0) == -1, expr


_names = st.sampled_from(["a", "b_1", "web-1", "in", "for", "true", "null", "x::y", "for_each", "é"])
_leaf = st.one_of(
    _names,
    st.builds(lambda n, m: f"{n}.{m}", _names, _names),
    st.sampled_from(
        ["1", "-1", "1.5", "1e3", "0.1.2", '"s"', '"${a}"', '"$${a}"', '"\\n"', "a[0]", "a[*].b"]
    ),
    st.sampled_from(['a["k"]', "a.*.b", "a.0", "a[b.c]", "a[-1]", "a[ 0 ]", "x...", "<<EOT\nx\nEOT\n"]),
)
_op = st.sampled_from(
    [" + ", "-", " - ", " == ", " <= ", "<<", " && ", "*", " / ", "/", " % ", " >", "!=", "=>"]
)


def _extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    sep = st.sampled_from([", ", ",", " , ", ",\n", " ", ""])
    return st.one_of(
        st.builds(lambda a, o, b: a + o + b, inner, _op, inner),
        st.builds(
            lambda c, a, b, s: f"{c} ?{s}{a} :{s}{b}", inner, inner, inner, st.sampled_from([" ", "", "\n"])
        ),
        st.builds(lambda f, args, s: f"{f}({s.join(args)})", _names, st.lists(inner, max_size=3), sep),
        st.builds(lambda items, s: "[" + s.join(items) + "]", st.lists(inner, max_size=3), sep),
        st.builds(
            lambda kv, s: "{ " + s.join(f"{k} = {v}" for k, v in kv) + " }",
            st.lists(st.tuples(_names, inner), max_size=2),
            sep,
        ),
        st.builds(lambda a, b, c: f"[for x in {a} : {b} if {c}]", inner, inner, inner),
        st.builds(lambda a, b: f"[for k, v in {a} : {b}]", inner, inner),
        st.builds(lambda a, p: f"{p}{a}", inner, st.sampled_from(["!", "! ", "-", "!!"])),
        st.builds(lambda a, t: f"({a}){t}", inner, st.sampled_from(["", ".x", "[0]"])),
    )


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.recursive(_leaf, _extend, max_leaves=6))
def test_generated_expressions(expr: str) -> None:
    _agree(expr)


# What follows a line's end, for the test below: each would change an answer read past it.
_TAILS = [
    "",
    "x",
    ")",
    "]",
    "}",
    " + 1",
    "+ 1",
    " ? a : b",
    ": b",
    ".y",
    "[0]",
    "(1)",
    "::",
    "\n",
    "=",
    " if c]",
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.recursive(_leaf, _extend, max_leaves=6), st.sampled_from(SUFFIXES))
def test_reads_nothing_past_the_end_of_its_line(expr: str, suffix: str) -> None:
    # The reader keeps other_end's answer by the rest of the line (``_Reader.expr``): an answer
    # must not depend on what comes after the line's newline.
    text = expr + suffix
    eol = text.find("\n")
    if eol < 0:
        return  # the sentinel ends the line: nothing comes after it
    line = text[: eol + 1]
    answers = {_hcl_shapes.other_end(line + tail + "\x00", 0) for tail in _TAILS}
    assert len(answers) == 1, (line, answers)


def test_a_repeated_line_reads_as_it_did_the_first_time() -> None:
    # The same rest of a line in another context (a block's argument, an object's item, a call's
    # argument over several lines, after a newline ignored in parentheses): each read the same as
    # by a reader that remembers nothing.
    # Lines that share a beginning and end elsewhere: only the whole rest of a line tells them apart.
    lines = ["var.n > 0 ? 1 : 0", "var.n > 0", "merge(var.tags, { a = 1 })", "merge(var.tags, x) == y"]
    lines += ["[for s in x : s]", "[for s in x : s] == y", "a + b", "a + b + c", "f(x)", "f(x) ? a : b"]
    body = []
    for line in lines * 2:
        body += [f"  a_{len(body)} = {line}\n", f"  o_{len(body)} = {{\n    k = {line}\n  }}\n"]
        body += [f"  c_{len(body)} = f(\n    {line},\n    {line}\n  )\n", f"  p_{len(body)} = ({line}\n  )\n"]
    source = "locals {\n" + "".join(body) + "}\n"
    fast = hcl_fast.read_fast(source, "main.tf", options=Options())
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(hcl_fast._Reader, "__init__", _forgetful_init)
        forgetful = hcl_fast.read_fast(source, "main.tf", options=Options())
    assert fast is not None
    assert repr(fast) == repr(forgetful)
    assert repr(fast) == repr(parse_native(source, "main.tf", options=Options()))


def test_a_file_of_distinct_lines_keeps_a_bounded_number_of_answers() -> None:
    # Each line's rest is kept by the reader of its file: a file of distinct computed lines must
    # not keep them all (memory: docs/reliability.md).
    n = 2 * hcl_fast._SHAPES_KEPT + 10
    source = "locals {\n" + "".join(f"  a{i} = x{i} + 1\n" for i in range(n)) + "}\n"
    reader = hcl_fast._Reader(source, "main.tf")
    body = reader.file(top_schema(Options().dialect))
    assert len(body.blocks[0].body.attributes) == n
    assert 0 < len(reader.shapes) <= hcl_fast._SHAPES_KEPT


_plain_init = hcl_fast._Reader.__init__


class _Forgets(dict[str, int]):
    """A memory of line ends that never holds one."""

    def __setitem__(self, key: str, value: int) -> None:
        pass


def _forgetful_init(self: hcl_fast._Reader, text: str, filename: str) -> None:
    _plain_init(self, text, filename)
    self.shapes = _Forgets()


# -- the reader's other one-match paths: an object's "name =", a plain block label ------------

SHORT_PATHS = [
    "locals {\n  a = { b = 1, c = 2 }\n  d = {\n    e = x\n    f-g = [1]\n  }\n}\n",
    "locals {\n  a = { b == 1 }\n}\n",
    "locals {\n  a = { b => 1 }\n}\n",
    # python-hcl2 reads a first key "for" as a for expression ("Invalid 'for' expression"); the
    # reader answered for these two before (main, 2026-11-26).
    "locals {\n  a = { for=1 }\n}\n",
    "locals {\n  a = { for: 1 }\n}\n",
    "locals {\n  a = { b = 1, for = 1, for-x = 2, forx = 3 }\n}\n",
    "locals {\n  a = { for-x = 1 }\n}\n",
    "locals {\n  a = { b = 1, if = 2, in = 3 }\n}\n",
    "locals {\n  a = { true = 1, null = 2 }\n}\n",
    "locals {\n  a = { truex = 1, null-x = 2 }\n}\n",
    "locals {\n  a = { b: 1, c : 2 }\n}\n",
    "locals {\r\n  a = {\r\n    b = 1\r\n    c\t=\t2\r\n  }\r\n}\r\n",
    "locals {\n  a = {\n    b =\n    1\n  }\n}\n",
    'resource "a b" "c-d.e" {\n}\n',
    'resource "a$b" "c%d" {\n}\n',
    'resource "a{" "}b" {\n}\n',
    'resource "a\\"b" "c\\\\d" {\n}\n',
    'resource "${a}" "b" {\n}\n',
    'resource "é" "ü" {\n}\n',
    'resource "" "" {\n}\n',
    'resource "a""b" {\n}\n',
]


@pytest.mark.parametrize("text", SHORT_PATHS)
def test_short_paths_agree(text: str) -> None:
    fast = hcl_fast.read_fast(text, "main.tf", options=Options())
    if fast is not None:
        ref = parse_native(text, "main.tf", options=Options())
        assert repr(fast) == repr(ref)
    assert repr(hcl_fast.read(text, "main.tf", options=Options())) == repr(
        parse_native(text, "main.tf", options=Options())
    )
