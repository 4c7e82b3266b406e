"""What the layout never puts into the output (issue 38 items 4 and 7) and the test files it always
carries (issue 39 item 0): Terraform's entries of the root module's directory are never written by
a build, test helper directories follow a module directory's copy rules and never come from
inside .git or .terraform, and a test directory's test files come along whatever else it holds."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.files import write_tree

from flatten.build import build
from flatten.lang.diagnostics import Diagnostics
from flatten.lang.options import Options

_ROOT = 'variable "x" {\n  default = 1\n}\noutput "y" {\n  value = var.x * 2\n}\n'


def _build(root: Path, **options: object) -> tuple[dict[str, bytes], Diagnostics]:
    result, diags = build(root, options=Options(**options))  # type: ignore[arg-type]
    assert not diags.has_errors, diags
    return result.files, diags


def _warnings(diags: Diagnostics, summary: str) -> list[str]:
    return [d.detail for d in diags if d.summary == summary]


# -- issue 39 item 0: a test directory that also holds configuration ------------------------------


def test_a_tests_directory_with_a_debug_root_keeps_its_test_files(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "root",
        {
            "main.tf": _ROOT,
            "tests/a.tftest.hcl": 'run "ok" {\n  assert {\n    condition = output.y == 2\n'
            '    error_message = "no"\n  }\n}\n',
            "tests/b.tftest.json": '{"run": {"b": {"command": "plan"}}}\n',
            "tests/debug.tf": 'module "dbg" {\n  source = "../"\n  x = 3\n}\n',
            "tests/deeper/c.tftest.hcl": 'run "c" {}\n',  # not a test file of the root: not read
        },
    )
    files, diags = _build(root)
    assert files["tests/a.tftest.hcl"] == (root / "tests/a.tftest.hcl").read_bytes()
    assert files["tests/b.tftest.json"] == (root / "tests/b.tftest.json").read_bytes()
    assert "tests/debug.tf" not in files and not _warnings(diags, "Test file not copied")


def test_a_test_directory_that_is_a_called_module_keeps_its_test_files(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "root",
        {
            "main.tf": _ROOT + 'module "t" {\n  source = "./tests"\n}\n',
            "tests/main.tf": 'output "z" {\n  value = 1\n}\n',
            "tests/a.tftest.hcl": 'run "ok" {}\n',
        },
    )
    files, _ = _build(root)
    assert "tests/main.tf.json" in files
    assert files["tests/a.tftest.hcl"] == b'run "ok" {}\n'


# -- issue 38 item 4: Terraform's entries are never the source's ------------------------------------


@pytest.mark.parametrize(
    ("main", "present", "entry"),
    [
        (
            'output "e" {\n  value = file("${path.root}/.terraform/environment")\n}\n',
            ".terraform/environment",
            ".terraform",
        ),
        (
            'output "e" {\n  value = file("${path.module}/errored.tfstate")\n}\n',
            "errored.tfstate",
            "errored.tfstate",
        ),
        (
            'output "e" {\n  value = file("${path.root}/terraform.tfstate.d/dev/terraform.tfstate")\n}\n',
            "terraform.tfstate.d/dev/terraform.tfstate",
            "terraform.tfstate.d",
        ),
        ("", "terraform.tfstate.d/README.md", "terraform.tfstate.d"),
    ],
)
def test_a_file_under_terraforms_entries_is_never_written(
    tmp_path: Path, main: str, present: str, entry: str
) -> None:
    root = write_tree(tmp_path / "root", {"main.tf": _ROOT + main, present: "from the source"})
    files, diags = _build(root)
    assert not [rel for rel in files if rel == entry or rel.startswith(entry + "/")], sorted(files)
    [warning] = _warnings(diags, "File not copied")
    assert present in warning and entry in warning and "Terraform's" in warning


def test_the_source_lock_file_still_wins(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "root", {"main.tf": _ROOT, ".terraform.lock.hcl": "# lock\n"})
    files, diags = _build(root)
    assert files[".terraform.lock.hcl"] == b"# lock\n" and not _warnings(diags, "File not copied")


@pytest.mark.parametrize(
    ("test", "where"),
    [
        ('run "a" {\n  module {\n    source = "./.terraform"\n  }\n}\n', ".terraform"),
        ('run "a" {\n  module {\n    source = "./.terraform/modules/m"\n  }\n}\n', ".terraform"),
        ('mock_provider "aws" {\n  source = "./.terraform/mocks"\n}\n', ".terraform"),
        ('run "a" {\n  module {\n    source = "./.git"\n  }\n}\n', ".git"),
        ('mock_provider "aws" {\n  source = "./.git/hooks"\n}\n', ".git"),
    ],
)
def test_a_test_naming_git_or_terraforms_directory_is_refused(tmp_path: Path, test: str, where: str) -> None:
    root = write_tree(
        tmp_path / "root",
        {
            "main.tf": _ROOT,
            "t.tftest.hcl": test,
            ".terraform/environment": "dev",
            ".terraform/modules/m/main.tf": "",
            ".terraform/mocks/aws.tfmock.hcl": "",
            ".git/config": '[http]\n  extraheader = "AUTHORIZATION: basic c2VjcmV0"\n',
            ".git/hooks/aws.tfmock.hcl": "",
        },
    )
    files, diags = _build(root)
    assert "t.tftest.hcl" not in files
    assert not [rel for rel in files if rel.startswith((".terraform/", ".git/", "hooks/", "mocks/"))], sorted(
        files
    )
    assert not [rel for rel, data in files.items() if b"AUTHORIZATION" in data]
    [warning] = _warnings(diags, "Test file not copied")
    assert f"is inside {where}" in warning


# -- issue 38 item 7: helper directories follow the module directories' rules ---------------------


def test_a_helper_directory_follows_the_copy_rules(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "root",
        {
            "main.tf": _ROOT,
            "t.tftest.hcl": 'run "a" {\n  module {\n    source = "./setup"\n  }\n}\n',
            "setup/main.tf": 'output "p" {\n  value = 1\n}\n',
            "setup/data.txt": "kept",
            "setup/server.pem": "ignored by the file",
            "setup/secrets/token.txt": "ignored directory",
            "setup/excluded.txt": "--exclude",
            "setup/terraform.tfstate": "{}",
            "setup/plan.tfplan": "x",
            "setup/.git/config": "[core]\n",
            "setup/.hidden": "x",
            "setup/.terraform/environment": "dev",
            ".terraformignore": "setup/secrets/\n",
            "setup/.terraformignore": "*.pem\n",
        },
    )
    files, _ = _build(root, exclude=("excluded.txt",))
    helper = sorted(rel for rel in files if rel.startswith("setup/"))
    assert helper == ["setup/data.txt", "setup/main.tf"], helper
    assert "t.tftest.hcl" in files


def test_a_helper_directory_the_user_left_out_refuses_the_test(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "root",
        {
            "main.tf": _ROOT,
            "t.tftest.hcl": 'run "a" {\n  module {\n    source = "./private/setup"\n  }\n}\n',
            "private/setup/main.tf": "",
            ".terraformignore": "private/\n",
        },
    )
    files, diags = _build(root)
    assert not [rel for rel in files if rel.startswith("private/")] and "t.tftest.hcl" not in files
    [warning] = _warnings(diags, "Test file not copied")
    assert ".terraformignore" in warning


# -- issue 39 item 2: credentials in copied files ------------------------------------------------

_KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU=\n"
    + "-----END OPENSSH PRIVATE KEY-----\n"
)


def test_a_copied_credential_is_named_with_the_rule_that_leaves_it_out(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "root",
        {
            "main.tf": _ROOT + 'module "app" {\n  source = "./modules/app"\n}\n',
            "modules/app/main.tf": "",
            "id_rsa": _KEY,
            "modules/app/server.pem": "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA "
            "PRIVATE KEY-----\n",
            "modules/app/ci.env": "GITHUB_TOKEN=ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8\n",
            "creds": "[default]\naws_access_key_id = AKIAQWERTYUIOPASDFGH\n",
            # Names alone say nothing: neither of these is a credential.
            "secrets.txt": "nothing here\n",
            "modules/app/key.pem.example": "put your key here\n",
            "README.md": "-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n",
        },
    )
    files, diags = _build(root)
    warned = _warnings(diags, "Credential copied into the output")
    assert len(warned) == 4, warned
    by_file = {w.split(" ", 1)[0]: w for w in warned}
    assert "a private key" in by_file["id_rsa"] and "`/id_rsa`" in by_file["id_rsa"]
    assert "`/modules/app/server.pem`" in by_file["modules/app/server.pem"]
    assert "a GitHub token" in by_file["modules/app/ci.env"]
    assert "an AWS access key" in by_file["creds"]
    assert ".terraformignore" in by_file["id_rsa"]
    assert "id_rsa" in files  # warned about, still copied: the user decides


def test_the_suggested_rule_leaves_the_credential_out(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "root", {"main.tf": _ROOT, "deploy/id_ed25519": _KEY})
    _, diags = _build(root)
    [warning] = _warnings(diags, "Credential copied into the output")
    line = warning.split("`")[1]
    (root / ".terraformignore").write_text(line + "\n")
    files, diags = _build(root)
    assert "deploy/id_ed25519" not in files and not _warnings(diags, "Credential copied into the output")


# -- issue 39 item 1: the manifest lists what flatten owns ---------------------------------------


def test_the_manifest_lists_every_file_flatten_writes_with_its_digest(tmp_path: Path) -> None:
    import hashlib
    import json

    root = write_tree(
        tmp_path / "root",
        {
            "main.tf": _ROOT,
            "t.tftest.hcl": 'run "a" {}\n',
            "scripts/run.sh": "echo\n",
            "terraform.tfvars": "x = 2\n",
        },
    )
    files, _ = _build(root)
    owned = json.loads(files["flatten.manifest.json"])["files"]
    assert sorted(owned) == sorted(set(files) - {"flatten.manifest.json"})
    for rel, digest in owned.items():
        assert digest == "sha256:" + hashlib.sha256(files[rel]).hexdigest(), rel
