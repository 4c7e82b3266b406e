"""Terraform as the oracle for module trees: every sample's output installs and requires the same providers.

For each sample and each tree under tests/data/oracle/: ``terraform get`` succeeds on the emitted
tree, and ``terraform providers`` prints the same requirement tree for the output as for the
original (module children compared as sets: the output lists calls sorted by name).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from support.cases import case_dirs
from support.oracle import Terraform, terraform
from support.paths import DATA, SAMPLES

from flatten.build import build
from flatten.lang.options import Options
from flatten.stages.emit import write_tree

TREES = case_dirs(SAMPLES) + case_dirs(DATA / "oracle")

Tree = dict[str, object]


def requirement_tree(text: str) -> Tree:
    """Parse ``terraform providers`` output into {"providers": set, "modules": {name: Tree}}."""
    root: Tree = {"providers": set(), "modules": {}}
    stack: list[tuple[int, Tree]] = [(-1, root)]
    for line in text.splitlines():
        m = re.match(r"^([│├└─\s]*)(.*)$", line)
        assert m is not None
        depth, item = len(m.group(1)), m.group(2).strip()
        if not item or item.startswith(("Providers required", "Providers required by state")):
            if item.startswith("Providers required by state"):
                break
            continue
        while stack and stack[-1][0] >= depth:
            stack.pop()
        parent = stack[-1][1]
        if item.startswith("module."):
            node: Tree = {"providers": set(), "modules": {}}
            parent["modules"][item] = node  # type: ignore[index]
            stack.append((depth, node))
        elif item.startswith("provider["):
            parent["providers"].add(item)  # type: ignore[attr-defined]
    return root


def _providers(tf: Terraform, directory: Path) -> Tree:
    get = tf.run("get", "-no-color", cwd=directory)
    assert get.returncode == 0, get.stderr + get.stdout
    providers = tf.run("providers", "-no-color", cwd=directory)
    assert providers.returncode == 0, providers.stderr + providers.stdout
    return requirement_tree(providers.stdout)


@pytest.mark.oracle
@pytest.mark.parametrize("case", TREES, ids=[f"{c.parent.name}/{c.name}" for c in TREES])
def test_output_installs_and_requires_the_same_providers(case: Path, tmp_path: Path) -> None:
    tf = terraform()
    original = tmp_path / "original"
    shutil.copytree(case, original, symlinks=True)
    result, diags = build(original, options=Options())
    assert not diags.has_errors, diags
    out = tmp_path / "flat"
    write_tree(out, result.tree.files, result.tree.copies)
    flat = _providers(tf, out)
    assert flat == _providers(tf, original)
    assert flat["modules"] or case.name == "web-service" or "oracle" in case.parts


def test_requirement_tree_parser() -> None:
    text = """
Providers required by configuration:
.
├── provider[registry.terraform.io/hashicorp/aws] >= 5.0
├── module.b
│   └── provider[registry.terraform.io/hashicorp/aws]
└── module.a
    └── module.a.module.c
        └── provider[terraform.io/builtin/terraform]
"""
    tree = requirement_tree(text)
    assert tree["providers"] == {"provider[registry.terraform.io/hashicorp/aws] >= 5.0"}
    modules = tree["modules"]
    assert set(modules) == {"module.a", "module.b"}  # type: ignore[arg-type]
    assert modules["module.a"]["modules"]["module.a.module.c"]["providers"] == {  # type: ignore[index]
        "provider[terraform.io/builtin/terraform]"
    }
