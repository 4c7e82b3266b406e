"""Short fuzzing run: mutated and random configurations never make flatten raise.

The long run (at least 100,000 inputs) is scripts/fuzz; docs/reliability.md records its counts.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from support.fuzz_names import check_names, check_names_cli, modules_json_case, names_case
from support.fuzzing import (
    FUZZ_TOKEN,
    RegistryCase,
    TreeSpec,
    ZipMember,
    base_registry,
    check_archive,
    check_cache_damage,
    check_diagnostics,
    check_registry,
    check_registry_cli,
    check_text,
    check_tree,
    fixtures_strategy,
    inputs,
    random_archive,
    random_tree,
    registry_case,
    registry_strategy,
    trees_strategy,
    valid_tree,
    write_spec,
    zip_bytes,
)
from support.servers import HTTPServer, serving

from flatten.lang.diagnostics import Diagnostic, Diagnostics
from flatten.lang.model import Range
from flatten.lang.options import Dialect
from flatten.shell import parse_cache

SHORT = int(os.environ.get("FLATTEN_FUZZ_COUNT", "250"))


@pytest.mark.parametrize("dialect", [Dialect.TERRAFORM, Dialect.OPENTOFU])
def test_mutated_inputs_only_diagnose(dialect: Dialect) -> None:
    for name, text in inputs(seed=1234 if dialect is Dialect.TERRAFORM else 99, count=SHORT):
        check_text(name, text, dialect)


@pytest.mark.parametrize(
    "content",
    [
        b"\xff\xfe\x00garbage",
        b'\xef\xbb\xbfvariable "x" {}\n',
        b"locals {\r\n  a = <<EOT\r\nline\r\nEOT\r\n}\r\n",
        b"\x00" * 100,
        b'locals { a = "' + b"\xc3\x28" + b'" }',
        b"resource" * 10_000,
        b"locals {\n  v = " + b"(" * 5000 + b"1" + b")" * 5000 + b"\n}\n",
        b"a = 1\n" * 20_000,
    ],
    ids=["binary", "bom", "crlf-heredoc", "nul", "invalid-utf8", "huge-token-run", "deep-parens", "big"],
)
def test_hostile_files_give_located_diagnostics(tree, content: bytes) -> None:
    root = tree({"main.tf": content})
    check_tree(root, Dialect.TERRAFORM)


def test_symlink_loop_and_unreadable_file(tree, tmp_path: Path) -> None:
    root = tree({"main.tf": 'module "a" {\n  source = "./loop"\n}\n', "secret.tf": "locals {}\n"})
    os.symlink("loop", root / "loop")  # a symlink to itself
    (root / "secret.tf").chmod(0)
    try:
        diags = check_tree(root, Dialect.TERRAFORM)
        summaries = {d.summary for d in diags}
        if os.geteuid() != 0:  # root can read anything
            assert "Failed to read file" in summaries
        assert "Unreadable module directory" in summaries or diags.has_errors
    finally:
        (root / "secret.tf").chmod(0o644)


# -- module trees and mutated samples / conformance cases, through the whole build pipeline ------------

TREES = int(os.environ.get("FLATTEN_FUZZ_TREES", "40"))
FUZZ = settings(
    max_examples=TREES,
    deadline=None,
    database=None,
    derandomize=True,  # the same examples on every run: the short mode is a regression test
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.fixture(autouse=True)
def no_parse_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(parse_cache._CACHE, "cache", None)  # never fill the user's cache


def build_spec(spec: TreeSpec, dialect: Dialect) -> Diagnostics:
    with tempfile.TemporaryDirectory() as tmp:
        return check_tree(write_spec(Path(tmp) / "src", spec), dialect)


@FUZZ
@given(spec=trees_strategy)
def test_random_module_trees_only_diagnose(spec: TreeSpec) -> None:
    for dialect in Dialect:
        build_spec(spec, dialect)


@FUZZ
@given(case=fixtures_strategy)
def test_mutated_samples_and_conformance_cases_only_diagnose(case: tuple[str, TreeSpec]) -> None:
    build_spec(case[1], Dialect.OPENTOFU if case[0].startswith("cases/") else Dialect.TERRAFORM)


def test_random_trees_through_the_command_line(tmp_path: Path) -> None:
    rnd = random.Random(2024)
    codes = []
    for i, spec in enumerate([valid_tree(rnd, references=False), random_tree(rnd), random_tree(rnd)]):
        root = write_spec(tmp_path / f"t{i}" / "src", spec)
        out = tmp_path / f"t{i}" / "out"
        proc = subprocess.run(
            [sys.executable, "-m", "flatten", "build", str(root), "--out", str(out), "--offline"],
            capture_output=True,
            text=True,
            env={**os.environ, "FLATTEN_PARSE_CACHE": "off"},
            timeout=120,
        )
        assert proc.returncode in (0, 1), proc.stderr
        assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
        if proc.returncode == 1:
            assert "Error: " in proc.stderr and " on " in proc.stderr
            assert not (tmp_path / f"t{i}" / "out").exists()
        codes.append(proc.returncode)
    assert codes[0] == 0, "a valid tree builds"


CACHE_TREES = int(os.environ.get("FLATTEN_FUZZ_CACHE_TREES", "4"))


def test_damaged_cache_entries_never_change_a_build(tmp_path: Path) -> None:
    """Cache entries damaged between builds (scripts/fuzz --kinds cache for the long run): every
    build's exit code and output bytes equal those of a build without a cache."""
    rnd = random.Random(19)
    for i in range(CACHE_TREES):
        spec = valid_tree(rnd) if i % 2 == 0 else random_tree(rnd)
        check_cache_damage(spec, rnd, tmp_path / f"t{i}")


def test_the_checker_can_fail() -> None:
    """The invariant checks reject what they must, so a passing fuzz run means something."""
    with pytest.raises(AssertionError, match="without a location"):
        check_diagnostics(Diagnostics([Diagnostic.error("Something", "no range")]))
    in_child = Range.point("modules/a/main.tf", 1, 1, 0)
    with pytest.raises(AssertionError, match="module path"):
        check_diagnostics(Diagnostics([Diagnostic.error("Something", "", in_child)]))
    check_diagnostics(Diagnostics([Diagnostic.error("Something", "", in_child, module="module.a")]))


# -- mutated registry and download responses from a loopback server ---------------------------------

REGISTRY_CASES = int(os.environ.get("FLATTEN_FUZZ_REGISTRY", "40"))


@pytest.fixture(scope="module")
def fuzz_server():
    with serving(HTTPServer()) as srv:
        yield srv


@settings(
    max_examples=REGISTRY_CASES,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(case=registry_strategy)
def test_mutated_registry_responses_only_diagnose(case: RegistryCase, fuzz_server: HTTPServer) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        check_registry(case, fuzz_server, Path(tmp))


def test_mutated_registry_responses_through_the_command_line(fuzz_server: HTTPServer, tmp_path: Path) -> None:
    rnd = random.Random(19)
    codes = [check_registry_cli(base_registry(), fuzz_server, tmp_path / "base")]
    codes += [check_registry_cli(registry_case(rnd), fuzz_server, tmp_path / f"c{i}") for i in range(3)]
    assert codes[0] == 0, "the unmutated server gives a build"


def test_the_registry_checker_can_fail(fuzz_server: HTTPServer, tmp_path: Path) -> None:
    """A server whose answers reach the output unredacted is caught: the check means something."""
    from flatten.lang import redact

    case = base_registry()
    case["/v1/modules/acme/m/aws/1.1.0/download"].headers["X-Terraform-Get"] = "{SELF}/files/{TOKEN}.tgz"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(redact.Scrubber, "__call__", lambda self, text: text)  # no redaction at all
        with pytest.raises(AssertionError, match="token"):
            check_registry(case, fuzz_server, tmp_path)
    assert FUZZ_TOKEN not in str(check_registry(case, fuzz_server, tmp_path / "again"))


@pytest.mark.parametrize(
    "url", ["http://[::1/x.tgz", "http://{HOST}:99999/x.tgz", "http://{HOST}:port/x.tgz"]
)
@pytest.mark.parametrize("where", ["discovery", "download", "indirection", "redirect"])
def test_unparseable_urls_from_a_server_are_diagnostics(
    fuzz_server: HTTPServer, tmp_path: Path, url: str, where: str
) -> None:
    # Found by the registry fuzzer: urllib.parse raises ValueError for a bad port or IPv6 literal,
    # which escaped as an internal error (exit 3).
    case = base_registry()
    if where == "discovery":
        case["/.well-known/terraform.json"].body = json.dumps({"modules.v1": url}).encode()
    elif where == "download":
        case["/v1/modules/acme/m/aws/1.1.0/download"].headers["X-Terraform-Get"] = url
    elif where == "indirection":
        case["/get/m"].headers["X-Terraform-Get"] = url
    else:
        case["/files/m.tgz"].status = 302
        case["/files/m.tgz"].headers["Location"] = url
    diags = check_registry(case, fuzz_server, tmp_path)
    assert diags.has_errors


@pytest.mark.parametrize("path", ["/.well-known/terraform.json", "/v1/modules/acme/m/aws/versions"])
def test_registry_json_nested_past_the_recursion_limit_is_a_diagnostic(
    fuzz_server: HTTPServer, tmp_path: Path, path: str
) -> None:
    case = base_registry()
    case[path].body = b"[" * 100_000 + b"]" * 100_000  # json.loads raises RecursionError, not ValueError
    diags = check_registry(case, fuzz_server, tmp_path)
    assert "Invalid response from remote module registry" in {d.summary for d in diags}


@pytest.mark.parametrize("versions", [5, None, True, "1.0.0", {"version": "1.0.0"}])
def test_a_versions_field_that_is_not_an_array_is_a_diagnostic(
    fuzz_server: HTTPServer, tmp_path: Path, versions: object
) -> None:
    # Found by the registry fuzzer: iterating a number raised TypeError (exit 3).
    case = base_registry()
    case["/v1/modules/acme/m/aws/versions"].body = json.dumps({"modules": [{"versions": versions}]}).encode()
    diags = check_registry(case, fuzz_server, tmp_path)
    assert "Invalid response from remote module registry" in {d.summary for d in diags}


# -- package archives with hostile headers and member names ---------------------------------------------

ARCHIVES = int(os.environ.get("FLATTEN_FUZZ_ARCHIVES", "150"))


def test_hostile_archives_are_refused_or_extracted_cleanly(tmp_path: Path) -> None:
    outcomes = [check_archive(*random_archive(random.Random(seed)), tmp_path) for seed in range(ARCHIVES)]
    assert "refused" in outcomes and "extracted" in outcomes


def test_hostile_archives_through_the_command_line(tmp_path: Path) -> None:
    from support.servers import HTTPServer, Reply, serving

    rnd = random.Random(77)
    with serving(HTTPServer()) as srv:
        for i in range(4):
            fmt, data = random_archive(rnd)
            srv.routes[f"/p{i}.{fmt}"] = Reply(200, data)
            root = write_spec(
                tmp_path / f"t{i}" / "src",
                {"main.tf": f'module "p" {{\n  source = "{srv.url}/p{i}.{fmt}"\n}}\n'.encode()},
            )
            proc = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "flatten",
                    "build",
                    str(root),
                    "--out",
                    str(tmp_path / f"t{i}" / "out"),
                ],
                capture_output=True,
                text=True,
                env={
                    **os.environ,
                    "FLATTEN_PARSE_CACHE": "off",
                    "FLATTEN_CACHE_DIR": str(tmp_path / "cache"),
                },
                timeout=300,
            )
            assert proc.returncode in (0, 1), proc.stderr[-3000:]
            assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr[-3000:]
            assert len(proc.stderr) < 10_000


def test_the_archive_checker_can_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the name check, a name with a newline is extracted, and check_archive says so."""
    import re

    from flatten.sources import archive

    data = zip_bytes([ZipMember(b"new\nline.tf", b"x")])
    assert check_archive("zip", data, tmp_path) == "refused"
    monkeypatch.setattr(archive, "_CONTROL", re.compile(r"(?!)"))
    with pytest.raises(AssertionError, match="control character"):
        check_archive("zip", data, tmp_path)


# -- hostile names and modules.json (issue 30): nothing raw reaches a terminal or a CI log ------------

NAMES = int(os.environ.get("FLATTEN_FUZZ_NAMES", "60"))


@pytest.mark.parametrize("kind", ["names", "modules-json"])
def test_hostile_names_never_reach_a_terminal_raw(kind: str, tmp_path: Path) -> None:
    make = names_case if kind == "names" else modules_json_case
    rnd = random.Random(30)
    for i in range(NAMES):
        spec = make(rnd)
        root = write_spec(tmp_path / f"{kind}-{i}", spec)
        check_names(root, Dialect.TERRAFORM if i % 2 else Dialect.OPENTOFU)


def test_hostile_names_through_the_command_line(tmp_path: Path) -> None:
    rnd = random.Random(31)
    for i in range(2):
        for make in (names_case, modules_json_case):
            root = write_spec(tmp_path / f"{make.__name__}-{i}", make(rnd))
            check_names_cli(root, tmp_path / f"out-{make.__name__}-{i}", Dialect.TERRAFORM)


def test_the_names_checker_can_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the escaping switched off (lang/printable.py: ``printable`` and the wrap-then-defuse
    ``no_commands`` behind it), the checker reports the raw name."""
    from flatten.lang import diagnostics

    monkeypatch.setattr(diagnostics, "printable", lambda text, lines=False: text)
    monkeypatch.setattr(diagnostics, "no_commands", lambda text: text)
    root = write_spec(
        tmp_path / "src", {"main.tf": b'module "m" {\n  source = "./d\\n::stop-commands::x"\n}\n'}
    )
    with pytest.raises(AssertionError, match=r"reads as a command|raw"):
        check_names(root, Dialect.TERRAFORM)
