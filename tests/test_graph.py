"""The module graph and the vendored output tree (local sources)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from flatten.build import build
from flatten.emit import MANIFEST_NAME, write_tree
from flatten.graph import build_graph
from flatten.graph_render import GraphFormat, render_graph
from flatten.options import Dialect, Options

OPTS = Options()


def call(name: str, source: str, extra: str = "") -> str:
    return f'module "{name}" {{\n  source = "{source}"\n{extra}}}\n'


def summaries(diags) -> list[tuple[str, str]]:
    return [(d.severity.value, d.summary) for d in diags]


def test_nested_local_sources_resolve_against_the_caller(tree) -> None:
    root = tree(
        {
            "main.tf": call("a", "./modules/a") + call("b", "./modules/b"),
            "modules/a/main.tf": call("common", "../common", "  count = 2\n"),
            "modules/b/main.tf": call("common", "../common"),
            "modules/common/main.tf": 'output "x" {\n  value = 1\n}\n',
        }
    )
    graph, diags = build_graph(root, options=OPTS)
    assert summaries(diags) == []
    assert [n.address for n in graph.walk()] == [
        "",
        "module.a",
        "module.a.module.common",
        "module.b",
        "module.b.module.common",
    ]
    assert graph.node("module.a.module.common").directory == root / "modules" / "common"
    assert [n.address for n in graph.ancestors("module.a.module.common")] == ["", "module.a"]
    assert graph.parent("module.a").address == ""  # type: ignore[union-attr]


def test_output_tree_dedups_directories_and_rewrites_sources(tree, tmp_path: Path) -> None:
    root = tree(
        {
            "main.tf": call("a", "./modules/a") + call("b", "./other/b"),
            "modules/a/main.tf": call("common", "../../shared/common"),
            "other/b/main.tf": call("common", "../../shared/common"),
            "shared/common/main.tf": "locals {\n  x = 1\n}\n",
            "shared/common/files/policy.json": "{}\n",
            "shared/common/override.tf": "locals {\n  x = 2\n}\n",
        }
    )
    result, diags = build(root, options=OPTS)
    assert not diags.has_errors
    assert result.tree.paths() == [
        MANIFEST_NAME,
        "main.tf.json",
        "modules/a/main.tf.json",
        "modules/other/b/main.tf.json",
        "modules/shared/common/files/policy.json",
        "modules/shared/common/main.tf.json",
    ]
    files = result.files
    main = json.loads(files["main.tf.json"])
    assert main["module"] == {"a": {"source": "./modules/a"}, "b": {"source": "./modules/other/b"}}
    a = json.loads(files["modules/a/main.tf.json"])
    assert a["module"]["common"]["source"] == "../shared/common"
    b = json.loads(files["modules/other/b/main.tf.json"])
    assert b["module"]["common"]["source"] == "../../shared/common"
    # The override is applied, and no override file is left.
    assert json.loads(files["modules/shared/common/main.tf.json"]) == {"locals": {"x": 2}}
    manifest = json.loads(files[MANIFEST_NAME])
    assert [m["module"] for m in manifest["modules"]] == [
        "",
        "module.a",
        "module.a.module.common",
        "module.b",
        "module.b.module.common",
    ]
    assert all(not os.path.isabs(m["directory"]) for m in manifest["modules"])
    # The emitted tree builds again to the same bytes (a fixed point).
    out = tmp_path / "out"
    write_tree(out, result.tree.files, result.tree.copies)
    again, diags = build(out, options=OPTS)
    assert not diags.has_errors
    for rel in ("main.tf.json", "modules/a/main.tf.json", "modules/shared/common/main.tf.json"):
        assert again.files[rel] == files[rel]


def test_root_files_copied_and_state_left_behind(tree) -> None:
    root = tree(
        {
            "main.tf": "",
            ".terraform.lock.hcl": "# lock\n",
            "terraform.tfvars": "a = 1\n",
            "prod.auto.tfvars.json": "{}",
            "terraform.tfstate": "{}",
            ".terraform/modules/modules.json": "{}",
            "scripts/run.sh": "#!/bin/sh\n",
        }
    )
    result, _ = build(root, options=OPTS)
    assert result.tree.paths() == [
        ".terraform.lock.hcl",
        MANIFEST_NAME,
        "main.tf.json",
        "prod.auto.tfvars.json",
        "scripts/run.sh",
        "terraform.tfvars",
    ]


def test_cycle_is_an_error_not_a_hang(tree) -> None:
    root = tree(
        {
            "main.tf": call("a", "./a"),
            "a/main.tf": call("b", "../b"),
            "b/main.tf": call("again", "../a"),
        }
    )
    _, diags = build_graph(root, options=OPTS)
    assert summaries(diags) == [("error", "Module call cycle")]
    (diag,) = diags
    assert diag.module == "module.a.module.b"
    assert diag.range is not None and diag.range.filename == "b/main.tf"
    assert "a -> b -> a" in diag.detail


def test_missing_directory_and_empty_module(tree) -> None:
    root = tree({"main.tf": call("gone", "./gone") + call("empty", "./empty"), "empty/README.md": "x"})
    _, diags = build_graph(root, options=OPTS)
    assert summaries(diags) == [
        ("warning", "Empty module directory"),
        ("error", "Unreadable module directory"),
    ]
    assert all(d.range is not None and d.range.filename == "main.tf" for d in diags)


def test_root_errors_stop_before_children(tree) -> None:
    root = tree({"main.tf": call("a", "./a") + 'resource "x" {}\n', "a/main.tf": "bad {{{"})
    graph, diags = build_graph(root, options=OPTS)
    assert len(graph) == 1
    assert all(not d.module for d in diags)


def test_child_errors_carry_the_module_path(tree) -> None:
    root = tree({"main.tf": call("a", "./a"), "a/main.tf": call("b", "./b"), "a/b/main.tf": "nope {}\n"})
    _, diags = build_graph(root, options=OPTS)
    (diag,) = diags
    assert diag.summary == "Unsupported block type"
    assert diag.module == "module.a.module.b"
    assert diag.range is not None and diag.range.filename == "a/b/main.tf"


def test_symlinked_module_directory_is_followed(tree) -> None:
    root = tree({"main.tf": call("a", "./modules/a"), "real/a/main.tf": "locals {\n  v = 1\n}\n"})
    (root / "modules").mkdir()
    os.symlink("../real/a", root / "modules" / "a")
    result, diags = build(root, options=OPTS)
    assert not diags.has_errors
    assert json.loads(result.files["modules/a/main.tf.json"]) == {"locals": {"v": 1}}


@pytest.mark.parametrize(
    ("source", "summary"),
    [
        ("child", "Invalid module source address"),
        ("./local", "Invalid registry module source address"),
    ],
)
def test_bad_sources(tree, source: str, summary: str) -> None:
    extra = '  version = "1.0.0"\n' if source.startswith("./") else ""
    root = tree({"main.tf": call("a", source, extra), "local/main.tf": ""})
    _, diags = build_graph(root, options=OPTS)
    assert summary in [d.summary for d in diags]


def test_remote_source_without_installation_is_a_clear_error(tree) -> None:
    root = tree({"main.tf": call("vpc", "terraform-aws-modules/vpc/aws")})
    _, diags = build_graph(root, options=OPTS)
    assert summaries(diags) == [("error", "Module not installed")]


def test_graph_formats(tree) -> None:
    root = tree({"main.tf": call("a", "./a", "  count = 2\n"), "a/main.tf": ""})
    graph, _ = build_graph(root, options=Options(dialect=Dialect.OPENTOFU))
    text = render_graph(graph, GraphFormat.TEXT, root=root)
    assert text.splitlines() == ["(root)  .  (.)", "└── module.a  ./a  [count]"]
    doc = json.loads(render_graph(graph, GraphFormat.JSON, root=root))
    assert doc["children"][0] == {
        "address": "module.a",
        "children": [],
        "count": 2,
        "directory": "a",
        "source": "./a",
    }
    assert '"root" -> "module.a" [label="count"];' in render_graph(graph, GraphFormat.DOT, root=root)
    assert "m0 -->|count| m1" in render_graph(graph, GraphFormat.MERMAID, root=root)
