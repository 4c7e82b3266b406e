"""Inputs past Python's own limits are diagnostics (exit 1), never internal errors.

docs/reliability.md, section "Limits", lists them.

Deep JSON from a registry or in ``modules.json``, version strings longer than Python converts to
int, file names that are not UTF-8 or hold control characters, package trees 1,000 directories
deep, and module chains 1,000 calls deep.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import write_tree
from test_sources_fetch import call, run, source_env, summaries
from test_sources_servers import Registry, Reply, serving

from flatten.options import Options
from flatten.versions import (
    InvalidConstraint,
    InvalidVersion,
    parse_constraints,
    parse_version,
    select_module_version,
)

DEEP_JSON = b"[" * 100_000 + b"]" * 100_000  # far past the C stack json.loads nests on
DIGITS = "1" * 5000  # Python refuses int() of more than 4,300 digits


def flatten_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flatten", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "FLATTEN_PARSE_CACHE": "off", **(env or {})},
        timeout=600,
    )


def assert_diagnosed(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr.lower(), proc.stderr[-3000:]
    assert "Error: " in proc.stderr


# -- deep JSON ------------------------------------------------------------------------------------


@pytest.mark.parametrize("route", ["/v1/modules/acme/m/aws/versions", "/.well-known/terraform.json"])
def test_deeply_nested_registry_json_is_an_invalid_response(tmp_path: Path, route: str) -> None:
    with serving(Registry()) as reg:
        assert isinstance(reg, Registry)
        reg.add("acme/m/aws", {"1.0.0": {"main.tf": ""}})
        reg.routes[route] = Reply(200, DEEP_JSON)
        root = write_tree(tmp_path / "root", {"main.tf": call("m", f"{reg.host}/acme/m/aws", "1.0.0")})
        _, _, diags = run(root, source_env(tmp_path, insecure_hosts=frozenset({reg.host})))
    assert diags.has_errors
    assert any("invalid" in d.detail.lower() or "Invalid" in d.summary for d in diags), [
        (d.summary, d.detail) for d in diags
    ]


def test_deeply_nested_modules_json_is_not_reused(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "root",
        {"main.tf": call("vpc", "acme/vpc/aws", "~> 1.0"), ".terraform/modules/vpc/main.tf": ""},
    )
    (root / ".terraform/modules/modules.json").write_bytes(b'{"Modules": ' + DEEP_JSON + b"}")
    _, _, diags = run(root, source_env(tmp_path), Options(offline=True))
    assert summaries(diags) == ["Module not installed"]
    proc = flatten_cli(
        "build",
        str(root),
        "--out",
        str(tmp_path / "out"),
        "--offline",
        env={"FLATTEN_CACHE_DIR": str(tmp_path / "c")},
    )
    assert_diagnosed(proc)
    assert "Module not installed" in proc.stderr


def test_deeply_nested_previous_manifest_is_not_a_lock(tmp_path: Path) -> None:
    from flatten.sources.fetcher import read_lock

    assert read_lock(DEEP_JSON) == {}


# -- versions longer than int() takes --------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [DIGITS, f"1.{DIGITS}.0", f"-{DIGITS}", f"1.0.0-{DIGITS}", f"1.0.0-{DIGITS}.x", f"1.0.0+{DIGITS}"],
    ids=["major", "minor", "negative", "prerelease", "prerelease-dotted", "metadata"],
)
def test_versions_with_thousands_of_digits_parse_or_are_invalid(text: str) -> None:
    try:
        v = parse_version(text)
    except InvalidVersion as exc:
        assert len(str(exc)) < 400  # the digits are cut in the message
    else:
        assert v.compare(v) == 0 and v.compare(parse_version("2.0.0")) == -1
    for constraint in (text, f"= {text}", f"~> {text}", f">= 1.0, < {text}"):
        with contextlib.suppress(InvalidConstraint):
            parse_constraints(constraint).allows("1.0.0")


def test_prereleases_with_thousands_of_digits_compare_like_go() -> None:
    # go-version compares identifiers numerically only when they fit int64; beyond, they clamp.
    a, b = parse_version(f"1.0.0-{DIGITS}"), parse_version(f"1.0.0-{DIGITS}2")
    assert a.compare(b) in (-1, 1)
    assert parse_version("1.0.0-2") < a


def test_a_listed_version_with_thousands_of_digits_is_skipped_as_invalid() -> None:
    selection = select_module_version([DIGITS, f"{DIGITS}.0.0", "1.0.0"], parse_constraints(">= 1.0"))
    assert selection.chosen is not None and str(selection.chosen) == "1.0.0"
    assert len(selection.invalid) == 2
    exact = select_module_version([f"1.0.0-{DIGITS}"], parse_constraints(f"1.0.0-{DIGITS}"))
    assert exact.chosen is not None


def test_a_registry_listing_a_version_with_thousands_of_digits_builds(tmp_path: Path) -> None:
    with serving(Registry()) as reg:
        assert isinstance(reg, Registry)
        reg.add("acme/m/aws", {"1.0.0": {"main.tf": ""}})
        listing = {"modules": [{"versions": [{"version": DIGITS}, {"version": "1.0.0"}]}]}
        reg.routes["/v1/modules/acme/m/aws/versions"] = Reply(200, json.dumps(listing).encode())
        root = write_tree(tmp_path / "root", {"main.tf": call("m", f"{reg.host}/acme/m/aws")})
        graph, _, diags = run(root, source_env(tmp_path, insecure_hosts=frozenset({reg.host})))
    assert summaries(diags) == ["Invalid response from remote module registry"]
    assert graph.node("module.m").package.version == "1.0.0"  # type: ignore[union-attr]


def test_a_constraint_with_thousands_of_digits_through_the_cli(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "root",
        {
            "main.tf": call("m", "acme/m/aws", f">= {DIGITS}")
            + f'terraform {{\n  required_version = "{DIGITS}"\n}}\n'
        },
    )
    proc = flatten_cli(
        "build",
        str(root),
        "--out",
        str(tmp_path / "out"),
        "--offline",
        env={"FLATTEN_CACHE_DIR": str(tmp_path / "c")},
    )
    assert_diagnosed(proc)
