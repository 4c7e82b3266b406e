"""File selection in a module directory (spec §1)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flatten.lang.options import Dialect
from flatten.stages.files import is_override_name, list_config_files, split_extension

TF = Dialect.TERRAFORM
TOFU = Dialect.OPENTOFU


def names(directory: Path, dialect: Dialect) -> tuple[list[str], list[str]]:
    listing = list_config_files(directory, dialect=dialect)
    return [f.name for f in listing.primary], [f.name for f in listing.override]


@pytest.mark.parametrize(
    ("base", "expected"),
    [
        ("override", True),
        ("main_override", True),
        ("_override", True),
        ("foo.override", False),
        ("Override", False),
        ("overrides", False),
        ("my-override", False),
    ],
)
def test_override_names(base: str, expected: bool) -> None:
    assert is_override_name(base) is expected


@pytest.mark.parametrize(
    ("name", "dialect", "expected"),
    [
        ("main.tf", TF, ("main", ".tf")),
        ("main.tf.json", TF, ("main", ".tf.json")),
        ("main.tofu", TF, None),
        ("main.tofu", TOFU, ("main", ".tofu")),
        ("main.tofu.json", TOFU, ("main", ".tofu.json")),
        ("x.tftest.hcl", TF, None),
        ("x.tftest.json", TOFU, None),
        ("x.tofutest.hcl", TOFU, None),
        ("terraform.tfvars", TF, None),
        ("vars.json", TF, None),
        ("main.hcl", TF, None),
        ("main.tofu.json", TF, None),
        ("list.tfquery.hcl", TF, None),
        ("list.tfquery.json", TF, None),
        ("m.tfmigrate.hcl", TF, None),
        ("x.tftest.json", TF, None),
        ("main.tf.json.bak", TF, None),
        ("main.TF", TF, None),
        ("a.b.tf", TF, ("a.b", ".tf")),
        ("override.tofu.json", TOFU, ("override", ".tofu.json")),
    ],
)
def test_split_extension(name: str, dialect: Dialect, expected: tuple[str, str] | None) -> None:
    assert split_extension(name, dialect) == expected


def test_order_ignored_names_and_overrides(tree) -> None:
    root = tree(
        {
            "b.tf": "",
            "a.tf.json": "{}",
            "B.tf": "",
            ".hidden.tf": "",
            "backup.tf~": "",
            "#autosave.tf#": "",
            "override.tf": "",
            "a_override.tf.json": "{}",
            "z_override.tf": "",
            "notes.txt": "",
            "errors": "",
            "sub/inner.tf": "",
        }
    )
    primary, override = names(root, TF)
    # Byte order: uppercase before lowercase; subdirectories never read.
    assert primary == ["B.tf", "a.tf.json", "b.tf"]
    assert override == ["a_override.tf.json", "override.tf", "z_override.tf"]


def test_tofu_shadowing_is_per_extension_pair(tree) -> None:
    root = tree(
        {
            "main.tf": "",
            "main.tofu": "",
            "data.tf.json": "{}",
            "data.tofu.json": "{}",
            "mixed.tf.json": "{}",
            "mixed.tofu": "",
            "vars_override.tf": "",
            "vars_override.tofu": "",
        }
    )
    primary, override = names(root, TOFU)
    assert primary == ["data.tofu.json", "main.tofu", "mixed.tf.json", "mixed.tofu"]
    assert override == ["vars_override.tofu"]
    # Terraform does not know .tofu files at all.
    primary, override = names(root, TF)
    assert primary == ["data.tf.json", "main.tf", "mixed.tf.json"]
    assert override == ["vars_override.tf"]


def test_symlinked_file_is_read_and_directories_named_like_files_are_not(tree) -> None:
    root = tree({"real/target.tf": "", "dir.tf/x.tf": ""})
    os.symlink(root / "real" / "target.tf", root / "link.tf")
    primary, _ = names(root, TF)
    assert primary == ["link.tf"]


def test_missing_directory_raises_oserror(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        list_config_files(tmp_path / "nope", dialect=TF)
