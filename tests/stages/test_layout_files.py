"""Which files beside a module come along into the output (issue 27, items 4-6).

Test files carried with the directories they name rewritten; files the configuration names
through path.module/path.root copied even when the walk leaves their kind out; what
.terraformignore and --exclude keep out.
"""

from __future__ import annotations

import json
from pathlib import Path

from support.files import write_tree

from flatten.build import build
from flatten.lang.diagnostics import Diagnostics
from flatten.lang.options import Options

_ROOT = """
module "child" {
  source = "./modules/child"
}

output "v" {
  value = module.child.v
}
"""
_CHILD = 'output "v" {\n  value = "x"\n}\n'


def _build(root: Path, **options: object) -> tuple[dict[str, bytes], Diagnostics]:
    result, diags = build(root, options=Options(**options))  # type: ignore[arg-type]
    assert not diags.has_errors, diags
    return result.files, diags


def _warnings(diags: Diagnostics, summary: str) -> list[str]:
    return [d.detail for d in diags if d.summary == summary]


# -- item 4: test files -----------------------------------------------------------------------


def test_test_files_come_along(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "root",
        {
            "main.tf": _ROOT,
            "modules/child/main.tf": _CHILD,
            "unit.tftest.hcl": 'run "a" {\n  command = plan\n}\n',
            "tests/more.tftest.json": '{"run": {"b": {"command": "plan"}}}\n',
            "tests/other.tofutest.hcl": 'run "c" {}\n',
            "tests/mocks/aws.tfmock.hcl": 'mock_resource "aws_s3_bucket" {}\n',
        },
    )
    files, diags = _build(root)
    for rel in (
        "unit.tftest.hcl",
        "tests/more.tftest.json",
        "tests/other.tofutest.hcl",
        "tests/mocks/aws.tfmock.hcl",
    ):
        assert files[rel] == (root / rel).read_bytes(), rel  # nothing to rewrite: the same bytes
    assert not diags


def test_a_run_module_source_follows_the_module_to_its_output_place(tmp_path: Path) -> None:
    # ./linked is a symlink to modules/real: Terraform (and the output) keep the module at its
    # real place, so the run's source must name that place in the output.
    text = (
        "# keep this comment\n"
        'run "direct" {\n'
        "  module {\n"
        '    source = "./linked" # and this one\n'
        "  }\n"
        "  assert {\n"
        '    condition     = output.v == "é"\n'
        '    error_message = "unicode before the splice is kept"\n'
        "  }\n"
        "}\n"
    )
    root = write_tree(
        tmp_path / "root",
        {
            "main.tf": 'module "child" {\n  source = "./linked"\n}\n',
            "modules/real/main.tf": _CHILD,
            "tests/main.tftest.hcl": text,
            "tests/t.tftest.json": json.dumps({"run": {"d": {"module": {"source": "./linked"}}}}),
        },
    )
    (root / "linked").symlink_to("modules/real", target_is_directory=True)
    files, _ = _build(root)
    assert "modules/real/main.tf.json" in files
    assert files["tests/main.tftest.hcl"].decode() == text.replace('"./linked"', '"./modules/real"')
    assert json.loads(files["tests/t.tftest.json"]) == {
        "run": {"d": {"module": {"source": "./modules/real"}}}
    }


def test_a_helper_module_of_a_run_is_copied_whole(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "root",
        {
            "main.tf": _ROOT,
            "modules/child/main.tf": _CHILD,
            "tests/setup/main.tf": 'output "p" {\n  value = "pre"\n}\n',
            "tests/setup/data.txt": "x",
            "tests/main.tftest.hcl": 'run "setup" {\n  module {\n    source = "./tests/setup"\n  }\n}\n',
        },
    )
    files, _ = _build(root)
    assert files["tests/setup/main.tf"] == (root / "tests/setup/main.tf").read_bytes()
    assert files["tests/setup/data.txt"] == b"x"


def test_a_relocated_root_keeps_its_runs_pointing_at_the_shared_module(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            "live/main.tf": 'module "s" {\n  source = "../shared/s"\n}\n',
            "shared/s/main.tf": _CHILD,
            "live/tests/a.tftest.hcl": 'run "a" {\n  module {\n    source = "../shared/s"\n  }\n}\n',
        },
    )
    files, _ = _build(tmp_path / "live")
    assert "shared/s/main.tf.json" in files
    assert b'source = "../shared/s"' in files["live/tests/a.tftest.hcl"]


def test_a_test_file_that_cannot_come_along_is_named_in_a_warning(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            "root/main.tf": _ROOT,
            "root/modules/child/main.tf": _CHILD,
            "elsewhere/main.tf": _CHILD,
            "root/outside.tftest.hcl": 'run "a" {\n  module {\n    source = "../elsewhere"\n  }\n}\n',
            "root/broken.tftest.hcl": 'run "a" {\n',
            "root/mock.tftest.hcl": 'mock_provider "aws" {\n  source = "./missing"\n}\n',
        },
    )
    files, diags = _build(tmp_path / "root")
    warned = _warnings(diags, "Test file not copied")
    assert len(warned) == 3, warned
    for name in ("outside.tftest.hcl", "broken.tftest.hcl", "mock.tftest.hcl"):
        assert name not in files
        assert any(name in w for w in warned), name
    assert any('"../elsewhere"' in w for w in warned)


def test_mock_provider_source_is_carried(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "root",
        {
            "main.tf": _ROOT,
            "modules/child/main.tf": _CHILD,
            "tests/mocks/aws.tfmock.hcl": 'mock_resource "aws_s3_bucket" {}\n',
            "tests/unit.tftest.hcl": 'mock_provider "aws" {\n  source = "./tests/mocks"\n}\nrun "a" {}\n',
        },
    )
    files, diags = _build(root)
    assert files["tests/unit.tftest.hcl"] == (root / "tests/unit.tftest.hcl").read_bytes()
    assert "tests/mocks/aws.tfmock.hcl" in files and not diags


def test_inline_leaves_out_a_test_naming_an_inlined_call_and_says_so(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "root",
        {
            "main.tf": _ROOT,
            "modules/child/main.tf": _CHILD,
            "moved.tftest.hcl": 'run "a" {\n  assert {\n    condition = module.child.v == "x"\n'
            '    error_message = "m"\n  }\n}\n',
            "kept.tftest.hcl": 'run "b" {\n  assert {\n    condition = output.v == "x"\n'
            '    error_message = "m"\n  }\n}\n',
        },
    )
    files, diags = _build(root, inline=True)
    assert "kept.tftest.hcl" in files and "moved.tftest.hcl" not in files
    [warning] = _warnings(diags, "Test file not copied")
    assert "moved.tftest.hcl" in warning and "module.child" in warning


# -- item 5: files the configuration names ----------------------------------------------------

_REMOTE_STATE = """
data "terraform_remote_state" "snap" {
  backend = "local"
  config = {
    path = "${path.module}/snap.tfstate"
  }
}

locals {
  hidden = file("${path.root}/.data/settings.json")
}
"""


def test_a_state_snapshot_the_configuration_reads_is_copied(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "root",
        {
            "main.tf": _REMOTE_STATE,
            "snap.tfstate": "{}",
            "other.tfstate": "{}",
            ".data/settings.json": "{}",
            "plan.tfplan": "x",
        },
    )
    files, diags = _build(root)
    assert files["snap.tfstate"] == b"{}" and files[".data/settings.json"] == b"{}"
    assert "other.tfstate" not in files and "plan.tfplan" not in files  # nothing names them
    assert not diags


def test_a_named_file_the_user_excluded_is_named_in_a_warning(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "root",
        {
            "main.tf": _REMOTE_STATE,
            "snap.tfstate": "{}",
            ".data/settings.json": "{}",
            ".terraformignore": ".data/\n",
        },
    )
    files, diags = _build(root, exclude=("snap.tfstate",))
    assert "snap.tfstate" not in files and ".data/settings.json" not in files
    warned = _warnings(diags, "File read by the configuration not copied")
    assert len(warned) == 2 and any("snap.tfstate" in w for w in warned)


def test_the_roots_own_state_name_is_never_copied(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "root",
        {"main.tf": _REMOTE_STATE.replace("snap.tfstate", "terraform.tfstate"), "terraform.tfstate": "{}"},
    )
    files, diags = _build(root)
    assert "terraform.tfstate" not in files
    [warning] = _warnings(diags, "File read by the configuration not copied")
    assert "terraform.tfstate" in warning


# -- item 6: what users keep out --------------------------------------------------------------


def test_terraformignore_and_exclude_keep_files_out(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "root",
        {
            "main.tf": _ROOT,
            ".terraformignore": "*.log\nsecrets/\n!keep.log\nmodules/child/private.txt\n",
            "crash.log": "x",
            "keep.log": "x",
            "secrets/id_rsa": "x",
            "notes.txt": "x",
            "prod.auto.tfvars": 'x = "y"\n',
            "modules/child/main.tf": _CHILD,
            "modules/child/private.txt": "x",
            "modules/child/.terraformignore": "draft.*\n",
            "modules/child/draft.sh": "x",
            "modules/child/run.sh": "x",
        },
    )
    files, _ = _build(root)
    assert {"keep.log", "notes.txt", "prod.auto.tfvars", "modules/child/run.sh"} <= set(files)
    assert not {"crash.log", "secrets/id_rsa", "modules/child/private.txt", "modules/child/draft.sh"} & set(
        files
    )
    files, _ = _build(root, exclude=("notes.txt", "*.sh"))
    assert "notes.txt" not in files and "modules/child/run.sh" not in files
    assert json.loads(files["flatten.manifest.json"])["exclude"] == ["notes.txt", "*.sh"]


def test_a_changed_path_module_read_changes_the_modules_outside_view(tmp_path: Path) -> None:
    # The incremental rebuild reuses every other output file when a module's outside view is
    # unchanged; the files a module names are copied beside it, so they are part of that view.
    from flatten.build import load_module
    from flatten.stages.reads import outside_view

    views = []
    for name in ("notes.txt", "snap.tfstate"):
        root = write_tree(tmp_path / name, {"main.tf": f'locals {{\n  p = "${{path.module}}/{name}"\n}}\n'})
        module, _ = load_module(root, root=root, options=Options())
        views.append(outside_view(module, options=Options()))
    assert views[0] != views[1]


def test_inlined_modules_files_honour_the_users_rules(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "root",
        {
            "main.tf": _ROOT,
            "modules/child/main.tf": 'output "v" {\n  value = file("${path.module}/v.txt")\n}\n',
            "modules/child/v.txt": "x",
            "modules/child/notes.txt": "private",
            "modules/child/.terraformignore": "*.log\n",
            "modules/child/crash.log": "x",
        },
    )
    files, _ = _build(root, inline=True, exclude=("notes.txt",))
    assert files["modules/child/v.txt"] == b"x"
    assert "modules/child/notes.txt" not in files and "modules/child/crash.log" not in files
