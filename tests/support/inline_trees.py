"""Random module trees for checking ``flatten build --inline`` against Terraform itself.

Every tree is built from Terraform's builtin ``terraform_data`` resource only, so it applies and
plans offline. A tree has two to four module levels: calls with and without ``count``, module
directories called from several places with different arguments, typed variables (primitives,
collections, objects with ``optional()`` defaults, nested too, tuples, ``any``), ``nullable =
false`` variables given ``null``, sensitive variables, validations, and outputs that feed other
calls. ``tree(seed)`` returns ``{relative path: file text}``; the same seed gives the same tree.

``tree(seed, providers=True)`` adds provider wiring on top of the same tree (its own random
stream, so the rest is unchanged): the root configures ``terraform.src`` besides the default;
modules declare ``required_providers`` (or not), some expect ``configuration_aliases``
(``terraform.src`` used by a resource, ``terraform.log`` used by nothing), some call the
provider-defined function ``provider::terraform::encode_expr``; calls pass configurations in
``providers`` maps (aliases, and the default as ``terraform.src``), and some repeated calls use
``for_each`` instead of ``count``.

``tree(seed, providers="bare")`` (issue 42) has no ``required_providers`` anywhere: the root
configures ``terraform.src`` and passes it to some calls as ``terraform``, which
Terraform accepts with a "Reference to undefined provider" warning, and some repeated calls use a
``for_each`` known only at plan time (``toset(local.keys_N)``), so they stay calls and move up,
with the configuration they inherit, when their caller is inlined.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

__all__ = ["tree"]

# (type expression, arguments that Terraform converts to it, in HCL)
_TYPES: list[tuple[str, list[str]]] = [
    ("string", ['"a"', "5", "true"]),
    ("number", ["3", '"4"']),
    ("bool", ["true", '"false"']),
    ("list(string)", ["[]", '["a", 1]', "null"]),
    ("set(string)", ['["b", "a", "b"]', "[]"]),
    ("map(number)", ["{}", '{a = 1, b = "2"}']),
    ("list(number)", ['["1", 2]']),
    ("tuple([string, number])", ['["a", "2"]', "[1, 2]"]),
    ("any", ['{a = 1, b = ["x"]}', "[]", '"s"']),
    (
        "object({ name = string, size = optional(number, 3), tags = optional(list(string), []) })",
        ['{ name = "n" }', '{ name = "n", size = "5", extra = true }', '{ name = 1, tags = ["t"] }'],
    ),
    (
        'object({ a = optional(object({ b = optional(string, "x"), c = optional(number) }), {}) })',
        ["{}", "{ a = {} }", '{ a = { c = "2" } }', "{ a = null }"],
    ),
    (
        "list(object({ k = string, on = optional(bool, true) }))",
        ['[{ k = "x" }, { k = "y", on = false }]', "[]"],
    ),
    (
        'map(object({ port = number, proto = optional(string, "tcp") }))',
        ['{ web = { port = "80" } }', "{}"],
    ),
    ("object({ x = optional(string) })", ["{}", '{ x = "v" }', "null"]),
    ("set(object({ n = number }))", ["[{ n = 1 }, { n = 2 }]", "[]"]),
    ("map(list(string))", ['{ a = ["x"], b = [] }', "{}"]),
]


@dataclass
class _Module:
    directory: str
    lines: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    # per variable: its name, type and the arguments a caller may pass ("" = leave it unset)
    inputs: list[tuple[str, str, list[str]]] = field(default_factory=list)
    # values a call in this module may pass on, with their types: variables, earlier outputs
    values: list[tuple[str, str]] = field(default_factory=list)
    declares: bool = False  # required_providers declares terraform (builtin)
    aliased: bool = False  # expects terraform.src (configuration_aliases), used by a resource
    unused_alias: bool = False  # also expects terraform.log, used by nothing


class _Gen:
    def __init__(self, seed: int, providers: bool | str = False) -> None:
        self.rng = random.Random(seed)
        self.files: dict[str, str] = {}
        self.count = 0
        self.bare = providers == "bare"
        self.providers = bool(providers) and not self.bare
        self.prng = random.Random(f"providers {seed}")  # provider choices only

    def wiring(self, m: _Module, caller_has_src: bool) -> None:
        """Decide ``m``'s provider declarations and write them (``providers=True`` only)."""
        prng = self.prng
        m.declares = prng.random() < 0.6
        m.aliased = m.declares and caller_has_src and prng.random() < 0.5
        m.unused_alias = m.aliased and prng.random() < 0.3
        if not m.declares:
            return
        aliases = [a for a, on in (("terraform.src", m.aliased), ("terraform.log", m.unused_alias)) if on]
        extra = f", configuration_aliases = [{', '.join(aliases)}]" if aliases else ""
        m.lines += [
            "terraform {",
            "  required_providers {",
            f'    terraform = {{ source = "terraform.io/builtin/terraform"{extra} }}',
            "  }",
            "}",
        ]
        if m.aliased:
            m.lines += [
                'resource "terraform_data" "via_src" {',
                "  provider = terraform.src",
                '  input = "s"',
                "}",
            ]
        if prng.random() < 0.3:
            m.lines += ['output "fn" {', "  value = provider::terraform::encode_expr({ a = 1 })", "}"]
            m.outputs.append("fn")

    def passes(self, caller: _Module, child: _Module) -> list[str]:
        """The ``providers`` map items a call from ``caller`` to ``child`` gives."""
        root = caller.directory == "."
        if not (root or caller.aliased):
            return []  # a module can pass on only what it configures or was passed by name
        src = self.prng.choice(["terraform.src", "terraform"]) if root else "terraform.src"
        items = []
        if child.aliased:
            items.append(f"terraform.src = {src}")
        if child.unused_alias:
            items.append(f"terraform.log = {src}")
        if child.declares and self.prng.random() < 0.3:
            items.append("terraform = terraform.src")
        return items

    def variable(self, m: _Module, name: str) -> bool:
        """Declare a random variable in ``m``; return whether it is sensitive."""
        rng = self.rng
        type_, args = rng.choice(_TYPES)
        lines = [f'variable "{name}" {{', f"  type = {type_}"]
        choices = list(args)
        sensitive = False
        roll = rng.random()
        if roll < 0.3:
            default = rng.choice(args)
            lines.append(f"  default = {default}")
            choices.append("")
            if rng.random() < 0.4 and default != "null":  # a null default is invalid then
                lines.append("  nullable = false")
                choices.append("null")
        elif roll < 0.38:
            lines.append("  sensitive = true")
            sensitive = True
        if type_ == "string" and rng.random() < 0.3:
            lines += [
                "  validation {",
                f"    condition     = length(var.{name}) > 0",
                '    error_message = "Must not be empty."',
                "  }",
            ]
        lines.append("}")
        m.lines += lines
        m.inputs.append((name, type_, choices))
        m.values.append((f"var.{name}", type_))
        return sensitive

    def module(self, directory: str, depth: int, caller_has_src: bool = False) -> _Module:
        rng = self.rng
        m = _Module(directory)
        if self.providers:
            self.wiring(m, caller_has_src)
        for i in range(rng.randint(1, 3)):
            sensitive = self.variable(m, f"v{i}")
            m.lines += [
                f'resource "terraform_data" "r{i}" {{',
                f"  input = var.v{i}",
                "}",
                f'output "o{i}" {{',
                f"  value = terraform_data.r{i}.output",
                *(["  sensitive = true"] if sensitive else []),
                "}",
            ]
            m.outputs.append(f"o{i}")
        if rng.random() < 0.4:
            m.lines += [
                "locals {",
                '  here = "${path.module}/x"',
                "}",
                'output "here" {',
                "  value = local.here",
                "}",
            ]
            m.outputs.append("here")
        if depth > 0:
            self.calls(m, depth - 1)
        self.files[f"{directory}/main.tf"] = "\n".join(m.lines) + "\n"
        return m

    def calls(self, m: _Module, depth: int) -> None:
        rng = self.rng
        for _ in range(rng.randint(1, 2)):
            self.count += 1
            n = self.count
            directory = f"modules/m{n}"
            child = self.module(directory, depth, m.directory == "." or m.aliased)
            src = f"./{directory}" if m.directory == "." else f"../m{n}"
            for use in ["a", "b"] if rng.random() < 0.35 else ["a"]:
                counted = rng.random() < 0.15
                lines = [f'module "c{n}{use}" {{', f'  source = "{src}"']
                keyed = counted and (self.providers or self.bare) and self.prng.random() < 0.5
                if keyed and self.bare:
                    # Known only at plan time: the call stays a call.
                    m.lines += ["locals {", f'  keys_{n}{use} = ["x"]', "}"]
                    lines.append(f"  for_each = toset(local.keys_{n}{use})")
                elif keyed:
                    lines.append('  for_each = toset(["x"])')
                elif counted:
                    lines.append("  count  = 1")
                if self.providers:
                    items = self.passes(m, child)
                    if items:
                        lines.append("  providers = { " + ", ".join(items) + " }")
                elif self.bare and m.directory == "." and self.prng.random() < 0.6:
                    # Undeclared in the child: Terraform takes it for hashicorp/terraform and warns.
                    # (Passing the root's unconfigured default, terraform = terraform, Terraform
                    # 1.11 rejects: "missing provider".)
                    lines.append("  providers = { terraform = terraform.src }")
                for name, type_, choices in child.inputs:
                    arg = rng.choice(choices)
                    # Sometimes a reference of the same type instead of a literal: a variable of
                    # this module or an output of an earlier call (converted twice, or at runtime).
                    same = [v for v, t in m.values if t == type_]
                    if same and rng.random() < 0.5:
                        arg = rng.choice(same)
                    if arg:
                        lines.append(f"  {name} = {arg}")
                lines.append("}")
                m.lines += lines
                idx = '["x"]' if keyed else "[0]" if counted else ""
                types = {f"o{i}": t for i, (_, t, _) in enumerate(child.inputs)}
                m.values += [(f"module.c{n}{use}{idx}.{o}", types[o]) for o in child.outputs if o in types]
                for o in child.outputs:
                    m.lines += [
                        f'output "c{n}{use}_{o}" {{',
                        f"  value     = module.c{n}{use}{idx}.{o}",
                        "  sensitive = true",
                        "}",
                    ]


def tree(seed: int, *, providers: bool | str = False) -> dict[str, str]:
    """Return a random tree of ``terraform_data`` modules for ``seed`` (``providers``: see above)."""
    gen = _Gen(seed, providers)
    root = _Module(".")
    if providers == "bare":
        root.lines += ['provider "terraform" {', '  alias = "src"', "}"]
    elif providers:
        root.lines += [
            "terraform {",
            "  required_providers {",
            '    terraform = { source = "terraform.io/builtin/terraform" }',
            "  }",
            "}",
            'provider "terraform" {',
            '  alias = "src"',
            "}",
        ]
    gen.calls(root, gen.rng.randint(1, 3))
    gen.files["main.tf"] = "\n".join(root.lines) + "\n"
    return gen.files
