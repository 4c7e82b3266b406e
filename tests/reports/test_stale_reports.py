"""`--check` on a stale output is a finding in every report format, read back by its own reader.

Each changed, missing or extra file is one "Output is out of date" error on that file of the
output (flatten/stages/stale.py): `validate -json` says `"valid": false`, SARIF has a result
with a rule id and a location (valid against the SARIF 2.1.0 schema), JUnit a failure, and
GitHub Actions an `::error` annotation.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
from junitparser import Failure, JUnitXml
from support.files import write_tree
from support.paths import DATA

SCHEMA = json.loads((DATA / "reports" / "sarif-schema-2.1.0.json").read_text())
MAIN = 'resource "terraform_data" "a" {\n  input = "x"\n}\n'


def flatten(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flatten", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**{k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"}, **env},
    )


def _stale_repository(tmp_path: Path) -> Path:
    """A repository with a root in live/ and its output in flat/: main.tf.json changed since the
    build, notes.txt extra in the output, and script.sh missing from it."""
    repo = tmp_path / "repo"
    write_tree(repo, {"live/main.tf": MAIN, ".git/HEAD": "ref: refs/heads/main\n"})
    built = flatten("build", "live", "--out", "flat", cwd=repo)
    assert built.returncode == 0, built.stderr
    (repo / "live" / "main.tf").write_text(MAIN.replace('"x"', '"y"'))
    (repo / "live" / "script.sh").write_text("echo hi\n")  # copied into the output
    (repo / "flat" / "notes.txt").write_text("mine")
    return repo


# notes.txt is the user's (the manifest does not list it) and Terraform does not load it: kept, not a
# finding (issue 39 item 1).
STALE = ["flat/flatten.manifest.json", "flat/main.tf.json", "flat/script.sh"]


def _places(repo: Path) -> list[tuple[str, int]]:
    """Where each of STALE's findings points (issue 39 item 3): the manifest at its first changed
    line, the source line that changed main.tf.json, the added source file."""
    built = (repo / "flat" / "flatten.manifest.json").read_text().splitlines()
    now = flatten("build", "live", "--out", str(repo / "fresh"), cwd=repo)
    assert now.returncode == 0, now.stderr
    fresh = (repo / "fresh" / "flatten.manifest.json").read_text().splitlines()
    first = next(i for i, (a, b) in enumerate(zip(built, fresh, strict=False), 1) if a != b)
    return [
        ("flat/flatten.manifest.json", first),
        ("live/main.tf", 2),
        ("live/script.sh", 1),
    ]


def test_stale_output_in_json_sarif_junit_and_github_annotations(tmp_path: Path) -> None:
    repo = _stale_repository(tmp_path)
    places = _places(repo)
    check = ("build", "live", "--out", "flat", "--check")

    as_json = flatten(*check, "--format", "json", cwd=repo)
    assert as_json.returncode == 1
    doc = json.loads(as_json.stdout)
    assert doc["valid"] is False and doc["error_count"] == len(STALE)
    assert [d["summary"] for d in doc["diagnostics"]] == ["Output is out of date"] * len(STALE)
    assert [
        (
            os.path.relpath(os.path.normpath(repo / "live" / d["range"]["filename"]), repo),
            d["range"]["start"]["line"],
        )
        for d in doc["diagnostics"]
    ] == places
    details = [d["detail"] for d in doc["diagnostics"]]
    assert details[1].startswith(
        "flat/main.tf.json is not what the build writes now: a source it is built from changed since "
        "flat was built (at main.tf:2)."
    )
    assert not [d for d in details if "notes.txt" in d]
    assert details[2].startswith(
        "The build writes flat/script.sh, which flat does not have: a source file or module was added"
    )
    assert all(
        d.endswith(
            "Run `flatten build live --out flat` to rebuild the output, then commit it with its sources."
        )
        for d in details
    )
    assert flatten(*check, "--diagnostics-json", cwd=repo).stdout == as_json.stdout

    sarif = flatten(*check, "--format", "sarif", cwd=repo)
    assert sarif.returncode == 1
    log = json.loads(sarif.stdout)
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    (run,) = log["runs"]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == ["output-is-out-of-date"]
    results = run["results"]
    assert [r["ruleId"] for r in results] == ["output-is-out-of-date"] * len(STALE)
    assert {r["level"] for r in results} == {"error"}
    locations = [r["locations"][0]["physicalLocation"] for r in results]
    assert [(loc["artifactLocation"]["uri"], loc["region"]["startLine"]) for loc in locations] == places
    assert {loc["artifactLocation"]["uriBaseId"] for loc in locations} == {"%SRCROOT%"}

    junit = flatten(*check, "--format", "junit", cwd=repo)
    assert junit.returncode == 1
    report = tmp_path / "junit.xml"
    report.write_text(junit.stdout)
    xml = JUnitXml.fromfile(str(report))
    cases = [case for suite in xml for case in suite]
    # One test case per finding's place (issue 39 item 7), each failing once.
    assert [case.name for case in cases] == [f"{path}:{line}" for path, line in places]
    failures = [r for case in cases for r in case.result if isinstance(r, Failure)]
    assert [f.message for f in failures] == ["Output is out of date"] * len(STALE)
    assert [f.type for f in failures] == ["output-is-out-of-date"] * len(STALE)
    assert "on live/main.tf:2,3-8" in failures[1].text  # the argument "input"
    assert sum(suite.failures for suite in xml) == sum(suite.tests for suite in xml) == len(STALE)

    text = flatten(*check, cwd=repo, GITHUB_ACTIONS="true")
    assert text.returncode == 1
    annotations = [line for line in text.stderr.splitlines() if line.startswith("::")]
    assert [a.split("::")[1].split(",col=")[0] for a in annotations] == [
        f"error file={path},line={line}" for path, line in places
    ]
    assert text.stderr.count("Error: Output is out of date") == len(STALE)


def test_a_fresh_output_checks_valid_in_every_format(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_tree(repo, {"live/main.tf": MAIN, ".git/HEAD": "ref: refs/heads/main\n"})
    assert flatten("build", "live", "--out", "flat", cwd=repo).returncode == 0
    check = ("build", "live", "--out", "flat", "--check")
    assert json.loads(flatten(*check, "--format", "json", cwd=repo).stdout)["valid"] is True
    assert json.loads(flatten(*check, "--format", "sarif", cwd=repo).stdout)["runs"][0]["results"] == []
    text = flatten(*check, cwd=repo, GITHUB_ACTIONS="true")
    assert (text.returncode, text.stderr) == (0, "")


def test_several_roots_report_each_roots_stale_files(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_tree(repo, {"live/a/main.tf": MAIN, "live/b/main.tf": MAIN, ".git/HEAD": "ref: refs/heads/main\n"})
    assert flatten("build", "live/a", "live/b", "--out", "flat", cwd=repo).returncode == 0
    (repo / "live" / "b" / "main.tf").write_text(MAIN.replace('"x"', '"y"'))
    sarif = flatten("build", "live/a", "live/b", "--out", "flat", "--check", "--format", "sarif", cwd=repo)
    assert sarif.returncode == 1
    log = json.loads(sarif.stdout)
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    uris = [
        [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in run["results"]]
        for run in log["runs"]
    ]
    # The module's file points at the source line that changed it (issue 39 item 3).
    assert uris == [[], ["flat/b/flatten.manifest.json", "live/b/main.tf"]]
    detail = log["runs"][1]["results"][0]["message"]["text"]
    assert "Run `flatten build live/a live/b --out flat`" in detail
