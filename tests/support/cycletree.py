"""Generated trees whose objects refer to each other at random: some with cycles, some without.

Each seed gives one tree of ``terraform_data`` resources, locals, outputs, input variables (some
with validation rules), module calls with arguments, ``count`` and ``depends_on``, in a root and up
to three child modules (a chain or a fan), each expression referring to zero to three objects its
module can see: a variable, a local, a resource, a module output or a whole module. Most trees
end up with a cycle in the graph Terraform's ``validate`` builds (stages/cycles.py); the
others are valid. ``scripts/difftest --cycles`` compares flatten's errors with ``init`` +
``validate`` on each (support/difftree.py ``validate_case``).

Every expression is well-typed whatever the references are (``jsonencode([...])``, ``count =
length([...])``) and nothing refers to itself, so the only errors Terraform can give are cycles.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from support.difftree import Case

__all__ = ["generate_cycles"]


@dataclass
class _Module:
    name: str  # "root" or m1, m2, m3
    directory: str
    variables: list[str] = field(default_factory=list)
    locals: list[str] = field(default_factory=list)
    resources: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    calls: list[_Module] = field(default_factory=list)
    counted: bool = False  # its call has ``count`` (its outputs are read as module.x[0].o)


class _Gen:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.features: set[str] = set()

    def modules(self) -> _Module:
        rng = self.rng
        root = _Module("root", ".")
        children = [_Module(f"m{i}", f"modules/m{i}") for i in range(1, rng.randint(1, 3) + 1)]
        for m in [root, *children]:
            if m is not root:
                m.variables = [f"v{i}" for i in range(rng.randint(1, 2))]
                m.counted = rng.random() < 0.3
            m.locals = [f"l{i}" for i in range(rng.randint(1, 3))]
            m.resources = [f"r{i}" for i in range(rng.randint(1, 2))]
            m.outputs = [f"o{i}" for i in range(rng.randint(1, 2))]
        # A chain (root -> m1 -> m2 -> m3) or a fan (root calls them all), or between.
        for i, child in enumerate(children):
            caller = root if i == 0 or rng.random() < 0.5 else children[i - 1]
            caller.calls.append(child)
        return root

    def visible(self, m: _Module, exclude: str) -> list[str]:
        """What an expression in ``m`` can refer to (``exclude``: the object it belongs to)."""
        names = [f"var.{v}" for v in m.variables]
        own = [f"local.{x}" for x in m.locals] + [f"terraform_data.{r}.output" for r in m.resources]
        mine = next((k for k, n in enumerate(own) if n == exclude or n.startswith(exclude + ".")), None)
        if mine is not None and self.rng.random() < 0.85:
            own = own[:mine]  # mostly to objects written before it: a loop inside a module is rarer
        names += own
        for call in m.calls:
            index = "[0]" if call.counted else ""
            names += [f"module.{call.name}{index}.{o}" for o in call.outputs]
            if self.rng.random() < 0.15:  # a whole module: waits for everything in it
                names.append(f"module.{call.name}")
        return [n for n in names if not (n == exclude or n.startswith(exclude + "."))]

    def refs(self, m: _Module, exclude: str, most: int = 2) -> str:
        rng = self.rng
        names = self.visible(m, exclude)
        wanted = rng.choices(range(most + 1), weights=[4, 4, 2, 1][: most + 1])[0]
        picked = rng.sample(names, min(len(names), wanted))
        if any(p.count(".") == 1 and p.startswith("module.") for p in picked):
            self.features.add("whole-module")
        return "jsonencode([" + ", ".join(picked) + "])"

    def text(self, m: _Module) -> str:
        rng = self.rng
        out: list[str] = []
        for v in m.variables:
            lines = [f'variable "{v}" {{']
            if rng.random() < 0.3:
                # A validation rule must refer to its variable; from 1.9 also to other objects. It
                # always holds, so that no tree fails for the values its constants happen to have.
                other = rng.choice([f"local.{x}" for x in m.locals]) if rng.random() < 0.5 else '""'
                lines += [
                    "  validation {",
                    f"    condition     = var.{v} != {other} || true",
                    '    error_message = "no"',
                    "  }",
                ]
                self.features.add("validation")
            out.append("\n".join([*lines, "}"]))
        if m.locals:
            body = [f"  {x} = {self.refs(m, f'local.{x}')}" for x in m.locals]
            out.append("locals {\n" + "\n".join(body) + "\n}")
        for r in m.resources:
            lines = [
                f'resource "terraform_data" "{r}" {{',
                f"  input = {self.refs(m, f'terraform_data.{r}')}",
            ]
            deps = [f"terraform_data.{x}" for x in m.resources if x != r]
            deps += [f"module.{c.name}" for c in m.calls]
            if deps and rng.random() < 0.3:
                lines.append(f"  depends_on = [{rng.choice(deps)}]")
                self.features.add("resource-depends_on")
            out.append("\n".join([*lines, "}"]))
        for o in m.outputs:
            out.append(f'output "{o}" {{\n  value = {self.refs(m, "")}\n}}')
        for call in m.calls:
            lines = [f'module "{call.name}" {{', f'  source = "{_relative(m, call)}"']
            for v in call.variables:
                lines.append(f"  {v} = {self.refs(m, '') if rng.random() < 0.5 else '[]'}")
            if call.counted:
                lines.append(f"  count = length({self.refs(m, '', 2).removeprefix('jsonencode(')[:-1]})")
                self.features.add("call-count")
            deps = [f"terraform_data.{r}" for r in m.resources] + [
                f"module.{c.name}" for c in m.calls if c is not call
            ]
            if rng.random() < 0.4 and deps:
                lines.append(f"  depends_on = [{rng.choice(deps)}]")
                self.features.add("call-depends_on")
            out.append("\n".join([*lines, "}"]))
        return "\n\n".join(out) + "\n"


def _relative(caller: _Module, callee: _Module) -> str:
    return f"./{callee.directory}" if caller.name == "root" else f"../{callee.name}"


def _walk(m: _Module) -> list[_Module]:
    out = [m]
    for call in m.calls:
        out += _walk(call)
    return out


def generate_cycles(seed: int) -> Case:
    """The tree for ``seed``; ``defect`` is "cycle-candidate" (whether it has one is Terraform's
    call, and flatten's)."""
    gen = _Gen(seed)
    root = gen.modules()
    files = {f"{m.directory}/main.tf".removeprefix("./"): gen.text(m) for m in _walk(root)}
    return Case(seed, "cycle-candidate", files, sorted(gen.features))
