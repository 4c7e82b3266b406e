"""The canonical emitter and the atomic output swap."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from flatten.lang.model import Attribute, Block, Body, Expr, Module, Range
from flatten.stages.emit import MANIFEST_NAME, OutputError, dumps, module_json, write_tree

R = Range.point("main.tf")


def attr(name: str, value: object) -> Attribute:
    return Attribute(name, Expr(value, R), R)  # type: ignore[arg-type]


def block(type_: str, *labels: str, items: tuple[Attribute | Block, ...] = ()) -> Block:
    return Block(type_, labels, Body(items), R)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (Decimal("0.1000000000000000055511151231257827"), "0.1000000000000000055511151231257827"),
        (Decimal("1E+3"), "1000"),
        (Decimal("1.10"), "1.1"),
        # Terraform keeps the sign: default = -0.0 with type = string is "-0" in terraform console.
        (Decimal("-0.0"), "-0"),
        (Decimal("0.00"), "0"),
        (Decimal("1e400"), "1e+400"),
        (Decimal("1.5e-3"), "0.0015"),
        (12345678901234567890, "12345678901234567890"),
        (-7, "-7"),
    ],
)
def test_numbers_are_exact(value: object, text: str) -> None:
    assert dumps(value) == text + "\n"  # type: ignore[arg-type]


def test_dumps_sorts_keys_keeps_arrays_and_is_utf8() -> None:
    assert dumps({"b": [3, 1], "a": "é ✓"}) == '{\n  "a": "é ✓",\n  "b": [\n    3,\n    1\n  ]\n}\n'


def test_template_keys_keep_their_order() -> None:
    # "${k}" and "key" may evaluate to the same key; the later one wins, so order matters.
    assert list(json.loads(dumps({"z": 1, "${k}": 2}))) == ["z", "${k}"]


def test_keys_that_only_touch_across_a_boundary_are_sorted() -> None:
    # "c$" followed by "{b" is no template key: the object sorts as any other.
    assert list(json.loads(dumps({"c$": 1, "{b": 2, "a": 3}))) == ["a", "c$", "{b"]


def test_large_documents_are_written_as_json_writes_them() -> None:
    # Long enough that the text is joined in pieces while it is written (emit._JOIN_EVERY).
    doc = {
        "list": [f"item {i}" for i in range(40_000)],
        "map": {
            f"k{i:05}": {"n": i, "flag": i % 2 == 0, "none": None, "s": "x", "one": ["é"]}
            for i in range(20_000)
        },
        "nested": [[[]], [{}], {"a": [1, "two"], "b": ["three"], "c": [4]}],
    }
    assert dumps(doc) == json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def test_module_layout() -> None:
    module = Module(
        ".",
        (
            block("resource", "b_type", "x", items=(attr("count", 2),)),
            block("resource", "a_type", "y"),
            block("locals", items=(attr("b", 1),)),
            block("locals", items=(attr("a", "${local.b}"),)),
            block("provider", "aws", items=(attr("alias", "west"), attr("region", "us-west-2"))),
            block("provider", "aws", items=(attr("region", "eu-west-1"),)),
            block("moved", items=(attr("from", "a.b"), attr("to", "a.c"))),
            block("variable", "v", items=(attr("default", None),)),
        ),
    )
    doc = module_json(module)
    assert list(json.loads(dumps(doc))) == ["locals", "moved", "provider", "resource", "variable"]
    assert doc["locals"] == {"a": "${local.b}", "b": 1}
    assert list(doc["resource"]) == ["a_type", "b_type"]  # type: ignore[arg-type]
    # The default configuration first, then aliases.
    assert doc["provider"] == {"aws": [{"region": "eu-west-1"}, {"alias": "west", "region": "us-west-2"}]}
    assert doc["moved"] == [{"from": "a.b", "to": "a.c"}]
    assert doc["variable"] == {"v": {"default": None}}


def test_nested_blocks_keep_order_and_labels() -> None:
    res = block(
        "resource",
        "t",
        "n",
        items=(
            block("provisioner", "local-exec", items=(attr("command", "b"),)),
            block("provisioner", "file", items=(attr("source", "a"),)),
            block("lifecycle", items=(attr("ignore_changes", "all"),)),
            block("ebs", items=(attr("size", 2),)),
            block("ebs", items=(attr("size", 1),)),
        ),
    )
    body = module_json(Module(".", (res,)))["resource"]["t"]["n"]  # type: ignore[index, call-overload]
    assert body["provisioner"] == [{"local-exec": {"command": "b"}}, {"file": {"source": "a"}}]
    assert body["lifecycle"] == [{"ignore_changes": "all"}]  # always an array (issue 14, item 3a)
    assert body["ebs"] == [{"size": 2}, {"size": 1}]


def test_provenance_comments() -> None:
    other = Range.point("override.tf", 3)
    res = Block("resource", ("t", "n"), Body((attr("a", 1),)), R, origins=(R, other))
    doc = module_json(Module(".", (res,)), provenance=True)
    assert doc["resource"]["t"]["n"]["//"] == "merged from main.tf:1, override.tf:3"  # type: ignore[index, call-overload]
    assert "//" not in module_json(Module(".", (res,)))["resource"]["t"]["n"]  # type: ignore[index, call-overload]
    # Locals are one object: its comment names every file that made an overridden local.
    plain = Block("locals", (), Body((attr("x", 1),)), R)
    merged = Block("locals", (), Body((attr("y", 2),)), R, origins=(R, other))
    locals_doc = module_json(Module(".", (plain, merged)), provenance=True)["locals"]
    assert locals_doc == {"//": "merged from main.tf:1, override.tf:3", "x": 1, "y": 2}
    assert "//" not in module_json(Module(".", (plain, merged)))["locals"]  # type: ignore[operator]


def test_write_tree_replaces_previous_output(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_tree(out, {"main.tf.json": b"{}\n", MANIFEST_NAME: b"{}\n", "modules/a/main.tf.json": b"1"})
    write_tree(out, {"main.tf.json": b"2", MANIFEST_NAME: b"{}\n"})
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        MANIFEST_NAME,
        "main.tf.json",
    ]
    assert (out / "main.tf.json").read_bytes() == b"2"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no temporary directories left


def test_write_tree_refuses_a_foreign_directory(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    with pytest.raises(OutputError):
        write_tree(out, {"main.tf.json": b"{}"})
    assert (out / "precious.txt").read_text() == "keep me"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_swap_by_renames_fallback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import flatten.stages.output as output

    monkeypatch.setattr(output, "_exchange", lambda *_: False)
    out = tmp_path / "out"
    write_tree(out, {MANIFEST_NAME: b"1"})
    write_tree(out, {MANIFEST_NAME: b"2"})
    assert (out / MANIFEST_NAME).read_bytes() == b"2"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_failure_while_writing_keeps_previous_output(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_tree(out, {MANIFEST_NAME: b"old"})
    with pytest.raises(FileNotFoundError):
        write_tree(out, {MANIFEST_NAME: b"new"}, {"copied.txt": tmp_path / "missing-source"})
    assert (out / MANIFEST_NAME).read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_stale_temporary_directories_are_removed(tmp_path: Path) -> None:
    (tmp_path / ".out.flatten-dead").mkdir()
    write_tree(tmp_path / "out", {MANIFEST_NAME: b"x"})
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_attributes_written_as_blocks_become_dynamic_blocks() -> None:
    """Issue 14, item 3a: JSON reads `egress` as an attribute, a dynamic block as blocks."""
    res = block(
        "resource",
        "aws_security_group",
        "web",
        items=(
            block("egress", items=(attr("from_port", 0),)),
            block("dynamic", "ingress", items=(attr("for_each", "${var.p}"),)),
            block("ingress", items=(attr("from_port", 22),)),
            block("timeouts", items=(attr("create", "5m"),)),  # a real nested block
        ),
    )
    body = module_json(Module(".", (res,)))["resource"]["aws_security_group"]["web"]  # type: ignore[index, call-overload]
    assert body["dynamic"] == [
        {"egress": {"content": [{"from_port": 0}], "for_each": [0]}},
        {"ingress": {"for_each": "${var.p}"}},
        {"ingress": {"content": [{"from_port": 22}], "for_each": [0]}},
    ]
    assert body["timeouts"] == [{"create": "5m"}]
    assert "egress" not in body and "ingress" not in body


def test_attribute_block_whose_iterator_would_shadow_a_reference_keeps_its_form() -> None:
    res = block(
        "resource", "aws_route_table", "rt", items=(block("route", items=(attr("x", "${route.a}"),)),)
    )
    body = module_json(Module(".", (res,)))["resource"]["aws_route_table"]["rt"]  # type: ignore[index, call-overload]
    assert body["route"] == [{"x": "${route.a}"}]
    assert "dynamic" not in body
