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


STALE = ["flat/flatten.manifest.json", "flat/main.tf.json", "flat/notes.txt", "flat/script.sh"]


def test_stale_output_in_json_sarif_junit_and_github_annotations(tmp_path: Path) -> None:
    repo = _stale_repository(tmp_path)
    check = ("build", "live", "--out", "flat", "--check")

    as_json = flatten(*check, "--format", "json", cwd=repo)
    assert as_json.returncode == 1
    doc = json.loads(as_json.stdout)
    assert doc["valid"] is False and doc["error_count"] == len(STALE)
    assert [d["summary"] for d in doc["diagnostics"]] == ["Output is out of date"] * len(STALE)
    assert [os.path.normpath(repo / "live" / d["range"]["filename"]) for d in doc["diagnostics"]] == [
        str(repo / path) for path in STALE
    ]
    details = [d["detail"] for d in doc["diagnostics"]]
    assert details[1].startswith("flat/main.tf.json is not what the build writes now")
    assert details[2].startswith("flat has flat/notes.txt, which the build no longer writes.")
    assert details[3].startswith("The build writes flat/script.sh, which flat does not have.")
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
    assert [loc["artifactLocation"]["uri"] for loc in locations] == STALE
    assert {loc["artifactLocation"]["uriBaseId"] for loc in locations} == {"%SRCROOT%"}
    assert locations[0]["region"] == {"startLine": 1, "startColumn": 1, "endLine": 1, "endColumn": 1}

    junit = flatten(*check, "--format", "junit", cwd=repo)
    assert junit.returncode == 1
    report = tmp_path / "junit.xml"
    report.write_text(junit.stdout)
    xml = JUnitXml.fromfile(str(report))
    cases = [case for suite in xml for case in suite]
    # One test case per stale output file (issue 39 item 7), each failing once.
    assert [case.name for case in cases] == [f"{path}:1" for path in STALE]
    failures = [r for case in cases for r in case.result if isinstance(r, Failure)]
    assert [f.message for f in failures] == ["Output is out of date"] * len(STALE)
    assert [f.type for f in failures] == ["output-is-out-of-date"] * len(STALE)
    assert f"on {STALE[1]}:1,1-1" in failures[1].text
    assert sum(suite.failures for suite in xml) == sum(suite.tests for suite in xml) == len(STALE)

    text = flatten(*check, cwd=repo, GITHUB_ACTIONS="true")
    assert text.returncode == 1
    annotations = [line for line in text.stderr.splitlines() if line.startswith("::")]
    assert [a.split("::")[1] for a in annotations] == [
        f"error file={path},line=1,col=1,endLine=1,endColumn=1,title=Output is out of date" for path in STALE
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
    assert uris == [[], ["flat/b/flatten.manifest.json", "flat/b/main.tf.json"]]
    detail = log["runs"][1]["results"][0]["message"]["text"]
    assert "Run `flatten build live/a live/b --out flat`" in detail
