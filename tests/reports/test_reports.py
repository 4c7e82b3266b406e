"""Diagnostics for CI tools: --format json|sarif|junit, and GitHub annotations with text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from urllib.parse import quote, unquote

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from junitparser import Failure, JUnitXml
from support.cli import age_tree
from support.files import write_tree
from support.paths import DATA
from typer.testing import CliRunner

from flatten import cli, gate
from flatten.lang.diagnostics import Diagnostic, Diagnostics, Severity, render_json, render_text
from flatten.lang.model import Pos, Range
from flatten.lang.options import Options
from flatten.reports.base import SourceBase, find_base
from flatten.reports.github import escape_data, escape_property, render_github
from flatten.reports.junit import render_junit
from flatten.reports.sarif import render_sarif
from flatten.shell import replay
from flatten.stages.load import load_dir

SCHEMA = json.loads((DATA / "reports" / "sarif-schema-2.1.0.json").read_text())

# A root with one warning of its own and two errors in a child module; the root sits one level
# down in its repository, so repository-relative paths differ from root-relative ones.
BROKEN = {
    "infra/main.tf": (
        'module "net" {\n  source = "./modules/net"\n}\n\nprovider "aws" {\n  version = "~> 3.0"\n}\n'
    ),
    "infra/modules/net/main.tf": 'variable "v" {\n  type  = "string"\n  bogus = 1\n}\n',
}
# Builds, with one warning.
WARNS = {"infra/main.tf": 'provider "aws" {\n  version = "~> 3.0"\n}\n'}


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"}  # CI may set it
    return {**env, "FLATTEN_CACHE_DIR": str(tmp_path / "cache"), **extra}


def flatten(tmp_path: Path, *args: str | Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flatten", *map(str, args)],
        capture_output=True,
        text=True,
        env=_env(tmp_path, **env),
    )


def _repo(tmp_path: Path, files: dict[str, str]) -> Path:
    """Write ``files`` into a fresh git repository and return its ``infra`` root module."""
    repo = write_tree(tmp_path / "repo", files)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo / "infra"


def _json_diags(tmp_path: Path, root: Path) -> list[dict[str, object]]:
    proc = flatten(tmp_path, "build", root, "--out", tmp_path / "out", "--format", "json")
    return json.loads(proc.stdout)["diagnostics"]  # type: ignore[no-any-return]


def test_sarif_is_schema_valid_with_rule_ids_and_repository_regions(tmp_path: Path) -> None:
    root = _repo(tmp_path, BROKEN)
    proc = flatten(tmp_path, "build", root, "--out", tmp_path / "out", "--format", "sarif")
    assert proc.returncode == 1
    assert proc.stderr == ""  # the report is all there is, on stdout
    log = json.loads(proc.stdout)
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    (run,) = log["runs"]
    diags = _json_diags(tmp_path, root)
    assert len(run["results"]) == len(diags) == 3
    rules = run["tool"]["driver"]["rules"]
    for result, diag in zip(run["results"], diags, strict=True):
        assert result["level"] == diag["severity"]
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["message"]["text"].startswith(diag["summary"])
        assert diag["detail"] in result["message"]["text"]
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        # Relative to the repository, not to the root module.
        assert physical["artifactLocation"] == {
            "uri": "infra/" + diag["range"]["filename"],
            "uriBaseId": "%SRCROOT%",
        }
        start, end = diag["range"]["start"], diag["range"]["end"]
        assert physical["region"] == {
            "startLine": start["line"],
            "startColumn": start["column"],
            "endLine": end["line"],
            "endColumn": end["column"],
        }
    by_rule = {r["ruleId"]: r for r in run["results"]}
    assert sorted(by_rule) == [
        "invalid-quoted-type-constraints",
        "unsupported-argument",
        "version-constraints-inside-provider-configuration-blocks-are-deprecated",
    ]
    assert by_rule["unsupported-argument"]["level"] == "error"
    assert by_rule["unsupported-argument"]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == (
        "infra/modules/net/main.tf"
    )
    assert by_rule["unsupported-argument"]["locations"][0]["logicalLocations"] == [
        {"fullyQualifiedName": "module.net", "kind": "module"}
    ]
    assert by_rule["version-constraints-inside-provider-configuration-blocks-are-deprecated"]["level"] == (
        "warning"
    )
    # Same input, same bytes.
    again = flatten(tmp_path, "build", root, "--out", tmp_path / "out", "--format", "sarif")
    assert again.stdout == proc.stdout


def test_one_rule_per_summary_whatever_names_it_quotes(tmp_path: Path) -> None:
    main = "".join(f'resource "{t}" "a" {{}}\nresource "{t}" "a" {{}}\n' for t in ("x_one", "x_two"))
    root = _repo(tmp_path, {"infra/main.tf": main})
    proc = flatten(tmp_path, "build", root, "--out", tmp_path / "out", "--format", "sarif")
    (run,) = json.loads(proc.stdout)["runs"]
    assert [r["ruleId"] for r in run["results"]] == ["duplicate-resource-configuration"] * 2
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == ["duplicate-resource-configuration"]


def test_sarif_outside_a_repository_is_relative_to_the_root(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "src", BROKEN) / "infra"
    if find_base(root).in_repository:
        pytest.skip("the temporary directory is inside a git repository")
    proc = flatten(tmp_path, "build", root, "--out", tmp_path / "out", "--format", "sarif")
    log = json.loads(proc.stdout)
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    uris = [
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"]
    ]
    assert uris == ["main.tf", "modules/net/main.tf", "modules/net/main.tf"]


def test_sarif_file_outside_the_repository_is_placed_on_the_root(tmp_path: Path) -> None:
    # GitHub code scanning rejects a whole log when one result has no file location.
    root = _repo(tmp_path, {"infra/main.tf": 'module "s" {\n  source = "../../shared"\n}\n'})
    write_tree(tmp_path / "shared", {"main.tf": 'variable "v" {\n  bogus = 1\n}\n'})
    proc = flatten(tmp_path, "build", root, "--out", tmp_path / "out", "--format", "sarif")
    assert proc.returncode == 1
    log = json.loads(proc.stdout)
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    (result,) = log["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "infra/", "uriBaseId": "%SRCROOT%"}
    }
    assert "(../../shared/main.tf:2,3-8, in module.s)" in result["message"]["text"]


def test_junit_one_case_per_finding_location(tmp_path: Path) -> None:
    """Issue 39 item 7: a CI report view counts test cases, so each finding's place is one."""
    root = _repo(tmp_path, BROKEN)
    proc = flatten(tmp_path, "build", root, "--out", tmp_path / "out", "--format", "junit")
    assert proc.returncode == 1
    report = tmp_path / "report.xml"
    report.write_text(proc.stdout)
    xml = JUnitXml.fromfile(str(report))
    stated = (xml.tests, xml.failures, xml.errors)
    xml.update_statistics()  # the counts the file states are the ones its elements give
    assert stated == (xml.tests, xml.failures, xml.errors)
    diags = _json_diags(tmp_path, root)
    errors = [d for d in diags if d["severity"] == "error"]
    warnings = [d for d in diags if d["severity"] == "warning"]
    assert (xml.tests, xml.failures, xml.errors) == (len(diags), len(errors), 0) == (3, 2, 0)
    (suite,) = xml
    cases = list(suite)
    assert [(c.classname, c.name) for c in cases] == [
        ("flatten.build", "infra/main.tf:6"),
        ("flatten.build", "infra/modules/net/main.tf:2"),
        ("flatten.build", "infra/modules/net/main.tf:3"),
    ]
    warned, *failed = cases
    assert warned.is_passed and warnings[0]["summary"] in warned.system_out
    for case, error in zip(failed, errors, strict=True):
        (failure,) = case.result
        assert isinstance(failure, Failure) and failure.message == error["summary"]
    assert [c.result[0].type for c in failed] == ["invalid-quoted-type-constraints", "unsupported-argument"]
    assert "on infra/modules/net/main.tf:3,3-8, in module.net" in failed[1].result[0].text


def test_junit_passes_when_there_is_no_error(tmp_path: Path) -> None:
    root = _repo(tmp_path, WARNS)
    proc = flatten(tmp_path, "build", root, "--out", tmp_path / "out", "--format", "junit")
    assert proc.returncode == 0
    report = tmp_path / "report.xml"
    report.write_text(proc.stdout)
    (suite,) = JUnitXml.fromfile(str(report))
    (case,) = suite
    assert case.is_passed and "Version constraints" in case.system_out
    assert case.name == "infra/main.tf:2"
    fresh = _repo(tmp_path / "fresh", {"infra/main.tf": 'resource "terraform_data" "a" {}\n'})
    clean = flatten(tmp_path, "build", fresh, "--out", tmp_path / "out2", "--format", "junit")
    report.write_text(clean.stdout)
    (suite,) = JUnitXml.fromfile(str(report))
    (case,) = suite
    assert (case.name, case.is_passed, suite.tests) == ("infra", True, 1)  # a root without findings
    assert (tmp_path / "out" / "main.tf.json").is_file()  # the build itself happened


def test_github_annotations_only_on_github_actions_with_text(tmp_path: Path) -> None:
    root = _repo(tmp_path, BROKEN)
    out = tmp_path / "out"
    plain = flatten(tmp_path, "build", root, "--out", out)
    annotated = flatten(tmp_path, "build", root, "--out", out, GITHUB_ACTIONS="true")
    assert plain.returncode == annotated.returncode == 1
    assert "::" not in plain.stderr
    assert annotated.stderr.startswith(plain.stderr)  # the text stays; annotations follow it
    lines = annotated.stderr[len(plain.stderr) :].splitlines()
    assert len(lines) == 3
    detail = str(_json_diags(tmp_path, root)[0]["detail"])
    assert lines[0] == (
        "::warning file=infra/main.tf,line=6,col=13,endLine=6,endColumn=21,title=Version constraints "
        "inside provider configuration blocks are deprecated::" + escape_data(detail)
    )
    assert lines[1].startswith(
        "::error file=infra/modules/net/main.tf,line=2,col=11,endLine=2,endColumn=19,"
        "title=Invalid quoted type constraints::"
    )
    assert lines[2].startswith(
        "::error file=infra/modules/net/main.tf,line=3,col=3,endLine=3,endColumn=8,"
        "title=Unsupported argument::"
    )
    assert lines[2].endswith("%0A%0A(in module.net)")
    # Only with text: the machine formats stay exactly what they are.
    sarif = flatten(tmp_path, "build", root, "--out", out, "--format", "sarif", GITHUB_ACTIONS="true")
    assert sarif.stderr == "" and sarif.stdout.startswith("{")
    other = flatten(tmp_path, "build", root, "--out", out, GITHUB_ACTIONS="false")
    assert other.stderr == plain.stderr


def test_github_escaping_follows_the_toolkit() -> None:
    assert escape_data("50% done\r\nnext: a, b") == "50%25 done%0D%0Anext: a, b"
    assert escape_property("a:b,c%\r\n") == "a%3Ab%2Cc%25%0D%0A"
    diag = Diagnostic.error(
        "Bad: thing, here", "line one\nline two: 100%", Range.point("dir,x/a:b.tf", 3, 4), module="module.m"
    )
    base = find_base(Path("/nonexistent-flatten-root"))
    (line,) = render_github([diag], base).splitlines()
    head, _, message = line.partition("::")[2].partition("::")
    assert head == (
        "error file=dir%2Cx/a%3Ab.tf,line=3,col=4,endLine=3,endColumn=4,title=Bad%3A thing%2C here"
    )
    assert message == "line one%0Aline two: 100%25%0A%0A(in module.m)"
    # A file not in the checkout: no file property, the location goes into the message.
    remote = Diagnostic.warning("W", "d", Range.point("registry.terraform.io/a/b/c//main.tf", 2, 1))
    assert (
        render_github([remote], base) == "::warning title=W::registry.terraform.io/a/b/c//main.tf:2,1-1: d\n"
    )


@pytest.mark.parametrize("command", ["build", "providers"])
def test_diagnostics_json_is_format_json(tmp_path: Path, command: str) -> None:
    root = _repo(tmp_path, BROKEN)
    extra = ["--out", str(tmp_path / "out")] if command == "build" else []
    old = flatten(tmp_path, command, root, *extra, "--diagnostics-json")
    new = flatten(tmp_path, command, root, *extra, "--format", "json")
    assert old.returncode == new.returncode == 1
    assert (old.stdout, old.stderr) == (new.stdout, new.stderr)
    assert json.loads(old.stdout)["error_count"] == 2  # on stdout for both commands
    both = flatten(tmp_path, command, root, *extra, "--diagnostics-json", "--format", "json")
    assert (both.returncode, both.stdout) == (1, old.stdout)
    clash = flatten(tmp_path, command, root, *extra, "--diagnostics-json", "--format", "sarif")
    assert clash.returncode == 2 and "--diagnostics-json means --format json" in clash.stderr


def test_providers_format_is_about_diagnostics_not_the_report(tmp_path: Path) -> None:
    root = _repo(tmp_path, BROKEN)
    text = flatten(tmp_path, "providers", root)
    assert text.returncode == 1 and "! Error: Unsupported argument" in text.stdout
    sarif = flatten(tmp_path, "providers", root, "--format", "sarif")
    assert sarif.returncode == 1
    # As build: the machine format alone on stdout, the report (unchanged) on stderr.
    assert sarif.stderr == text.stdout
    log = json.loads(sarif.stdout)
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    assert [r["ruleId"] for r in log["runs"][0]["results"]] == [
        "version-constraints-inside-provider-configuration-blocks-are-deprecated",
        "invalid-quoted-type-constraints",
        "unsupported-argument",
    ]
    report_json = flatten(tmp_path, "providers", root, "--json")
    junit = flatten(tmp_path, "providers", root, "--json", "--format", "junit")
    assert junit.returncode == 1 and junit.stderr == report_json.stdout
    report = tmp_path / "providers.xml"
    report.write_text(junit.stdout)
    xml = JUnitXml.fromfile(str(report))
    (suite,) = xml
    assert {case.classname for case in suite} == {"flatten.providers"}
    assert (xml.tests, xml.failures) == (3, 2)
    annotated = flatten(tmp_path, "providers", root, GITHUB_ACTIONS="true")
    assert annotated.stdout == text.stdout
    # A usage error prints no half report: the usage error alone.
    unknown = flatten(tmp_path, "providers", root, "--explain", "aws_vpc.nope", "--format", "sarif")
    assert unknown.returncode == 2
    assert unknown.stderr == "Error: no resource aws_vpc.nope in the configuration.\n"
    assert [line.split(" ", 1)[0] for line in annotated.stderr.splitlines()] == [
        "::warning",
        "::error",
        "::error",
    ]


def test_build_records_never_replay_the_wrong_report(tmp_path: Path) -> None:
    root = _repo(tmp_path, WARNS)
    age_tree(root.parent)
    out = tmp_path / "out"
    first = flatten(tmp_path, "build", root, "--out", out, "--format", "sarif")
    second = flatten(tmp_path, "build", root, "--out", out, "--format", "sarif")
    assert first.returncode == second.returncode == 0
    assert first.stdout == second.stdout
    assert json.loads(second.stdout)["runs"][0]["results"][0]["level"] == "warning"
    # A plain text build is recorded (and replayed); turning GITHUB_ACTIONS on must not replay it.
    plain = flatten(tmp_path, "build", root, "--out", out)
    assert plain.returncode == 0 and "Warning: Version constraints" in plain.stderr
    records = list((tmp_path / "cache" / "builds").iterdir())
    assert len(records) == 2  # one build recorded: under its --out, and as the latest into any --out
    assert flatten(tmp_path, "build", root, "--out", out).stderr == plain.stderr
    annotated = flatten(tmp_path, "build", root, "--out", out, GITHUB_ACTIONS="true")
    assert "\n::warning file=infra/main.tf,line=2," in annotated.stderr

    def requests(*extra: str) -> list[cli.BuildRequest]:  # what typer parsed, not run
        seen: list[cli.BuildRequest] = []
        CliRunner().invoke(cli.app, ["build", "r", "--out", "o", *extra], obj=lambda r: seen.append(r) or 0)
        return seen

    [sarif], [text] = requests("--format", "sarif"), requests("--format=text")
    assert not replay.replayable(sarif) and replay.replayable(text)
    assert requests("--format", "xml") == []  # a usage error: no build at all


# Any text a diagnostic can carry: control characters, XML and URI specials, quotes, newlines,
# characters outside the BMP; file names as loaders make them (below the root, beside it, or in a
# downloaded package).
_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)
_NAMES = st.sampled_from(
    [
        "main.tf",
        "a b/c%d#e.tf",
        "sub/x&<y>.tf.json",
        "../beside/m.tf",
        "../../../out/of/repo.tf",
        "registry.terraform.io/a/b/c//modules/x/main.tf",
        "git::https://h/r.git?ref=v1//main.tf",
    ]
)
_POS = st.builds(Pos, st.integers(1, 10**6), st.integers(1, 10**4), st.integers(0, 10**9))
_DIAGS = st.lists(
    st.builds(
        Diagnostic,
        st.sampled_from(list(Severity)),
        _TEXT,
        _TEXT,
        st.none() | st.builds(Range, _NAMES, _POS, _POS),
        st.sampled_from(["", "module.a", "module.a.module.b[0]"]),
    ),
    max_size=6,
)
_VALIDATOR = jsonschema.Draft4Validator(SCHEMA)


@settings(max_examples=150, deadline=None, database=None, derandomize=True)
@given(diags=_DIAGS)
def test_any_diagnostics_give_valid_reports(
    tmp_path_factory: pytest.TempPathFactory, diags: list[Diagnostic]
) -> None:
    repo = tmp_path_factory.getbasetemp() / "anyrepo"
    base = SourceBase(repo / "infra" / "prod", repo, True)
    items = Diagnostics(diags)
    log = json.loads(render_sarif(items, base))
    _VALIDATOR.validate(log)
    results = log["runs"][0]["results"]
    assert [r["level"] for r in results] == [d.severity.value for d in diags]
    for result in results:  # GitHub rejects a log with a result that has no file location
        uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert uri and ".." not in uri.split("/") and uri == quote(unquote(uri), safe="/")
    report = repo.parent / "any.xml"
    report.write_text(render_junit(items, base, command="build"), encoding="utf-8")
    xml = JUnitXml.fromfile(str(report))

    def place(d: Diagnostic) -> str:
        path = base.path_of(d.range.filename) if d.range is not None else None
        return "" if path is None or d.range is None else f"{path}:{d.range.start.line}"

    places = {place(d) for d in diags}
    failing = {place(d) for d in diags if d.severity is Severity.ERROR}
    assert (xml.tests, xml.failures) == (max(len(places), 1), len(failing))
    stated = (xml.tests, xml.failures)
    xml.update_statistics()
    assert stated == (xml.tests, xml.failures)
    lines = render_github(items, base).split("\n")
    assert lines.pop() == ""
    assert [line.split(" ", 1)[0] for line in lines] == [f"::{d.severity.value}" for d in diags]
    assert all("\r" not in line for line in lines)


def test_diagnostic_data_is_never_rendered(tmp_path: Path) -> None:
    """``Diagnostic.extra`` is for stages only: every format prints the same with or without it."""
    write_tree(
        tmp_path,
        {
            "main.tf": 'resource "x" "y" {\n  lifecycle {\n    ignore_changes = "all"\n  }\n  bogus = 1\n}\n',
            "data.tf.json": '{"data": {"x": {"y": {"lifecycle": {"prevent_destroy": true}}}}}\n',
        },
    )
    _, diags = load_dir(tmp_path, root=tmp_path, options=Options())
    assert any(d.extra is not None for d in diags)
    bare = [replace(d, extra=None) for d in diags]
    base = find_base(tmp_path)
    for render in (
        lambda ds: render_json(ds),
        lambda ds: render_text(ds, root=tmp_path, read=gate.source_reader(tmp_path)),
        lambda ds: render_sarif(ds, base),
        lambda ds: render_junit(ds, base, command="build"),
        lambda ds: render_github(ds, base),
    ):
        assert render(diags) == render(bare)


def test_providers_json_ranges_are_builds_range_objects(tmp_path: Path) -> None:
    """One range format: `providers --json` writes each range as `build --format json` writes a
    diagnostic's (Terraform's validate -json object), not a "file:line" string."""
    root = _repo(tmp_path, BROKEN)
    report = json.loads(flatten(tmp_path, "providers", root, "--json").stdout)
    build = json.loads(flatten(tmp_path, "build", root, "--out", tmp_path / "out", "--format", "json").stdout)
    assert report["format_version"] == "2.0"
    ranges = [d["range"] for d in report["diagnostics"] if d["range"] is not None]
    ranges += [c["range"] for m in report["modules"] for c in m.get("configurations", []) if "range" in c]
    assert ranges
    for rng in ranges:
        assert set(rng) == {"filename", "start", "end"}
        assert set(rng["start"]) == set(rng["end"]) == {"line", "column", "byte"}
    theirs = {d["summary"]: d["range"] for d in build["diagnostics"]}
    for d in report["diagnostics"]:
        if d["summary"] in theirs:
            assert d["range"] == theirs[d["summary"]]
