"""The table of Terraform/OpenTofu differences (flatten/lang/dialect.py) is the only place that knows them."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import pytest

import flatten
from flatten.lang.dialect import FEATURES, VALUES, WORDING, Dialect
from flatten.stages.files import split_extension

PACKAGE = Path(flatten.__file__).parent
TABLE = PACKAGE / "lang" / "dialect.py"


def _sources() -> dict[Path, str]:
    return {p: p.read_text(encoding="utf-8") for p in PACKAGE.rglob("*.py") if p != TABLE}


def test_no_code_outside_the_table_compares_dialects() -> None:
    # A comparison anywhere else would be a difference a newcomer cannot find in the table.
    compare = re.compile(r"(\bis\b|==|!=)\s*Dialect\.|Dialect\.\w+\s*(\bis\b|==|!=)|dialect\s*(==|!=)\s*\"")
    found = [
        f"{path.relative_to(PACKAGE)}:{n}: {line.strip()}"
        for path, text in _sources().items()
        for n, line in enumerate(text.splitlines(), 1)
        if compare.search(line)
    ]
    assert found == []


@pytest.mark.parametrize(("table", "method"), [(FEATURES, "allows"), (WORDING, "word")])
def test_every_row_of_the_table_is_asked_for(table: Mapping[str, object], method: str) -> None:
    # A row nobody queries is a difference the code no longer has (or a typo at the call site).
    text = "\n".join(_sources().values())
    unused = [key for key in table if f'{method}("{key}"' not in text and f"{method}('{key}'" not in text]
    if method == "word":
        unused = [key for key in unused if key != "product"]  # asked for through Dialect.product
    assert unused == []


def test_an_unknown_feature_is_an_error_not_a_silent_no() -> None:
    with pytest.raises(KeyError):
        Dialect.OPENTOFU.allows("no_such_feature")


def test_each_dialect_has_one_row_of_values() -> None:
    assert set(VALUES) == {d.value for d in Dialect}


@pytest.mark.parametrize("dialect", list(Dialect))
def test_no_configuration_suffix_ends_another(dialect: Dialect) -> None:
    # split_extension tests suffixes in table order; that is only safe when none ends another.
    suffixes = dialect.values.config_suffixes
    assert [(a, b) for a in suffixes for b in suffixes if a != b and a.endswith(b)] == []


@pytest.mark.parametrize(
    ("name", "dialect", "want"),
    [
        ("main.tofu.json", Dialect.OPENTOFU, ("main", ".tofu.json")),
        ("main.tofu", Dialect.OPENTOFU, ("main", ".tofu")),
        ("main.tofu", Dialect.TERRAFORM, None),
        ("main.tf.json", Dialect.TERRAFORM, ("main", ".tf.json")),
        ("a.tftest.hcl", Dialect.OPENTOFU, None),
        ("a.tofutest.json", Dialect.OPENTOFU, None),
        ("a.tfquery.hcl", Dialect.TERRAFORM, None),
    ],
)
def test_file_suffixes_follow_the_table(name: str, dialect: Dialect, want: tuple[str, str] | None) -> None:
    assert split_extension(name, dialect) == want


def test_wording_is_the_engines_own() -> None:
    # The texts users and CI match on: each engine's spelling, with fields filled in.
    assert Dialect.TERRAFORM.product == "Terraform"
    assert Dialect.OPENTOFU.product == "OpenTofu"
    assert Dialect.TERRAFORM.word("duplicate_ephemeral", type="x") == 'Duplicate ephemeral "x" configuration'
    tofu = Dialect.OPENTOFU.word("duplicate_ephemeral", type="x")
    assert tofu == 'Duplicate ephemeral resource "x" configuration'
