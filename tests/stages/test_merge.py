"""Override merging and duplicate declarations (spec §2–§3), one case directory per rule.

Each directory under ``tests/data/merge/`` is a module. Expected diagnostics sit on the offending
line as ``# ERROR: <summary>`` / ``# WARNING: <summary>`` (JSON files list theirs in
``expected-diagnostics.txt`` as ``<file>:<line> ERROR: <summary>``); a case without markers must
produce no diagnostics. ``expected.json`` (optional) pins merged values: block address →
{argument: value}, where nested blocks are lists of bodies, ``dynamic`` blocks appear as
``dynamic.T`` and the string ``"<absent>"`` means the argument must not be there. A file
``DIALECT`` selects ``terraform`` (default: ``opentofu``, as the conformance suite runs).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support.cases import case_dirs, case_options, expected_diagnostics
from support.paths import DATA as TEST_DATA

from flatten.lang.diagnostics import Diagnostics
from flatten.lang.model import Attribute, Block, Body, Expr, JsonValue, Module, ParsedFile, Range
from flatten.lang.options import Dialect, Options
from flatten.stages.load import load_dir
from flatten.stages.merge import merge_bodies, merge_module

DATA = TEST_DATA / "merge"
ABSENT = "<absent>"


def all_cases() -> list[str]:
    """Every case directory under tests/data/merge, sorted (the one helper parametrize uses)."""
    return [p.name for p in case_dirs(DATA)]


def _merge(case: Path) -> tuple[Module, Diagnostics]:
    options = case_options(case)
    # Load-time diagnostics (decode checks) count too: markers in the files cover both stages.
    files, diags = load_dir(case, root=case, options=options)
    module, merge_diags = merge_module(files, directory=".", options=options)
    return module, Diagnostics([*diags, *merge_diags])


def _plain_body(body: Body) -> dict[str, JsonValue]:
    doc: dict[str, JsonValue] = {}
    for item in body.items:
        if isinstance(item, Attribute):
            doc[item.name] = item.value
            continue
        key = item.type if item.type != "dynamic" else "dynamic." + item.labels[0]
        entry = _plain_body(item.body)
        if item.labels and item.type != "dynamic":
            entry = {"__labels__": list(item.labels), **entry}
        existing = doc.setdefault(key, [])
        assert isinstance(existing, list)
        existing.append(entry)
    return doc


def _plain(module: Module) -> dict[str, list[JsonValue]]:
    out: dict[str, list[JsonValue]] = {}
    for block in module.blocks:
        out.setdefault(block.address, []).append(_plain_body(block.body))
    return out


def _check(want: JsonValue, got: JsonValue, path: str) -> None:
    if isinstance(want, dict) and isinstance(got, dict):
        for key, value in want.items():
            if value == ABSENT:
                assert key not in got, f"{path}.{key} should be absent, got {got.get(key)!r}"
                continue
            assert key in got, f"{path}.{key} missing; have {sorted(got)}"
            _check(value, got[key], f"{path}.{key}")
        return
    if isinstance(want, list) and isinstance(got, list) and want and isinstance(want[0], dict):
        assert len(want) == len(got), f"{path}: {len(got)} blocks, expected {len(want)}: {got!r}"
        for i, (w, g) in enumerate(zip(want, got, strict=True)):
            _check(w, g, f"{path}[{i}]")
        return
    assert want == got and type(want) is type(got), f"{path}: got {got!r}, expected {want!r}"


@pytest.mark.parametrize("name", all_cases())
def test_case_diagnostics(name: str) -> None:
    case = DATA / name
    _, diags = _merge(case)
    got = sorted(
        (
            d.range.filename if d.range else "",
            d.range.start.line if d.range else 0,
            d.severity.value,
            d.summary,
        )
        for d in diags
    )
    assert got == expected_diagnostics(case), [f"{d.summary}: {d.detail} @ {d.range}" for d in diags]
    for d in diags:
        assert d.detail, f"{d.summary} has no detail"


@pytest.mark.parametrize("name", [n for n in all_cases() if (DATA / n / "expected.json").exists()])
def test_case_values(name: str) -> None:
    case = DATA / name
    module, _ = _merge(case)
    want = json.loads((case / "expected.json").read_text())
    got = _plain(module)
    for address, body in want.items():
        if body == ABSENT:
            assert address not in got, f"{address} should be absent"
            continue
        assert address in got, f"{address} missing; have {sorted(got)}"
        if isinstance(body, list):
            _check(body, list(got[address]), address)
        else:
            assert len(got[address]) == 1, f"{address} appears {len(got[address])} times"
            _check(body, got[address][0], address)


# --- direct checks that a directory cannot express -----------------------------------------


def test_origins_record_every_contributor() -> None:
    module, diags = _merge(DATA / "seed-worked-example")
    assert not diags
    (web,) = [b for b in module.blocks if b.address == "resource.aws_instance.web"]
    assert [(r.filename, r.start.line) for r in web.origins] == [("example.tf", 1), ("override.tf", 1)]
    assert all(not b.origins for b in module.blocks if b is not web)


def test_duplicate_detail_names_the_first_location() -> None:
    _, diags = _merge(DATA / "dup-opentofu")
    (dup,) = [d for d in diags if d.summary == 'Duplicate resource "aws_instance" configuration']
    assert dup.detail.startswith('A aws_instance resource named "web" was already declared at main.tf:')
    assert dup.range is not None and dup.range.filename == "other.tf"


def test_variable_default_detail_variants() -> None:
    _, diags = _merge(DATA / "variable-type-default")
    details = sorted(
        d.detail.split(":")[0] for d in diags if d.summary == "Invalid default value for variable"
    )
    assert details == [
        "A null default value is not valid when nullable=false.",
        "Overriding this variable's type constraint has made its default value invalid",
        "The overridden default value for this variable is not compatible with the variable's type "
        "constraint",
        "This default value is not compatible with the variable's type constraint",
        "This variable's default value is not compatible with its type constraint",
    ]


def test_input_is_not_mutated() -> None:
    options = Options(dialect=Dialect.OPENTOFU)
    case = DATA / "seed-worked-example"
    files, _ = load_dir(case, root=case, options=options)
    before = [f.body for f in files]
    merge_module(files, directory=".", options=options)
    assert [f.body for f in files] == before


def _attr(name: str, value: JsonValue) -> Attribute:
    r = Range.point("x.tf")
    return Attribute(name, Expr(value, r), r)


def _block(type_: str, *labels: str, items: tuple[Attribute | Block, ...] = ()) -> Block:
    return Block(type_, labels, Body(items), Range.point("x.tf"))


def test_merge_bodies_hides_by_name_in_both_forms() -> None:
    base: list[Attribute | Block] = [
        _block("ebs", items=(_attr("a", 1),)),
        _block("dynamic", "ebs"),
        _block("dynamic", "other"),
        _attr("x", 1),
    ]
    merged = merge_bodies(base, [_attr("ebs", {"a": 2})])
    assert [(i.name if isinstance(i, Attribute) else f"{i.type}:{i.labels}") for i in merged] == [
        "ebs",
        "dynamic:('other',)",
        "x",
    ]


def test_no_files_gives_an_empty_module() -> None:
    module, diags = merge_module([], directory="mod", options=Options())
    assert module == Module("mod") and not diags


def test_json_only_override_is_applied() -> None:
    body = Body((_block("resource", "a", "b", items=(_attr("x", 1), _attr("y", 2))),))
    over = Body((_block("resource", "a", "b", items=(_attr("x", 3),)),))
    files = [ParsedFile("main.tf.json", "json", body), ParsedFile("override.tf.json", "json", over, True)]
    module, diags = merge_module(files, directory=".", options=Options())
    assert not diags
    assert _plain(module) == {"resource.a.b": [{"x": 3, "y": 2}]}


# --- Terraform itself as the oracle ---------------------------------------------------------

ORACLE_CASES = {
    "main.tf": 'variable "v" {\n  type    = number\n  default = "01"\n}\n\n'
    'variable "w" {\n  default = "keep"\n}\n\n'
    "locals {\n  a = 1\n  b = { x = 1 }\n}\n",
    "override.tf": 'variable "v" {\n  type = string\n}\n\nlocals {\n  b = { y = 2 }\n}\n',
    "z_override.tf.json": '{"locals": {"a": "json"}, "variable": {"w": {"sensitive": false}}}\n',
}


def test_oracle_agrees_with_merge(tmp_path: Path) -> None:
    """terraform console on the original directory sees the values our merged module holds."""
    from support import oracle
    from support.files import write_tree

    tf = oracle.terraform()
    case = write_tree(tmp_path / "case", dict(ORACLE_CASES))
    options = Options(dialect=Dialect.TERRAFORM)
    files, diags = load_dir(case, root=case, options=options)
    module, merge_diags = merge_module(files, directory=".", options=options)
    assert not diags and not merge_diags
    values: dict[str, JsonValue] = {}
    for block in module.blocks:
        for attr in block.body.attributes:
            values[f"{block.address}.{attr.name}"] = attr.value
    ours = [
        values["variable.v.default"],
        values["variable.w.default"],
        values["locals.a"],
        values["locals.b"],
    ]
    result = tf.run("console", cwd=case, stdin="jsonencode([var.v, var.w, local.a, local.b])\n", timeout=120)
    if result.returncode != 0:
        pytest.skip(f"terraform console failed: {result.stderr.strip()[:200]}")
    printed = result.stdout.strip().splitlines()[-1]
    assert json.loads(json.loads(printed)) == ours


@pytest.mark.parametrize(
    "name", ["dup-opentofu", "dup-terraform-wording", "tf-state-store-backend", "tf-state-store-cloud"]
)
def test_every_duplicate_names_both_locations(name: str) -> None:
    """Spec §2: each duplicate is reported at the later declaration, naming the earlier one."""
    _, diags = _merge(DATA / name)
    dups = [d for d in diags if d.summary.startswith(("Duplicate", "Conflicting", "Both"))]
    assert dups
    for d in dups:
        assert d.range is not None
        mentioned = re.findall(r"([\w./-]+\.tf(?:\.json)?):(\d+),\d+", d.detail)
        assert mentioned, f"{d.summary}: no location in {d.detail!r}"
        assert any((f, int(n)) != (d.range.filename, d.range.start.line) for f, n in mentioned), d.detail


@pytest.mark.parametrize("name", all_cases())
def test_merged_output_loads_back_the_same(name: str, tmp_path: Path) -> None:
    """Spec §3.11: what merging leaves must be expressible: the emitted tree re-builds unchanged,
    with no new diagnostic (with and without provenance comments)."""
    from flatten.build import build
    from flatten.stages.emit import write_tree

    case = DATA / name
    options = case_options(case)
    for provenance in (False, True):
        opts = Options(dialect=options.dialect, provenance=provenance)
        result, diags = build(case, options=opts)
        if diags.has_errors:
            pytest.skip("the case is about errors")
        out = tmp_path / f"out-{provenance}"
        write_tree(out, result.tree.files, result.tree.copies)
        again, diags2 = build(out, options=Options(dialect=options.dialect))
        assert not diags2.has_errors, [f"{d.summary}: {d.detail}" for d in diags2]
        assert not [d for d in diags2 if d.summary.startswith("Override leaves")]
        if not provenance:
            assert again.files["main.tf.json"] == result.files["main.tf.json"]


def test_override_type_that_cannot_keep_the_first_types_defaults_is_refused(tmp_path: Path) -> None:
    """Issue 14, item 3: Terraform applies `size`'s default to any value under the new type `any`.

    (``terraform plan -var 'v={name="z"}'`` gives ``{name = "z", size = 3}``.) No type expression
    in the output gives that, so the build is refused, naming the variable.
    """
    from support.files import write_tree

    case = write_tree(
        tmp_path / "case",
        {
            "main.tf": 'variable "v" {\n  type = object({ name = string, size = optional(number, 3) })\n}\n',
            "main_override.tf": 'variable "v" {\n  type = any\n}\n',
        },
    )
    options = Options()
    files, load_diags = load_dir(case, root=case, options=options)
    assert not load_diags
    _, merge_diags = merge_module(files, directory=".", options=options)
    assert [(d.summary, d.range.filename if d.range else "") for d in merge_diags] == [
        ("Unsupported variable type override", "main_override.tf")
    ]
    assert 'variable "v"' in merge_diags[0].detail


def test_override_to_any_of_a_default_an_earlier_type_made_a_map_is_refused(tmp_path: Path) -> None:
    """Terraform keeps `{b = false}` as the map(bool) the base type made of it; under `any` the
    output's default would be an object, and an output of it would change type (found by
    scripts/difftest: a second plan against the original's state was not empty)."""
    from support.files import write_tree

    case = write_tree(
        tmp_path / "case",
        {
            "main.tf": 'variable "v" {\n  type    = map(bool)\n  default = { b = false }\n}\n',
            "main_override.tf": 'variable "v" {\n  type = any\n}\n',
        },
    )
    options = Options()
    files, load_diags = load_dir(case, root=case, options=options)
    assert not load_diags
    _, merge_diags = merge_module(files, directory=".", options=options)
    assert [(d.summary, d.refusal) for d in merge_diags] == [("Unsupported variable type override", True)]


_TYPED_NULL_BASES = {
    # An optional attribute the override's default leaves out: a null of type object({a = bool}).
    "optional-attribute": (
        'variable "v" {\n  type    = object({ a = optional(object({ a = bool })), b = string })\n'
        '  default = { b = "x" }\n}\n'
    ),
    # A null written in the default, typed number by the base type.
    "written-null": 'variable "v" {\n  type    = object({ n = number })\n  default = { n = null }\n}\n',
    # The whole default null: a null of type string.
    "null-default": 'variable "v" {\n  type    = string\n  default = null\n}\n',
    # Under an object type whose attribute the override makes any.
    "attribute-made-any": (
        'variable "v" {\n  type    = object({ o = object({ n = number }) })\n'
        "  default = { o = { n = null } }\n}\n"
    ),
}


@pytest.mark.parametrize("base", sorted(_TYPED_NULL_BASES))
def test_override_to_any_of_a_default_holding_typed_nulls_is_refused(base: str, tmp_path: Path) -> None:
    """Terraform keeps the nulls of the default typed by the earlier type; a null written under
    `any` has none, so an output or a terraform_data input holding the variable plans as changed
    against the original's state (found by scripts/difftest, seed 484: a second plan not empty;
    ``test_an_untyped_null_plans_as_a_change`` shows it with Terraform)."""
    from support.files import write_tree

    override = 'variable "v" {\n  type = object({ o = any })\n}\n' if base == "attribute-made-any" else None
    case = write_tree(
        tmp_path / "case",
        {
            "main.tf": _TYPED_NULL_BASES[base],
            "main_override.tf": override or 'variable "v" {\n  type = any\n}\n',
        },
    )
    options = Options()
    files, load_diags = load_dir(case, root=case, options=options)
    assert not load_diags
    _, merge_diags = merge_module(files, directory=".", options=options)
    assert [(d.summary, d.refusal, d.range.filename if d.range else "") for d in merge_diags] == [
        ("Unsupported variable type override", True, "main_override.tf")
    ]
    assert 'variable "v"' in merge_diags[0].detail


def test_an_override_to_any_with_nulls_it_cannot_type_is_not_refused(tmp_path: Path) -> None:
    """Nulls the earlier type leaves untyped (`optional(any)`), or a default the override gives
    itself, are written as they are: the refusal is only for what no output can say."""
    from support.files import write_tree

    case = write_tree(
        tmp_path / "case",
        {
            "main.tf": 'variable "v" {\n  type    = object({ a = optional(any), b = string })\n'
            '  default = { b = "x" }\n}\n'
            'variable "w" {\n  type    = object({ n = number })\n  default = { n = 1 }\n}\n'
            'variable "u" {\n  type    = object({ n = number })\n  default = { n = null }\n}\n',
            "main_override.tf": 'variable "v" {\n  type = any\n}\nvariable "w" {\n  type = any\n}\n'
            'variable "u" {\n  type    = any\n  default = { n = null }\n}\n',
        },
    )
    options = Options()
    files, load_diags = load_dir(case, root=case, options=options)
    assert not load_diags
    _, merge_diags = merge_module(files, directory=".", options=options)
    assert not merge_diags


@pytest.mark.oracle
def test_an_untyped_null_plans_as_a_change(tmp_path: Path) -> None:
    """Why the refusal: the output flatten could write (`type = any`, the null as it reads) plans
    changes against the state of the original, whose null is typed."""
    from support import oracle
    from support.files import write_tree

    tf = oracle.terraform()
    uses = 'output "o" {\n  value = { k = var.v }\n}\nresource "terraform_data" "r" {\n  input = var.v\n}\n'
    case = write_tree(
        tmp_path / "case",
        {
            "main.tf": _TYPED_NULL_BASES["written-null"] + uses,
            "main_override.tf": 'variable "v" {\n  type = any\n}\n',
        },
    )
    assert tf.run("init", "-input=false", cwd=case).returncode == 0
    assert tf.run("apply", "-auto-approve", "-input=false", cwd=case).returncode == 0
    (case / "main_override.tf").unlink()
    (case / "main.tf").write_text('variable "v" {\n  type    = any\n  default = { n = null }\n}\n' + uses)
    plan = tf.run("plan", "-detailed-exitcode", "-input=false", "-no-color", cwd=case)
    assert plan.returncode == 2, plan.stdout + plan.stderr
