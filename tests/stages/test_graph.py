"""The module graph and the vendored output tree (local sources)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.files import write_tree as write_files

from flatten.build import build
from flatten.lang.options import Dialect, Options
from flatten.reports.graph_render import GraphFormat, render_graph
from flatten.stages.emit import MANIFEST_NAME, write_tree
from flatten.stages.graph import build_graph

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
        "other/b/main.tf.json",
        "shared/common/files/policy.json",
        "shared/common/main.tf.json",
    ]
    files = result.files
    main = json.loads(files["main.tf.json"])
    # Modules inside the root keep their places, so the sources read as they did.
    assert main["module"] == {"a": {"source": "./modules/a"}, "b": {"source": "./other/b"}}
    a = json.loads(files["modules/a/main.tf.json"])
    assert a["module"]["common"]["source"] == "../../shared/common"
    b = json.loads(files["other/b/main.tf.json"])
    assert b["module"]["common"]["source"] == "../../shared/common"
    # The override is applied, and no override file is left.
    assert json.loads(files["shared/common/main.tf.json"]) == {"locals": {"x": 2}}
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
    for rel in ("main.tf.json", "modules/a/main.tf.json", "shared/common/main.tf.json"):
        assert again.files[rel] == files[rel]


def test_paths_between_the_roots_directories_keep_working(tree) -> None:
    # net reads a file beside it through path.module/..: the output must hold it at the same
    # relative place, which only holds when modules inside the root keep their own paths.
    root = tree(
        {
            "main.tf": call("net", "./net") + call("out", "../outside"),
            "net/main.tf": 'locals {\n  b = file("${path.module}/../shared/b.txt")\n}\n',
            "shared/b.txt": "b\n",
        }
    )
    (root.parent / "outside").mkdir()
    (root.parent / "outside" / "main.tf").write_text("locals {}\n")
    result, diags = build(root, options=OPTS)
    assert not diags.has_errors
    # A module outside the root: the output mirrors their common parent, the root in src/.
    assert result.tree.root == "src"
    assert {"src/net/main.tf.json", "src/shared/b.txt", "outside/main.tf.json"} <= set(result.tree.paths())
    main = json.loads(result.files["src/main.tf.json"])
    assert main["module"]["net"]["source"] == "./net"
    assert main["module"]["out"]["source"] == "../outside"


def test_a_tree_without_outside_modules_keeps_its_root_at_the_top(tree) -> None:
    # The layout only moves the root when it must: otherwise the output (and its manifest, which
    # gets no "root" key) stays what it always was.
    root = tree({"main.tf": call("net", "./modules/net"), "modules/net/main.tf": "locals {}\n"})
    result, diags = build(root, options=OPTS)
    assert not diags.has_errors
    assert result.tree.root == ""
    assert result.tree.paths() == [MANIFEST_NAME, "main.tf.json", "modules/net/main.tf.json"]
    assert "root" not in json.loads(result.files[MANIFEST_NAME])


def test_outside_modules_keep_their_relative_place(tmp_path: Path) -> None:
    # Terraform's path.module of a module at ../shared is "../shared" (and "../shared/nested" for
    # its ./nested): the output keeps both places relative to the root, and the root's own files
    # (lock file, tfvars) stay beside it, where terraform runs.
    repo = tmp_path / "repo"
    write_files(
        repo,
        {
            "live/main.tf": call("shared", "../shared") + call("inner", "./modules/inner"),
            "live/terraform.tfvars": "a = 1\n",
            "live/.terraform.lock.hcl": "# lock\n",
            "live/modules/inner/main.tf": call("up", "../../../shared"),
            "shared/main.tf": call("nested", "./nested"),
            "shared/x.tpl": "x\n",
            "shared/nested/main.tf": "locals {}\n",
        },
    )
    result, diags = build(repo / "live", options=OPTS)
    assert not diags.has_errors, diags
    assert result.tree.root == "live"
    assert result.tree.paths() == [
        MANIFEST_NAME,
        "live/.terraform.lock.hcl",
        "live/main.tf.json",
        "live/modules/inner/main.tf.json",
        "live/terraform.tfvars",
        "shared/main.tf.json",
        "shared/nested/main.tf.json",
        "shared/x.tpl",
    ]
    main = json.loads(result.files["live/main.tf.json"])
    assert main["module"]["shared"]["source"] == "../shared"
    inner = json.loads(result.files["live/modules/inner/main.tf.json"])
    assert inner["module"]["up"]["source"] == "../../../shared"
    manifest = json.loads(result.files[MANIFEST_NAME])
    assert manifest["root"] == "live"
    assert {m["module"]: m["output"] for m in manifest["modules"]} == {
        "": "live",
        "module.inner": "live/modules/inner",
        "module.inner.module.up": "shared",
        "module.inner.module.up.module.nested": "shared/nested",
        "module.shared": "shared",
        "module.shared.module.nested": "shared/nested",
    }


def test_a_sibling_whose_name_extends_the_roots_is_outside_it(tmp_path: Path) -> None:
    # ../live-shared is not inside live, though its path starts with the root's: the output
    # mirrors both, each at its own place.
    repo = tmp_path / "repo"
    write_files(repo, {"live/main.tf": call("s", "../live-shared"), "live-shared/main.tf": "locals {}\n"})
    result, diags = build(repo / "live", options=OPTS)
    assert not diags.has_errors, diags
    assert result.tree.root == "live"
    assert result.tree.paths() == [MANIFEST_NAME, "live-shared/main.tf.json", "live/main.tf.json"]
    assert json.loads(result.files["live/main.tf.json"])["module"]["s"]["source"] == "../live-shared"


def test_a_module_in_the_roots_parent_goes_to_the_top(tmp_path: Path) -> None:
    # source = "../" is the common parent itself: it is written at the top, the root below it.
    repo = tmp_path / "repo"
    write_files(repo, {"live/main.tf": call("up", "../"), "main.tf": "locals {}\n", "notes.txt": "n\n"})
    result, diags = build(repo / "live", options=OPTS)
    assert not diags.has_errors, diags
    assert result.tree.root == "live"
    assert result.tree.paths() == [MANIFEST_NAME, "live/main.tf.json", "main.tf.json", "notes.txt"]
    assert json.loads(result.files["live/main.tf.json"])["module"]["up"]["source"] == "../"


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_a_symlinked_module_goes_to_its_real_place(tmp_path: Path) -> None:
    # Terraform resolves a local module's symlinks (path.module of ./linked -> modules/real is
    # "modules/real"), so the output places the module at its resolved path.
    root = write_files(tmp_path / "root", {"main.tf": call("l", "./linked"), "modules/real/main.tf": ""})
    (root / "linked").symlink_to("modules/real", target_is_directory=True)
    result, diags = build(root, options=OPTS)
    assert not diags.has_errors, diags
    assert result.tree.root == ""
    assert "modules/real/main.tf.json" in result.tree.paths()
    assert not diags  # the link is the module itself, not a file left out
    assert json.loads(result.files["main.tf.json"])["module"]["l"]["source"] == "./modules/real"


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


def test_root_errors_stop_before_children_with_opentofu(tree) -> None:
    root = tree({"main.tf": call("a", "./a") + 'resource "x" {}\n', "a/main.tf": "bad {{{"})
    graph, diags = build_graph(root, options=Options(dialect=Dialect.OPENTOFU))
    assert len(graph) == 1 and graph.root_failed
    assert all(not d.module for d in diags)


@pytest.mark.parametrize("release", [(1, 11), (1, 15)])
def test_root_errors_stop_before_children_with_terraform(tree, release) -> None:
    # Like `terraform validate` (configload loadConfig): the root alone, no child loaded, no
    # child's error and no unreadable directory reported (tests/oracle/test_load_order.py).
    root = tree(
        {
            "main.tf": call("a", "./a") + call("gone", "./nowhere") + 'variable "v" {}\nvariable "v" {}\n',
            "a/main.tf": 'variable "w" {}\nvariable "w" {}\n',
        }
    )
    options = Options(terraform_version=release)
    graph, diags = build_graph(root, options=options)
    assert graph.root_failed and len(graph) == 1
    assert [(d.module, d.summary) for d in diags] == [("", "Duplicate variable declaration")]
    # No provider validation either: Terraform builds no configuration tree.
    _, all_diags = build(root, options=options)
    assert [(d.module, d.summary) for d in all_diags] == [("", "Duplicate variable declaration")]


def test_a_module_whose_version_is_excluded_reports_that_alone(tree) -> None:
    # Version first (initwd/module_install.go): the child's own errors are dropped; the
    # root's version error comes beside the children's errors.
    excluded = 'terraform {\n  required_version = "< 1.0"\n}\n'
    root = tree(
        {
            "main.tf": excluded + call("a", "./a") + call("b", "./b"),
            "a/main.tf": excluded + 'variable "w" {\n  type = "string"\n}\n',
            "b/main.tf": "nope {}\n",
        }
    )
    _, diags = build_graph(root, options=OPTS)
    assert sorted((d.module, d.summary) for d in diags) == [
        ("", "Unsupported Terraform Core version"),
        ("module.a", "Unsupported Terraform Core version"),
        ("module.b", "Unsupported block type"),
    ]


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
    # The installer's EvalSymlinks: the module is recorded (and emitted) at its real directory.
    assert json.loads(result.files["real/a/main.tf.json"]) == {"locals": {"v": 1}}


def test_relative_sources_in_a_symlinked_module_resolve_from_its_target(tree) -> None:
    root = tree(
        {
            "main.tf": call("a", "./links/a"),
            "real/a/main.tf": call("b", "../b"),
            "real/b/main.tf": 'variable "v" {\n  default = "real b"\n}\n',
        }
    )
    (root / "links").mkdir()
    os.symlink("../real/a", root / "links" / "a")
    graph, diags = build_graph(root, options=OPTS)
    assert summaries(diags) == []
    assert graph.node("module.a").directory == root / "real" / "a"
    assert graph.node("module.a.module.b").directory == root / "real" / "b"


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


TOFU = Options(dialect=Dialect.OPENTOFU)


def located(diags) -> list[tuple[str, str, int, int, int]]:
    return [
        (d.severity.value, d.summary, d.range.start.line, d.range.start.column, d.range.end.column)
        for d in diags
        if d.range is not None
    ]


def test_tofu_evaluates_sources_from_variables_locals_and_caller_arguments(tree) -> None:
    root = tree(
        {
            "main.tf": 'variable "dir" {\n  default = "modules"\n}\n'
            'locals {\n  base = "./${var.dir}"\n}\n'
            'module "a" {\n  source = "${local.base}/a"\n  which  = "b"\n}\n',
            "modules/a/main.tf": 'variable "which" {}\n'
            'module "inner" {\n  source = "../${upper(var.which)}"\n}\n',
            "modules/B/main.tf": "",
        }
    )
    graph, diags = build_graph(root, options=TOFU)
    assert summaries(diags) == []
    assert graph.node("module.a").call.source == "./modules/a"  # type: ignore[union-attr]
    assert graph.node("module.a.module.inner").directory == root / "modules" / "B"
    # Terraform reads source as a literal string only: before 1.15 as the file is loaded, from
    # 1.15 at init (module_call.go keeps the expression), which flatten cannot evaluate.
    _, tf_diags = build_graph(root, options=Options(terraform_version=(1, 11)))
    assert ("error", "Variables not allowed") in summaries(tf_diags)
    _, tf_diags = build_graph(root, options=Options(terraform_version=(1, 15)))
    assert summaries(tf_diags) == [("error", "Unsupported module source expression")]


def test_tofu_rejects_sensitive_source_and_version(tree) -> None:
    root = tree(
        {
            "main.tf": 'module "test" {\n  source  = sensitive("hostname/namespace/name/system")\n'
            '  version = sensitive("1.0.0")\n}\n'
        }
    )
    graph, diags = build_graph(root, options=TOFU)
    assert len(graph) == 1
    assert located(diags) == [
        ("error", "Sensitive value not allowed", 2, 13, 56),
        ("error", "Invalid version constraint", 3, 13, 31),
    ]
    assert "cannot be used as module.test.source." in diags[0].detail
    assert "cannot be used as version constraints." in diags[1].detail


def test_tofu_static_source_errors_have_opentofu_summaries(tree) -> None:
    root = tree(
        {
            "main.tf": 'module "super#module" {\n}\n\nmodule "super" {\n  source = var.modulename\n}\n'
            'module "out" {\n  source = module.super.path\n}\n'
            'locals {\n  a = local.b\n  b = local.a\n}\nmodule "loop" {\n  source = local.a\n}\n'
            'module "ver" {\n  source  = "example.com/a/b/c"\n  version = "not a version"\n}\n'
            'module "cond" {\n  source = true ? "./a" : "./b"\n}\n'
        }
    )
    _, diags = build_graph(root, options=TOFU)
    assert located(diags) == [
        ("error", "Invalid module instance name", 1, 8, 22),
        ("error", "Missing required argument", 1, 23, 24),  # HCL's missing-item range: the brace
        ("error", "Undefined variable", 5, 12, 26),
        ("error", "Module output not supported in static context", 8, 12, 29),
        ("error", "Circular reference", 11, 3, 14),
        ("error", "Unable to compute static value", 12, 3, 14),
        ("error", "Unable to compute static value", 11, 3, 14),
        ("error", "Unable to compute static value", 15, 12, 19),
        ("error", "Invalid version constraint", 19, 13, 28),
        ("error", "Unsupported module source expression", 22, 12, 32),
    ]
    assert diags[3].detail.endswith(
        "module.super.path in static context, which is required by module.out.source"
    )


def test_tofu_null_version_still_means_a_registry_source(tree) -> None:
    root = tree({"main.tf": call("a", "./a", "  version = null\n"), "a/main.tf": ""})
    _, diags = build_graph(root, options=TOFU)
    assert summaries(diags) == [("error", "Invalid registry module source address")]


def test_tofu_required_child_variable_missing_from_the_call(tree) -> None:
    root = tree(
        {
            "main.tf": call("a", "./a"),
            "a/main.tf": 'variable "where" {}\nmodule "b" {\n  source = "./${var.where}"\n}\n',
        }
    )
    _, diags = build_graph(root, options=TOFU)
    assert summaries(diags) == [
        ("error", "Missing required variable in module call"),
        ("error", "Unable to compute static value"),
    ]
    assert diags[0].range is not None and diags[0].range.filename == "main.tf"


def test_tofu_errors_in_the_callers_argument_are_reported(tree) -> None:
    root = tree(
        {
            "main.tf": call("a", "./a", "  where = var.nope\n"),
            "a/main.tf": 'variable "where" {}\nmodule "b" {\n  source = "./${var.where}"\n}\n',
        }
    )
    _, diags = build_graph(root, options=TOFU)
    assert [(d.summary, d.range.filename if d.range else "") for d in diags] == [
        ("Undefined variable", "main.tf"),
        ("Unable to compute static value", "a/main.tf"),
    ]


def test_unreadable_file_in_a_child_names_the_call(tree) -> None:
    root = tree({"main.tf": call("c", "./c")})
    (root / "c").mkdir()
    (root / "c" / "b.tf").write_bytes(b'locals {\n  a = "\xff"\n}\n')
    _, diags = build(root, options=OPTS)
    [err] = diags.errors
    assert err.summary == "Invalid character encoding"
    assert err.range is not None and err.range.filename == "c/b.tf" and err.module == "module.c"
    assert err.detail.endswith("The module is called by module.c at main.tf:2,12-17.")


def test_nul_byte_in_a_local_source_is_a_diagnostic(tree) -> None:
    # Found by scripts/fuzz: os.path.realpath raises ValueError on a NUL byte.
    root = tree({"main.tf": 'module "c" {\n  source = "./c\\u0000x"\n}\n'})
    _, diags = build(root, options=OPTS)
    assert [(d.summary, str(d.range)) for d in diags] == [("Unreadable module directory", "main.tf:2,12-24")]


def test_a_source_too_long_for_the_os_is_a_diagnostic(tree) -> None:
    # Found by scripts/fuzz: Path.is_dir raises OSError(ENAMETOOLONG) instead of returning False.
    root = tree({"main.tf": call("c", "./" + "x" * 300)})
    _, diags = build(root, options=OPTS)
    assert [d.summary for d in diags] == ["Unreadable module directory"]


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_a_symlink_to_a_module_outside_the_root_is_the_module_not_a_lost_file(tmp_path: Path) -> None:
    # ./linked -> ../real: Terraform's path.module is "../real", so the module goes to real/ beside
    # the root's own directory; the link is not reported as a file left out of the copy.
    repo = tmp_path / "repo"
    write_files(repo, {"live/main.tf": call("l", "./linked"), "real/main.tf": "", "real/x.tpl": "x\n"})
    (repo / "live" / "linked").symlink_to("../real", target_is_directory=True)
    result, diags = build(repo / "live", options=OPTS)
    assert not diags, diags
    assert result.tree.root == "live"
    assert result.tree.paths() == [MANIFEST_NAME, "live/main.tf.json", "real/main.tf.json", "real/x.tpl"]
    assert json.loads(result.files["live/main.tf.json"])["module"]["l"]["source"] == "../real"


def test_tofu_static_source_keeps_every_digit_of_a_number(tree) -> None:
    """A number interpolated into a source converts to text as cty does (every digit; Terraform
    1.11.4's tostring(2.92073342245454551634931124953E+57) is the directory name below)."""
    digits = "2920733422454545516349311249530000000000000000000000000000"
    root = tree(
        {
            "main.tf": 'module "m" {\n  source = "./m-${2.92073342245454551634931124953E+57}"\n}\n',
            f"m-{digits}/main.tf": "",
        }
    )
    graph, diags = build_graph(root, options=TOFU)
    assert not diags
    assert graph.node("module.m").directory.name == f"m-{digits}"
