"""A small fixed sample of scripts/mutation-difftest, against the terraform binary (issue 40).

Single-edit mutations of valid roots (a brace, `=`, a quote, `${`, a newline or a keyword letter
deleted, inserted or replaced; a heredoc terminator broken; a closing brace removed; a line
duplicated) go to `terraform validate -json` and to flatten's build. Where Terraform's errors are
all HCL syntax errors (its parser's, or the JSON parser's), flatten must give the same verdict,
the same error summaries and the same first position. The full run (2,000 files per engine) is
by hand: docs/syntax-errors.md.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]

# What HCL's parsers say (hclsyntax, json): the classes this sample holds flatten to. These are
# Terraform's summaries (its output carries no codes), compared as text.
HCL_SYNTAX = frozenset(
    {
        "Unclosed configuration block",
        "Invalid character",
        "Argument or block definition required",
        "Missing newline after argument",
        "Invalid expression",
        "Unterminated template string",
        "Invalid multi-line string",
        "Unclosed template interpolation sequence",
        "Extra characters after interpolation expression",
        "Invalid template directive",
        "Invalid template control keyword",
        "Unexpected end of template",
        "Invalid escape sequence",
        "Invalid block definition",
        "Invalid single-argument block definition",
        "Missing newline after block definition",
        "Invalid string literal",
        "Unterminated string literal",
        "Invalid argument name",
    }
)
JSON_SYNTAX = frozenset(
    {
        "Unclosed object",
        "Root value must be object",
        "Missing attribute seperator comma",
        "Missing property value colon",
        "Mismatched braces",
        "Mismatched brackets",
        "Invalid JSON string",
        "Invalid start of value",
        "Missing object value",
        "Trailing comma in object",
        "Trailing comma in array",
        "Invalid object property name",
        "Missing JSON value",
        "Missing array element value",
        "Extraneous data after value",
    }
)


def _script() -> ModuleType:
    path = REPO / "scripts" / "mutation-difftest"
    loader = importlib.machinery.SourceFileLoader("mutation_difftest", str(path))
    spec = importlib.util.spec_from_loader("mutation_difftest", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["mutation_difftest"] = module
    loader.exec_module(module)
    return module


@pytest.mark.slow
def test_syntax_mutations_read_as_terraform_reads_them(tmp_path: Path) -> None:
    if shutil.which("terraform") is None:
        pytest.skip("no terraform binary on PATH")
    md = _script()
    tf, release = md._engine("binary")
    # A few bases of each kind (generated trees, native and JSON), 36 mutations (6 of each kind).
    bases = [(name, files) for name, files in md.candidate_bases(6) if name.startswith("generated:")]
    compared = 0
    outcomes: list[tuple[str, str, str]] = []
    for index in range(36):
        mut = md.mutation(index, 40, bases)
        files = {**dict(bases)[mut["base"]], mut["file"]: mut["text"]}
        where = tmp_path / str(index)
        md._write(files, where)
        theirs = md.terraform_verdict(tf, where)
        summaries = set(theirs["summaries"])
        if not summaries or not summaries <= (HCL_SYNTAX | JSON_SYNTAX | _HCL_OTHERS):
            continue
        ours = md._run_flatten((files, None, release))
        compared += 1
        outcomes.append((md.compare(theirs, ours), mut["kind"], mut["file"]))
    # The differential's figure on this fixed sample (docs/syntax-errors.md: 84% of 2,000 files
    # against the 1.11 binary; the goal of 98% is not reached): every verdict agrees, and at least
    # seven in ten (this sample's figure when written: 7 of 10) give Terraform's summaries and first
    # position: a ratchet, to be raised as the remaining classes are fixed.
    assert not [o for o in outcomes if o[0] == "verdict"], outcomes
    assert sum(o[0] == "match" for o in outcomes) >= 0.7 * len(outcomes), outcomes
    assert compared >= 10


# The rest of hclsyntax's summaries this sample meets.
_HCL_OTHERS = frozenset(
    {
        "Missing item separator",
        "Missing attribute value",
        "Missing key/value separator",
        "Unterminated function call",
        "Missing argument separator",
        "Unbalanced parentheses",
        "Missing expression",
        "Invalid attribute name",
        "Argument definition required",
        "Unterminated tuple constructor expression",
        "Unterminated object constructor expression",
        "Unexpected comma after argument",
        "Invalid 'for' expression",
    }
)
