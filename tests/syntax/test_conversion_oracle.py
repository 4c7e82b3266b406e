"""Terraform as the oracle for expression conversion: all cases of shared/conversion/expressions.json.

Each case's converted value goes into ``main.tf.json`` beside the converted helper locals, and
``terraform console`` evaluates ``jsonencode(local.v)``; its output must equal what Terraform
printed for the native expression. Cases run one directory each, in parallel, so one error
cannot spoil another.
"""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from support.oracle import terraform
from support.paths import SHARED

from flatten.lang.options import Options
from flatten.syntax.hcl import convert_expression, parse_native

CASES_FILE = SHARED / "conversion" / "expressions.json"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")

# Cases where flatten does not agree with Terraform, and why. A change in this set fails the test.
KNOWN_DISAGREEMENTS: dict[str, str] = {}


def _dumps(value: Any) -> str:
    """JSON text of a converted value; Decimals keep every digit."""
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, list):
        return "[" + ",".join(_dumps(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(json.dumps(k) + ":" + _dumps(v) for k, v in value.items()) + "}"
    return json.dumps(value, ensure_ascii=False)


def _normalize(out: str) -> str:
    lines = [ln.strip() for ln in _ANSI.sub("", out).splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def _load() -> dict[str, Any]:
    if not CASES_FILE.exists():
        pytest.skip(f"{CASES_FILE} not found")
    data: dict[str, Any] = json.loads(CASES_FILE.read_text(encoding="utf-8"))
    return data


def _helpers(text: str) -> dict[str, Any]:
    body, diags = parse_native("locals {\n" + text + "}\n", "helpers.tf", options=Options())
    assert not diags.has_errors, diags
    return {a.name: a.value for a in body.blocks[0].body.attributes}


def test_oracle_agreement(tmp_path: Path) -> None:
    tf = terraform()
    data = _load()
    helpers = _helpers(data["helper_locals"])
    cases: list[dict[str, Any]] = data["cases"]

    def run(index_case: tuple[int, dict[str, Any]]) -> tuple[str, str]:
        index, case = index_case
        value, diags = convert_expression(case["hcl"])
        if diags.has_errors:
            if "terraform_error" in case:
                return case["name"], "agree"
            return case["name"], "flatten error: " + "; ".join(d.summary for d in diags.errors)
        work = tmp_path / f"c{index}"
        work.mkdir()
        (work / "main.tf.json").write_text(_dumps({"locals": {**helpers, "v": value}}), encoding="utf-8")
        result = tf.run("console", cwd=work, stdin="jsonencode(local.v)\n", timeout=120)
        output = _ANSI.sub("", result.stdout + result.stderr)
        if "terraform_error" in case:
            ok = "Error:" in output
            return case["name"], "agree" if ok else "no terraform error: " + _normalize(output)
        want = _normalize(case["terraform"])
        got = _normalize(result.stdout)
        if "Warning:" in _ANSI.sub("", case["terraform"]) and "Warning:" not in output:
            return case["name"], f"no warning; got {got}"
        return case["name"], "agree" if got == want else f"want {want} got {got}"

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = dict(pool.map(run, enumerate(cases)))
    disagree = {k: v for k, v in results.items() if v != "agree"}
    print(f"\n{len(cases) - len(disagree)}/{len(cases)} agree")
    for name, why in sorted(disagree.items()):
        print(f"  {name}: {why}")
    assert set(disagree) == set(KNOWN_DISAGREEMENTS), disagree


def test_every_case_converts_or_diagnoses() -> None:
    """Without Terraform: every case converts, or gives an error diagnostic, and never raises."""
    data = _load()
    failures = []
    for case in data["cases"]:
        value, diags = convert_expression(case["hcl"])
        if diags.has_errors and "terraform_error" not in case:
            failures.append((case["name"], [d.summary for d in diags.errors]))
        json.loads(_dumps(value))
    assert failures == []
