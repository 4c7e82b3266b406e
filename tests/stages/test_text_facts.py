"""What the checks learn of a text, shared by the checks of many modules (stages/text_facts.py).

A text's reference keys and shape are its own, but whether its references are clean is the
module's: shared facts must give every module's part exactly what its own facts give, whichever
modules went before it, and when the shapes are forgotten and numbered again midway.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.files import write_tree

from flatten.lang.model import Module
from flatten.lang.options import Options
from flatten.stages import references_check
from flatten.stages.check_parts import leaf_part
from flatten.stages.load import load_module
from flatten.stages.memo import ModuleChecks
from flatten.stages.text_facts import TextFacts

_RESOURCES = "".join(
    f'resource "terraform_data" "r{k}" {{\n'
    f"  count = var.n > 0 ? 1 : 0\n"
    f'  input = {{ a = var.x, b = "${{local.y}}-{k}", c = lenght(var.x) }}\n'
    "}\n"
    for k in range(6)
)
# The same expressions in modules that declare what they name, or not: a text clean in one is
# an error in the next.
_MODULES = {
    "clean": 'variable "n" {}\nvariable "x" {}\nlocals {\n  y = 1\n}\n'
    + _RESOURCES.replace("lenght", "length"),
    "no_x": 'variable "n" {}\nlocals {\n  y = 1\n}\n' + _RESOURCES,
    "no_local": 'variable "n" {}\nvariable "x" {}\n' + _RESOURCES,
    "typo": 'variable "n" {}\nvariable "x" {}\nlocals {\n  y = 1\n}\n' + _RESOURCES,
}


def _loaded(tmp_path: Path) -> tuple[Module, list[tuple[str, Module]]]:
    files = {f"modules/{name}/main.tf": text for name, text in _MODULES.items()}
    files["main.tf"] = "".join(
        f'module "{name}" {{\n  source = "./modules/{name}"\n  n = 1\n  x = "v"\n}}\n' for name in _MODULES
    )
    root = write_tree(tmp_path / "root", files)
    options = Options(terraform_version=(1, 15))
    caller = load_module(root, root=root, options=options)[0].module
    modules = [
        (name, load_module(root / "modules" / name, root=root, options=options)[0].module)
        for name in _MODULES
    ]
    return caller, modules


def _part(module: Module, name: str, caller: Module, facts: TextFacts | None) -> ModuleChecks:
    found = leaf_part(
        module, f"k-{name}", (name,), caller, "root", Options(terraform_version=(1, 15)), facts=facts
    )
    assert found is not None
    return found[1]


@pytest.mark.parametrize("kept", [4096, 2])
def test_shared_facts_give_each_module_its_own_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kept: int
) -> None:
    caller, modules = _loaded(tmp_path)
    alone = {name: _part(module, name, caller, None) for name, module in modules}
    summaries = {name: {d.summary for d in part.diags} for name, part in alone.items()}
    assert summaries["clean"] == set()
    assert "Reference to undeclared input variable" in summaries["no_x"]
    assert "Reference to undeclared local value" in summaries["no_local"]
    assert summaries["typo"] == {"Call to unknown function"}
    # kept=2: the shapes are forgotten and numbered again while a module is checked.
    monkeypatch.setattr(references_check, "_CLEAN_KEPT", kept)
    for order in (modules, modules[::-1], [*modules, *modules]):
        facts = TextFacts()
        for name, module in order:
            assert _part(module, name, caller, facts) == alone[name], name
        assert facts.keys and facts.shapes
        # Forgotten and numbered again (kept=2), the numbers go on: none names two shapes.
        assert (
            facts.numbered > len(facts.shape_numbers)
            if kept == 2
            else facts.numbered == len(facts.shape_numbers)
        )


def test_a_shape_number_is_never_given_twice() -> None:
    # A walk remembers clean texts by shape number; had another walk's bound restarted the
    # numbers, a number remembered clean could come to name a shape that is not.
    facts = TextFacts()
    first = facts.shape_number(("a",))
    assert facts.shape_number(("a",)) == first
    facts.forget_shapes()
    assert facts.shape_number(("b",)) != first
    assert facts.shape_number(("a",)) not in (first, facts.shape_number(("b",)))
