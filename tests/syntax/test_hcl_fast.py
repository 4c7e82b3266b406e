"""The fast reader (``hcl_fast``) against the reference (``hcl.parse_native``, python-hcl2).

Whenever the fast reader answers, its ``(Body, Diagnostics)`` must equal the reference's exactly:
values with their types (``int`` vs ``Decimal``), every range, every diagnostic. It may decline
(then python-hcl2 reads the file); it must never answer differently. Checked over the whole hcl
corpus (with its expected values, through ``hcl_fast.parse``), every ``.tf``/``.tofu`` file of the
conformance cases, samples and test data, the Terraform conversion expressions, and generated
modules (hypothesis), including randomly damaged ones.
"""

from __future__ import annotations

import json
import random
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from support.hcl_cases import CASES, plain, read_case
from support.paths import DATA, SAMPLES, SHARED

from flatten.lang.model import Body
from flatten.lang.options import Dialect, Options
from flatten.syntax import _hcl_templates, hcl_fast
from flatten.syntax.hcl import parse_native

EXPRESSIONS = SHARED / "conversion" / "expressions.json"


def _files() -> list[Path]:
    roots = [SHARED / "conformance" / "cases", SAMPLES, DATA]
    found = []
    for root in roots:
        if root.is_dir():
            found.extend(p for p in root.rglob("*") if p.suffix in (".tf", ".tofu") and p.is_file())
    return sorted(found)


FILES = _files()


def same(text: str, options: Options, name: str = "main.tf") -> bool:
    """Assert the fast reader agrees with python-hcl2 on ``text``; return whether it answered."""
    fast = hcl_fast.read_fast(text, name, options=options)
    if fast is None:
        return False
    ref = parse_native(text, name, options=options)
    # repr shows the types (Decimal('1.5') vs 1.5, int vs Decimal) that == would let pass.
    assert repr(fast[0]) == repr(ref[0])
    assert repr(fast[1]) == repr(ref[1])
    return True


def _wrap(expr: str) -> str:
    return "locals {\n  v = " + expr.strip("\n") + "\n}\n"


# -- the hcl corpus, through the fast path -------------------------------------------------------


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_corpus_case(path: Path) -> None:
    headers, source, expected, want_diags = read_case(path)
    options = Options(Dialect(headers.get("dialect", "terraform")))
    if headers.get("mode") == "expr":
        text = _wrap(source)
        same(text, options)
        body, diags = hcl_fast.parse(text, "main.tf", options=options)
        if not want_diags and expected != "SKIP":
            attr = body.blocks[0].body.attribute("v")
            assert attr is not None
            assert attr.value == json.loads(expected, parse_float=Decimal)
        return
    same(source, options)
    body, diags = hcl_fast.parse(source, "main.tf", options=options)
    got = [
        f"{d.severity.value}: {d.summary} @ {d.range.start.line}:{d.range.start.column}"
        if d.range
        else d.summary
        for d in diags
    ]
    assert got == want_diags
    # With syntax errors the body is the partial one HCL keeps (scripts/mutation-difftest).
    if expected != "SKIP" and not diags.has_errors:
        assert plain(body) == json.loads(expected, parse_float=Decimal)


def test_corpus_mostly_fast() -> None:
    """The fast path answers for nearly every case the reference reads without diagnostics."""
    answered = valid = 0
    for path in CASES:
        headers, source, _, want_diags = read_case(path)
        if want_diags:
            continue
        text = _wrap(source) if headers.get("mode") == "expr" else source
        valid += 1
        answered += (
            hcl_fast.read_fast(text, "main.tf", options=Options(Dialect(headers.get("dialect", "terraform"))))
            is not None
        )
    assert answered >= 0.9 * valid, (answered, valid)


# -- every configuration file in the repository and the shared corpus ---------------------------


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(p.parents[2])) for p in FILES])
def test_repository_file(path: Path) -> None:
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        pytest.skip("not UTF-8: load.py reports it before any parser runs")
    dialect = Dialect.OPENTOFU if path.suffix == ".tofu" else Dialect.TERRAFORM
    same(text, Options(dialect=dialect), name=path.name)


def test_repository_files_mostly_fast() -> None:
    answered = 0
    for path in FILES:
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            continue
        answered += hcl_fast.read_fast(text, path.name, options=Options()) is not None
    assert answered >= 0.7 * len(FILES), (answered, len(FILES))


def test_conversion_expressions() -> None:
    if not EXPRESSIONS.exists():
        pytest.skip(f"{EXPRESSIONS} not found")
    data = json.loads(EXPRESSIONS.read_text(encoding="utf-8"))
    assert same("locals {\n" + data["helper_locals"] + "}\n", Options())
    answered = 0
    for case in data["cases"]:
        answered += same(_wrap(case["hcl"]), Options())
    assert len(data["cases"]) >= 150 and answered >= 0.9 * len(data["cases"])


# -- hand-picked edges ---------------------------------------------------------------------------

EDGES = [
    "a = -1\nb = - 1\nc = -1.50\nd = 1e3\ne = -0.0\nf = 1.5e-3\n",
    "a = [1, -1, - 2]\nb = x[-1]\nc = x[- 1]\n",
    'a = "x${y}z"\nb = "$${lit}"\nc = "%%{lit}"\nd = "a\\"b\\u00e9\\n"\ne = "\\q"\n',
    'a = "${~ x ~}"\nb = "%{ if c }a%{ else }b%{ endif }"\nc = "%{~ for k, v in m ~}${k}%{ endfor }"\n',
    "a = <<EOT\nx ${y}\nEOT\nb = <<-EOT\n    x\n      y\n    EOT\n",
    "a = <<EOT\nno end\n",
    "a = { for k, v in m : k => v... if v != null }\nb = [for x in xs : x * 2 if x > 0]\n",
    "a = (\n  b\n  || c\n)\nd = [\n  1,\n  2,\n]\n",
    "a = x ? y : z\nb = x ?\n  y : z\n",
    "a = f(x...)\nb = f(\n  x,\n)\nc = f()\n",
    "a = x.*.id\nb = x[*].id\nc = x.0.id\nd = x.0.1\n",
    'a = { "k" = 1, k2 = 2, 3 = "n", (v) = 4, true = 5 }\nb = { null = 1 }\n',
    "a = { a = 1 b = 2 }\nc = { x = 1\n  y = 2 }\n",
    "a = 1 # c\nb = 2 // c\nc = 3 /* c */\n/* multi\nline */\nd = 4",
    "a = 1 b = 2\n",
    "x { a = 1 }\ny {}\nz {\n  a = 1 }\n",
    'resource "a" "b" {\n  count = 1\n  lifecycle {\n    ignore_changes = [tags["x"], a.b]\n  }\n}\n',
    'resource "a" "b" {\n  provider = aws.west\n  depends_on = [x.y, "z"]\n}\n',
    'variable "v" {\n  type = list(object({ a = string, b = optional(number, 1) }))\n'
    '  default = [{ a = "x" }]\n}\n',
    'variable "v" {\n  type = "string"\n}\n',
    'module "m" {\n  source = "git::https://x/y.git?ref=v1"\n'
    "  providers = { aws = aws.west, aws.b = aws }\n}\n",
    "terraform {\n  required_providers {\n"
    '    aws = { source = "hashicorp/aws", version = "~> 5.0" }\n  }\n}\n',
    "locals {\n  a = 1\n  a = 2\n}\n",
    '\ufefflocals {\n  é = 1\n  s = "ü${x}"\n}\n',
    "locals {\r\n  a = 1\r\n  b = <<EOT\r\nx\r\nEOT\r\n}\r\n",
    "locals {\n  a = !!x\n  b = - -1\n  c = core::max(1, 2)\n}\n",
    "locals {\n  a = x\n  .y\n}\n",
    "locals {\n  a = in\n  b = x.for\n}\n",
    # A quoted template whose interpolation spans lines (found by test_generated_modules):
    # python-hcl2 refuses the object's newline-separated items, which this reader took.
    'locals {\n  a="${~ {a = a\n(x) = 0} ~}"\n}\n',
    'a = "${ {a = 1\nb = 2} }"\n',
]


@pytest.mark.parametrize("text", EDGES)
def test_edges(text: str) -> None:
    for dialect in Dialect:
        same(text, Options(dialect=dialect))
        same("locals {\n" + text + "}\n", Options(dialect=dialect))


def test_answers_common_shapes() -> None:
    text = (
        'resource "aws_instance" "web" {\n'
        "  count         = var.enabled ? var.replicas : 0\n"
        '  instance_type = lookup(local.sizes, var.size, "t3.micro")\n'
        "  user_data     = <<-EOT\n    echo ${local.p}\n  EOT\n"
        '  tags = merge(local.tags, {\n    Name = "${local.p}-web"\n  })\n'
        '  dynamic "ebs" {\n    for_each = var.volumes\n'
        "    content {\n      size = ebs.value.size * 2\n    }\n  }\n"
        '  lifecycle {\n    ignore_changes = [tags["LastSeen"], ami]\n  }\n'
        "}\n"
    )
    assert same(text, Options())


def test_never_raises_on_fuzz() -> None:
    rng = random.Random(7)
    base = "\n".join(EDGES)
    for _ in range(300):
        chars = list(base)
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(chars))
            op = rng.random()
            if op < 0.4:
                del chars[i]
            elif op < 0.8:
                chars.insert(i, rng.choice('{}[]()"$%~#/*\n =,.:?-!<>\\'))
            else:
                chars[i] = rng.choice("ab1\n ")
        text = "".join(chars)
        same(text, Options())


# -- generated modules ---------------------------------------------------------------------------

_names = st.sampled_from(["a", "b", "x_1", "web-1", "count", "each", "var", "local", "self", "format", "tf"])
_spaces = st.sampled_from(["", " ", "  "])
_gaps = st.sampled_from(["", " ", "\n", "\n  ", " # c\n", " // c\n", " /* c */ ", "/* c\n*/"])


@st.composite
def _string(draw: st.DrawFn, expr: st.SearchStrategy[str]) -> str:
    parts = draw(
        st.lists(
            st.one_of(
                st.text(alphabet='ab $%{}~é\\"nt', max_size=4),
                st.sampled_from(["$${x}", "%%{x}", "\\n", "\\\\", '\\"', "\\u00e9", "$", "%"]),
                expr.map(lambda e: "${" + e + "}"),
                expr.map(lambda e: "${~ " + e + " ~}"),
                expr.map(lambda e: "%{ if " + e + " }y%{ else }n%{ endif }"),
            ),
            max_size=3,
        )
    )
    return '"' + "".join(parts) + '"'


@st.composite
def _heredoc(draw: st.DrawFn) -> str:
    trim = draw(st.booleans())
    lines = draw(
        st.lists(
            st.sampled_from(["  x", "    ${a.b}", "", "  %{ for v in l ~}${v}%{ endfor }", "$${z}"]),
            max_size=4,
        )
    )
    end = draw(st.sampled_from(["EOT", "  EOT"])) if trim else "EOT"
    return ("<<-EOT\n" if trim else "<<EOT\n") + "".join(line + "\n" for line in lines) + end + "\n"


def _exprs() -> st.SearchStrategy[str]:
    leaf = st.one_of(
        st.integers(-1000, 10**20).map(str),
        st.sampled_from(["1.5", "-2.25", "1e3", "0.0", "1E-2", "007", "true", "false", "null"]),
        st.builds(lambda n, m: f"{n}.{m}", _names, _names),
        _names,
        st.builds(lambda n: f"{n}[0]", _names),
        st.builds(lambda n: f'{n}["k"]', _names),
        st.builds(lambda n: f"{n}.0.id", _names),
        st.builds(lambda n: f"{n}.*.id", _names),
        st.builds(lambda n: f"{n}[*].id", _names),
    )

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            _string(inner),
            st.builds(
                lambda a, s, b, op: f"{a}{s}{op}{s}{b}",
                inner,
                _spaces,
                inner,
                st.sampled_from(["+", "-", "*", "==", "&&", "<=", "%"]),
            ),
            st.builds(lambda c, a, b: f"{c} ? {a} : {b}", inner, inner, inner),
            st.builds(lambda a, g: f"({g}{a}{g})", inner, _gaps),
            st.builds(
                lambda f, args, g: f"{f}({g}{(',' + g).join(args)}{g})",
                _names,
                st.lists(inner, max_size=3),
                _gaps,
            ),
            st.builds(
                lambda items, g, t: f"[{g}{(',' + g).join(items)}{t}{g}]",
                st.lists(inner, max_size=3),
                _gaps,
                st.sampled_from(["", ","]),
            ),
            st.builds(
                lambda kv, sep: "{" + sep.join(f"{k} = {v}" for k, v in kv) + "}",
                st.lists(
                    st.tuples(
                        st.one_of(_names, st.sampled_from(['"k"', '"a b"', "1", "(x)", "true", "null"])),
                        inner,
                    ),
                    max_size=3,
                ),
                st.sampled_from([", ", "\n", ",\n"]),
            ),
            st.builds(lambda a, b: f"[for x in {a} : {b}]", inner, inner),
            st.builds(lambda a, b, c: f"{{ for k, v in {a} : k => {b} if {c} }}", inner, inner, inner),
            st.builds(lambda a: f"-{a}", inner),
            st.builds(lambda a: f"!{a}", inner),
            _heredoc(),
        )

    return st.recursive(leaf, extend, max_leaves=8)


_EXPR = _exprs()


@st.composite
def _module(draw: st.DrawFn) -> str:
    out = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["locals", "resource", "output", "variable", "module", "data"]))
        attrs = draw(st.lists(st.tuples(_names, _EXPR), max_size=4))
        body = "".join(f"  {n}{draw(_spaces)}={draw(_spaces)}{v}\n" for n, v in attrs)
        labels = {
            "locals": "",
            "resource": '"t" "n" ',
            "data": '"t" "n" ',
            "output": '"o" ',
            "variable": '"v" ',
            "module": '"m" ',
        }
        out.append(f"{kind} {labels[kind]}{{\n{body}}}\n")
    return draw(_gaps).lstrip(" ") + "".join(out)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_module())
@example('locals {\n  a = "${x}"\n}\n')
def test_generated_modules(text: str) -> None:
    same(text, Options())


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet='ab \n$%{}~\\"', max_size=40), st.integers(0, 50), st.booleans())
def test_heredoc_parts_agree(body: str, offset: int, trim: bool) -> None:
    try:
        want = _hcl_templates.heredoc_parts(body, offset, trim)
    except _hcl_templates.TemplateError as exc:
        with pytest.raises(_hcl_templates.TemplateError) as got:
            hcl_fast.heredoc_parts(body, offset, trim)
        assert (got.value.summary, got.value.offset, got.value.end) == (exc.summary, exc.offset, exc.end)
        return
    assert hcl_fast.heredoc_parts(body, offset, trim) == want


def test_parse_falls_back() -> None:
    body, diags = hcl_fast.parse("locals {\n  a = !!x\n}\n", "m.tf", options=Options())
    assert not diags and isinstance(body, Body)
    assert body.blocks[0].body.attribute("a").value == "${!!x}"  # type: ignore[union-attr]
    _, diags = hcl_fast.parse("locals {\n  a = \n}\n", "m.tf", options=Options())
    assert diags.has_errors
