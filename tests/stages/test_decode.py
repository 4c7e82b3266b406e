"""Per-file decode checks and the OpenTofu version gate (spec §1, §2, §3.6, §4.1, §4.3–§4.4).

Each directory under ``tests/data/decode/`` is a module loaded with ``load_dir`` (which runs the
parsers, ``check_file`` and ``check_versions``). Expected diagnostics sit on the offending line as
``# ERROR: <summary>`` / ``# WARNING: <summary>``, several per line if needed; JSON files list
theirs in ``expected-diagnostics.txt`` as ``<file>:<line> ERROR: <summary>``. A case without
markers must produce no diagnostics. A file ``DIALECT`` selects ``terraform`` (default:
``opentofu``, as the conformance suite runs).
"""

from __future__ import annotations

import pytest
from support.cases import case_dirs, case_options, expected_diagnostics
from support.paths import DATA as TEST_DATA

from flatten.lang.diagnostics import Code, Diagnostic, Extra
from flatten.lang.model import Body, ParsedFile, Range
from flatten.lang.options import Dialect, Options
from flatten.stages.decode import (
    ProviderAddressError,
    check_file,
    check_versions,
    parse_provider_part,
    parse_provider_source,
    superseded,
    valid_identifier,
    value_traversals,
)
from flatten.stages.load import load_dir

DATA = TEST_DATA / "decode"

Key = tuple[str, int, str, str]


def all_cases() -> list[str]:
    """Every case directory under tests/data/decode, sorted."""
    return [p.name for p in case_dirs(DATA)]


@pytest.mark.parametrize("name", all_cases())
def test_case(name: str) -> None:
    case = DATA / name
    _, diags = load_dir(case, root=case, options=case_options(case))
    got: list[Key] = []
    for d in diags:
        assert d.range is not None, d
        assert d.detail, d
        got.append((d.range.filename, d.range.start.line, d.severity.value, d.summary))
    assert sorted(got) == expected_diagnostics(case)


def test_incompatible_module_returns_no_files() -> None:
    case = DATA / "version-gate"
    files, diags = load_dir(case, root=case, options=case_options(case))
    assert files == []
    assert {d.summary for d in diags} == {"Incompatible module"}
    assert "OpenTofu v1.13.0" in diags[0].detail


def test_terraform_dialect_has_no_version_gate() -> None:
    case = DATA / "version-gate"
    files, _ = load_dir(case, root=case, options=Options(dialect=Dialect.TERRAFORM))
    assert not check_versions(files, options=Options(dialect=Dialect.TERRAFORM))


def test_empty_file_has_no_diagnostics() -> None:
    assert not check_file(ParsedFile("main.tf", "native", Body()), options=Options())


@pytest.mark.parametrize(
    ("text", "want"),
    [
        pytest.param("${var.a}", [("var", "a")], id="plain"),
        pytest.param("x-${local.b.c[0].d}", [("local", "b", "c", "[]", "d")], id="template-index"),
        pytest.param("${f(var.a, 1)}", [("var", "a")], id="function"),
        pytest.param("${provider::p::f(var.a)}", [("var", "a")], id="provider-function"),
        pytest.param('${{ a = 1, "b" = var.x, c: local.y }}', [("var", "x"), ("local", "y")], id="object"),
        pytest.param("${x ? y : z}", [("x",), ("y",), ("z",)], id="conditional"),
        pytest.param("${[for k, v in var.m : k if v]}", [("var", "m")], id="for"),
        pytest.param("%{for i in var.l}${i}%{endfor}", [("var", "l")], id="directive"),
        pytest.param('${"in ${each.key}"}', [("each", "key")], id="nested-template"),
        pytest.param("$${var.escaped}", [], id="escape"),
        pytest.param("${true && null == false}", [], id="literals"),
        pytest.param("${a.b[var.i].c}", [("a", "b"), ("var", "i")], id="computed-index"),
        pytest.param("${a.*.b}", [("a",)], id="splat"),
        pytest.param("${1.5e3 + count.index}", [("count", "index")], id="number"),
        pytest.param("${<<EOT\n${var.h}\nEOT\n}", [("var", "h")], id="heredoc"),
        pytest.param("${x # comment\n}", [("x",)], id="comment"),
        # The collection is outside the for's scope; only the body sees the iterator.
        pytest.param("${[for var in var.m : var]}", [("var", "m")], id="for-collection-scope"),
        pytest.param("${true[var.i] && null.x}", [("var", "i")], id="keyword-literals-indexed"),
        pytest.param("${<<EOT\r\n${var.h}\r\nEOT\r\n}", [("var", "h")], id="heredoc-crlf"),
    ],
)
def test_value_traversals(text: str, want: list[tuple[str, ...]]) -> None:
    assert value_traversals(text) == want


@pytest.mark.parametrize(
    "text", ['${"unterminated}', "${(a}", "${a]}", "%{ endif }", "${a} %{not a directive}"]
)
def test_value_traversals_unreadable(text: str) -> None:
    assert value_traversals(text) is None


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("web", True),
        ("_private", True),
        ("a-b_c9", True),
        ("Web2", True),
        ("é_ü", True),  # letters beyond ASCII, as HCL's identifiers
        ("1st", False),
        ("-web", False),
        ("", False),
        ("a b", False),
        ("a.b", False),
        ("a\n", False),  # a trailing newline is not part of a name
        ("a\u2013b", False),  # an en dash is not a dash
    ],
)
def test_valid_identifier(name: str, valid: bool) -> None:
    assert valid_identifier(name) is valid


@pytest.mark.parametrize(
    ("given", "want"),
    [("aws", "aws"), ("AWS", "aws"), ("happy-cloud", "happy-cloud"), ("42bad", "42bad")],
)
def test_provider_part_valid(given: str, want: str) -> None:
    assert parse_provider_part(given) == want


@pytest.mark.parametrize("given", ["", "a.b", "a--b", "-a", "a-", "crash_es", "42_bad!"])
def test_provider_part_invalid(given: str) -> None:
    with pytest.raises(ProviderAddressError):
        parse_provider_part(given)


@pytest.mark.parametrize(
    ("source", "want"),
    [
        ("aws", ("registry.opentofu.org", "hashicorp", "aws")),
        ("acme/aws", ("registry.opentofu.org", "acme", "aws")),
        ("Example.COM:443/Acme/AWS", ("example.com", "acme", "aws")),
        ("example.com:8443/acme/aws", ("example.com:8443", "acme", "aws")),
        ("-/aws", ("registry.opentofu.org", "-", "aws")),
    ],
)
def test_provider_source_valid(source: str, want: tuple[str, str, str]) -> None:
    assert parse_provider_source(source, dialect=Dialect.OPENTOFU) == want


@pytest.mark.parametrize(
    ("source", "summary"),
    [
        ("a/b/c/d", "Invalid provider source string"),
        ("a//c", "Invalid provider source string"),
        ("acme/bad_type", "Invalid provider type"),
        ("acme/terraform-provider-x", "Invalid provider type"),
        ("acme/terraform-x", "Invalid provider type"),
        ("acme/opentofu-x", "Invalid provider type"),
        ("bad.ns/x", "Invalid provider namespace"),
        ("example.com/-/x", "Invalid provider namespace"),
        ("bad_host/ns/x", "Invalid provider source hostname"),
    ],
)
def test_provider_source_invalid(source: str, summary: str) -> None:
    with pytest.raises(ProviderAddressError) as info:
        parse_provider_source(source, dialect=Dialect.OPENTOFU)
    assert info.value.summary == summary


def test_opentofu_prefix_is_fine_for_terraform() -> None:
    assert parse_provider_source("acme/opentofu-x", dialect=Dialect.TERRAFORM)[2] == "opentofu-x"


def test_decode_rewording_goes_by_the_parser_diagnostics_code_not_its_wording() -> None:
    """A decode diagnostic replaces the parser's diagnostic of the code it names, at its range only."""
    here, there = Range.point("main.tf", 3, 5, 20), Range.point("main.tf", 9, 5, 80)
    unexpected = Extra(Code.UNEXPECTED_ARGUMENT, "prevent_destroy")
    parse = [
        Diagnostic.error("Some parser wording", "", here, extra=unexpected),
        Diagnostic.error("Some parser wording", "", there, extra=unexpected),
        Diagnostic.error("Unsupported argument", "", here),  # no code: nothing replaces it
    ]
    decode = [
        Diagnostic.error("Decoder wording", "", here, extra=Extra(replaces=(Code.UNEXPECTED_ARGUMENT,)))
    ]
    assert superseded(parse, decode) == parse[1:]
