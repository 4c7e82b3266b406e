"""Differential testing against Terraform: seeded module trees through Terraform before and after flatten.

``generate(seed)`` returns a :class:`Case`: a tree of local modules (several levels, module calls with
``count``/``for_each``, typed variables with optional attributes, locals, outputs, override files in
native and JSON syntax over native and JSON bases, ``terraform`` provider aliases passed implicitly
and explicitly, ``configuration_aliases`` and legacy proxy blocks), with at most one defect that
makes it invalid. Every resource is the builtin ``terraform_data``, so Terraform plans and applies
the tree offline.

``run_case(case, work, tf)`` writes the tree, builds it with flatten, runs Terraform on the original
(init, plan, show, apply) and, when flatten accepts it, on flatten's output (init, plan, show, then a
second plan against the original's state), and returns the :class:`Outcome`: whether they agree and,
when not, a short class naming what differed. Used by tests/oracle/test_difftest.py (a short run) and
scripts/difftest (the long run); docs/reliability.md, "Differential testing against Terraform".
"""

from __future__ import annotations

import json
import random
import re
import shutil
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["DEFECTS", "MISTAKES", "Case", "Outcome", "generate", "run_case", "validate_case", "write_case"]

BUILTIN = "terraform.io/builtin/terraform"
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "fox", "golf", "hotel"]


# --- the configuration model: blocks rendered as native syntax or as JSON syntax -----------------


@dataclass(frozen=True)
class E:
    """An expression, in native syntax (JSON: ``"${...}"``)."""

    text: str


@dataclass(frozen=True)
class L:
    """A literal value (native: an HCL literal; JSON: the JSON value)."""

    value: Any


@dataclass(frozen=True)
class Raw:
    """Text written as is in native syntax and as a plain string in JSON (types, traversals)."""

    text: str


@dataclass(frozen=True)
class Providers:
    """A module call's ``providers`` map: child name -> caller's configuration."""

    pairs: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Required:
    """``required_providers { terraform = { source, configuration_aliases } }``."""

    aliases: tuple[str, ...]


Value = E | L | Raw | Providers | Required


@dataclass
class Blk:
    type: str
    labels: list[str]
    attrs: dict[str, Value] = field(default_factory=dict)


def _hcl_literal(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    if isinstance(value, str):
        return json.dumps(value).replace("${", "$${").replace("%{", "%%{")
    if isinstance(value, list):
        return "[" + ", ".join(_hcl_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_hcl_literal(v)}" for k, v in value.items()) + " }"
    raise TypeError(value)


def _native_value(value: Value) -> str:
    if isinstance(value, E | Raw):
        return value.text
    if isinstance(value, L):
        return _hcl_literal(value.value)
    if isinstance(value, Providers):
        return "{\n" + "".join(f"    {k} = {v}\n" for k, v in value.pairs) + "  }"
    aliases = ", ".join(f"terraform.{a}" for a in value.aliases)
    extra = f", configuration_aliases = [{aliases}]" if value.aliases else ""
    return f'{{ source = "{BUILTIN}"{extra} }}'


def _json_value(value: Value) -> Any:
    if isinstance(value, E):
        return "${" + value.text + "}"
    if isinstance(value, L):
        return value.value
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, Providers):
        return dict(value.pairs)
    spec: dict[str, Any] = {"source": BUILTIN}
    if value.aliases:
        spec["configuration_aliases"] = [f"terraform.{a}" for a in value.aliases]
    return spec


def render_native(blocks: list[Blk]) -> str:
    out: list[str] = []
    for b in blocks:
        labels = "".join(f' "{x}"' for x in b.labels)
        if b.type == "terraform":
            inner = "".join(f"    {k} = {_native_value(v)}\n" for k, v in b.attrs.items())
            out.append(f"terraform {{\n  required_providers {{\n{inner}  }}\n}}\n")
            continue
        if b.type == "locals":
            body = "".join(f"  {k} = {_native_value(v)}\n" for k, v in b.attrs.items())
        else:
            body = "".join(f"  {k} = {_native_value(v)}\n" for k, v in b.attrs.items())
        out.append(f"{b.type}{labels} {{\n{body}}}\n")
    return "\n".join(out)


def render_json(blocks: list[Blk]) -> str:
    doc: dict[str, Any] = {}
    for b in blocks:
        body = {k: _json_value(v) for k, v in b.attrs.items()}
        if b.type == "terraform":
            doc.setdefault("terraform", []).append({"required_providers": [body]})
        elif b.type == "locals":
            doc.setdefault("locals", []).append(body)
        elif b.type == "provider":
            doc.setdefault("provider", {}).setdefault(b.labels[0], []).append(body)
        elif b.type == "resource":
            doc.setdefault("resource", {}).setdefault(b.labels[0], {})[b.labels[1]] = body
        else:
            doc.setdefault(b.type, {})[b.labels[0]] = body
    return json.dumps(doc, indent=2) + "\n"


# --- types and values --------------------------------------------------------------------------

Type = tuple[Any, ...]  # ("string",) ("number",) ("bool",) ("list", T) ("map", T) ("object", attrs)


def _type_src(t: Type) -> str:
    kind = t[0]
    if kind in ("string", "number", "bool", "any"):
        return str(kind)
    if kind in ("list", "map"):
        return f"{kind}({_type_src(t[1])})"
    parts = []
    for name, at, optional, default in t[1]:
        if optional and default is not _NO:
            parts.append(f"{name} = optional({_type_src(at)}, {_hcl_literal(default)})")
        elif optional:
            parts.append(f"{name} = optional({_type_src(at)})")
        else:
            parts.append(f"{name} = {_type_src(at)}")
    return "object({" + ", ".join(parts) + "})"


class _Missing:
    def __repr__(self) -> str:
        return "<none>"


_NO: Any = _Missing()


def _rand_type(rng: random.Random, depth: int = 0) -> Type:
    kinds = ["string", "number", "bool", "list", "map", "object", "object"]
    if depth >= 2:
        kinds = ["string", "number", "bool"]
    kind = rng.choice(kinds)
    if kind in ("string", "number", "bool"):
        return (kind,)
    if kind in ("list", "map"):
        return (kind, _rand_type(rng, depth + 1))
    attrs = []
    for i in range(rng.randint(1, 3)):
        at = _rand_type(rng, depth + 1)
        optional = rng.random() < 0.6
        default = _rand_value(rng, at) if optional and rng.random() < 0.6 else _NO
        attrs.append((f"a{i}", at, optional, default))
    return ("object", tuple(attrs))


def _rand_value(rng: random.Random, t: Type) -> Any:
    kind = t[0]
    if kind == "string":
        return rng.choice(WORDS)
    if kind == "number":
        return rng.randint(0, 9)
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "list":
        return [_rand_value(rng, t[1]) for _ in range(rng.randint(0, 2))]
    if kind == "map":
        return {rng.choice(WORDS): _rand_value(rng, t[1]) for _ in range(rng.randint(0, 2))}
    value = {}
    for name, at, optional, _default in t[1]:
        if not optional or rng.random() < 0.5:
            value[name] = _rand_value(rng, at)
    return value


@dataclass
class Var:
    name: str
    type: Type
    default: Any  # _NO: required


@dataclass
class Mod:
    """One module directory of the tree and what its callers must know about it."""

    name: str
    dir: str  # relative to the root ("." for the root)
    vars: list[Var] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)  # configuration it needs from its callers
    proxy: bool = False  # declared as legacy proxy blocks instead of configuration_aliases
    outputs: list[str] = field(default_factory=list)
    files: dict[str, list[Blk]] = field(default_factory=dict)
    calls: list[tuple[str, Blk, Mod]] = field(default_factory=list)  # file name, block, callee


@dataclass
class Case:
    seed: int
    defect: str | None
    files: dict[str, str]
    features: list[str]


# --- the generator -----------------------------------------------------------------------------


class _Gen:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.features: set[str] = set()
        self.called: dict[str, bool] = {}

    def tree(self) -> list[Mod]:
        rng = self.rng
        count = rng.randint(1, 4)
        children = [Mod(f"m{i}", f"modules/m{i}") for i in range(1, count + 1)]
        for m in children:
            self._interface(m)
        root = Mod("root", ".")
        root_aliases = [f"r{i}" for i in range(rng.randint(0, 2))]
        # Build bottom-up so a caller knows its callees' outputs.
        mods = [root, *children]
        for index in range(len(mods) - 1, -1, -1):
            self._module(mods[index], mods[index + 1 :], root_aliases if index == 0 else None)
        return mods

    def _interface(self, m: Mod) -> None:
        rng = self.rng
        for i in range(rng.randint(0, 5)):
            t = _rand_type(rng)
            default = _rand_value(rng, t) if rng.random() < 0.5 else _NO
            m.vars.append(Var(f"v{i}", t, default))
        if rng.random() < 0.35:
            m.aliases = [f"p{i}" for i in range(rng.randint(1, 2))]
            m.proxy = rng.random() < 0.35

    def _module(self, m: Mod, below: list[Mod], root_aliases: list[str] | None) -> None:
        rng = self.rng
        native = rng.random() < 0.5
        ext = ".tf" if native else ".tf.json"
        self.features.add("native-base" if native else "json-base")
        main: list[Blk] = []
        variables: list[Blk] = []
        is_root = root_aliases is not None
        if is_root:
            for v in range(rng.randint(0, 3)):
                t = _rand_type(rng)
                m.vars.append(Var(f"v{v}", t, _rand_value(rng, t)))
        for var in m.vars:
            attrs: dict[str, Value] = {"type": Raw(_type_src(var.type))}
            if var.default is not _NO:
                attrs["default"] = L(var.default)
            if "optional(" in _type_src(var.type):
                self.features.add("optional-attributes")
            variables.append(Blk("variable", [var.name], attrs))
        own = list(root_aliases) if is_root else list(m.aliases)
        # Provider configuration: the root's own blocks, a child's interface.
        declare = rng.random() < (0.95 if is_root else 0.9)
        if m.aliases and not m.proxy:
            declare = True
            self.features.add("configuration_aliases")
        if declare:
            main.append(
                Blk("terraform", [], {"terraform": Required(tuple(m.aliases if not m.proxy else ()))})
            )
        if is_root and rng.random() < 0.4:
            main.append(Blk("provider", ["terraform"]))
        for alias in own if is_root or m.proxy else []:
            main.append(Blk("provider", ["terraform"], {"alias": L(alias)}))
            self.features.add("proxy-block" if m.proxy else "root-alias")
        # Module calls to modules further down the list.
        refs: list[tuple[str, str]] = []  # (expression, kind) usable as values
        for var in m.vars:
            refs.append((f"var.{var.name}", "var"))
        callees = [c for c in below if rng.random() < 0.4]
        if is_root:  # every module is used: the root calls those nobody else calls
            callees += [c for c in below if c not in callees and not self.called.get(c.name)]
        for callee in callees:
            self.called[callee.name] = True
        for n, callee in enumerate(callees):
            call, ref = self._call(f"c{n}_{callee.name}", callee, own, is_root)
            main.append(call)
            m.calls.append(("main" + ext, call, callee))
            refs.extend(ref)
        locals_blk = Blk("locals", [])
        for i in range(rng.randint(0, 3)):
            locals_blk.attrs[f"l{i}"] = E(self._expr(m, refs))
            refs.append((f"local.l{i}", "local"))
        if locals_blk.attrs:
            main.append(locals_blk)
        resources = []
        for i in range(rng.randint(1, 3)):
            r, ref = self._resource(f"r{i}", m, refs, own)
            resources.append(r)
            refs.extend(ref)
        main.extend(resources)
        for i in range(rng.randint(1, 3)):
            name = f"o{i}"
            m.outputs.append(name)
            main.append(Blk("output", [name], {"value": E(self._expr(m, refs, any_ok=True))}))
        if rng.random() < 0.5:
            m.files["variables" + (".tf" if rng.random() < 0.5 else ".tf.json")] = variables
        else:
            main = variables + main
        m.files["main" + ext] = main
        if rng.random() < 0.4:
            self._override(m, refs)

    def _call(
        self, name: str, callee: Mod, own: list[str], from_root: bool
    ) -> tuple[Blk, list[tuple[str, str]]]:
        rng = self.rng
        attrs: dict[str, Value] = {"source": L(f"./{callee.dir}" if from_root else f"../{callee.name}")}
        mode = rng.choice(["one", "one", "count", "for_each"])
        index = ""
        if mode == "count":
            n = rng.randint(0, 2)
            attrs["count"] = L(n) if rng.random() < 0.5 else E(f"length({_hcl_literal(WORDS[:n])})")
            index = "[0]" if n else ""
            self.features.add("module-count")
        elif mode == "for_each":
            keys = rng.sample(WORDS, rng.randint(0, 2))
            attrs["for_each"] = E(f"toset({_hcl_literal(keys)})")
            index = f'["{keys[0]}"]' if keys else ""
            self.features.add("module-for_each")
        for var in callee.vars:
            if var.default is _NO or rng.random() < 0.4:
                if mode == "for_each" and var.type == ("string",) and rng.random() < 0.5:
                    attrs[var.name] = E("each.key")
                elif mode == "count" and var.type == ("number",) and rng.random() < 0.5:
                    attrs[var.name] = E("count.index")
                else:
                    attrs[var.name] = L(_rand_value(rng, var.type))
        pairs: list[tuple[str, str]] = []
        configs = ["terraform", *(f"terraform.{a}" for a in own)]
        for alias in callee.aliases:
            pairs.append((f"terraform.{alias}", rng.choice(configs)))
        # A providers map ends implicit inheritance of the default configuration: pass it mostly.
        if rng.random() < (0.8 if pairs else 0.25):
            pairs.insert(0, ("terraform", rng.choice(configs)))
            self.features.add("explicit-default")
        if pairs:
            attrs["providers"] = Providers(tuple(pairs))
            self.features.add("providers-map")
        else:
            self.features.add("implicit-inheritance")
        ref: list[tuple[str, str]] = []
        if mode == "one":
            ref = [(f"module.{name}.{o}", "module") for o in callee.outputs]
            ref.append((f"module.{name}", "module"))
        elif index:
            ref = [(f"module.{name}{index}.{o}", "module") for o in callee.outputs]
            ref.append((f"module.{name}", "module"))
        else:
            ref = [(f"module.{name}", "module")]
        return Blk("module", [name], attrs), ref

    def _expr(self, m: Mod, refs: list[tuple[str, str]], any_ok: bool = True) -> str:
        """An expression of any type built from what the module has (values used only where any type fits)."""
        rng = self.rng
        if not refs or rng.random() < 0.1:
            return _hcl_literal(_rand_value(rng, _rand_type(rng)))
        text, _kind = rng.choice(refs)
        var = next((v for v in m.vars if f"var.{v.name}" == text), None)
        choice = rng.random()
        if var is not None and var.type[0] == "object" and choice < 0.4:
            name, _at, optional, _d = rng.choice(var.type[1])
            self.features.add("optional-read" if optional else "object-read")
            if optional and rng.random() < 0.5:
                return f'try({text}.{name}, null) == null ? "unset" : jsonencode({text}.{name})'
            return f"{text}.{name}"
        if var is not None and var.type[0] in ("list", "map") and choice < 0.4:
            return f"length({text})"
        if var is not None and var.type == ("number",) and choice < 0.4:
            return f"{text} * 2 + 1"
        if var is not None and var.type == ("string",) and choice < 0.4:
            return f'"${{upper({text})}}-x"'
        if choice < 0.6:
            return f"jsonencode({text})"
        return text

    def _resource(
        self, name: str, m: Mod, refs: list[tuple[str, str]], own: list[str]
    ) -> tuple[Blk, list[tuple[str, str]]]:
        rng = self.rng
        attrs: dict[str, Value] = {}
        mode = rng.choice(["one", "one", "count", "for_each"])
        each = ""
        if mode == "count":
            attrs["count"] = L(rng.randint(0, 2))
            each = "count.index"
        elif mode == "for_each":
            maps = [v for v in m.vars if v.type[0] == "map"]
            if maps and rng.random() < 0.5:
                attrs["for_each"] = E(f"var.{rng.choice(maps).name}")
                each = "each.value"
            else:
                attrs["for_each"] = E(f"toset({_hcl_literal(rng.sample(WORDS, rng.randint(0, 2)))})")
                each = "each.key"
        value = self._expr(m, refs)
        if each and rng.random() < 0.6:
            value = f"{{ v = {value}, k = {each} }}"
        attrs["input"] = E(value)
        if own and rng.random() < 0.5:
            attrs["provider"] = Raw(f"terraform.{rng.choice(own)}")
            self.features.add("resource-provider")
        if mode == "one":
            ref = [(f"terraform_data.{name}.input", "resource")]
        elif mode == "count":
            ref = [(f"terraform_data.{name}[*].input", "resource")]
        else:
            ref = [(f"{{ for k, r in terraform_data.{name} : k => r.input }}", "resource")]
        return Blk("resource", ["terraform_data", name], attrs), ref

    def _override(self, m: Mod, refs: list[tuple[str, str]]) -> None:
        rng = self.rng
        native = rng.random() < 0.5
        name = rng.choice(["override", "z_override"]) + (".tf" if native else ".tf.json")
        self.features.add("override-native" if native else "override-json")
        blocks: list[Blk] = []
        choices = ["local", "output", "resource"]
        if m.vars:
            choices += ["default", "default", "type-any"]
        if m.calls:
            choices.append("call")
        for kind in rng.sample(choices, min(len(choices), rng.randint(1, 3))):
            self.features.add(f"override-{kind}")
            if kind == "default":
                var = rng.choice(m.vars)
                var.default = _rand_value(rng, var.type)
                blocks.append(Blk("variable", [var.name], {"default": L(var.default)}))
            elif kind == "type-any":
                # Callers still pass values of the base type, which now reach the module unconverted.
                var = rng.choice(m.vars)
                blocks.append(Blk("variable", [var.name], {"type": Raw("any")}))
            elif kind == "local":
                base = [b for blks in m.files.values() for b in blks if b.type == "locals" and b.attrs]
                if base:
                    local = rng.choice(sorted(base[0].attrs))
                    early = [r for r in refs if r[1] in ("var", "module")]
                    blocks.append(Blk("locals", [], {local: E(self._expr(m, early))}))
            elif kind == "output":
                blocks.append(Blk("output", [rng.choice(m.outputs)], {"value": E(self._expr(m, refs))}))
            elif kind == "resource":
                res = [b for blks in m.files.values() for b in blks if b.type == "resource"]
                target = rng.choice(res)
                early = [r for r in refs if r[1] != "resource"]
                blocks.append(Blk("resource", target.labels, {"input": E(self._expr(m, early))}))
            else:
                _file, call, callee = rng.choice(m.calls)
                args = [v for v in callee.vars if v.name in call.attrs]
                if args:
                    var = rng.choice(args)
                    blocks.append(Blk("module", call.labels, {var.name: L(_rand_value(rng, var.type))}))
        if blocks:
            m.files[name] = blocks


# --- defects: one per invalid tree -------------------------------------------------------------


def _blocks(mods: list[Mod], kind: str) -> list[tuple[Mod, Blk]]:
    return [(m, b) for m in mods for blks in m.files.values() for b in blks if b.type == kind]


def _first_file(m: Mod) -> str:
    return next(n for n in m.files if n.startswith("main"))


def _d_missing_required_input(rng: random.Random, mods: list[Mod]) -> bool:
    found = [(c, v) for m in mods for _f, c, callee in m.calls for v in callee.vars if v.default is _NO]
    found = [(c, v) for c, v in found if v.name in c.attrs]
    if not found:
        return False
    call, var = rng.choice(found)
    del call.attrs[var.name]
    return True


def _d_unsupported_input(rng: random.Random, mods: list[Mod]) -> bool:
    calls = _blocks(mods, "module")
    if not calls:
        return False
    rng.choice(calls)[1].attrs["bogus"] = L(1)
    return True


def _d_undeclared_variable(rng: random.Random, mods: list[Mod]) -> bool:
    m = rng.choice(mods)
    m.files[_first_file(m)].append(Blk("output", ["bad"], {"value": E("var.nope")}))
    return True


def _d_undeclared_local(rng: random.Random, mods: list[Mod]) -> bool:
    _m, r = rng.choice(_blocks(mods, "resource"))
    r.attrs["input"] = E("local.nope")
    return True


def _d_duplicate_variable(rng: random.Random, mods: list[Mod]) -> bool:
    found = [m for m in mods if m.vars]
    if not found:
        return False
    m = rng.choice(found)
    ext = rng.choice([".tf", ".tf.json"])
    m.files["dup" + ext] = [Blk("variable", [m.vars[0].name], {"type": Raw("string")})]
    return True


def _d_invalid_default(rng: random.Random, mods: list[Mod]) -> bool:
    m = rng.choice(mods)
    ext = _first_file(m)
    m.files[ext].append(Blk("variable", ["bad"], {"type": Raw("number"), "default": L("abc")}))
    return True


def _d_undeclared_provider(rng: random.Random, mods: list[Mod]) -> bool:
    _m, r = rng.choice(_blocks(mods, "resource"))
    r.attrs["provider"] = Raw("terraform.nowhere")
    return True


def _d_missing_alias_pass(rng: random.Random, mods: list[Mod]) -> bool:
    found = [c for m in mods for _f, c, callee in m.calls if callee.aliases and "providers" in c.attrs]
    if not found:
        return False
    call = rng.choice(found)
    pairs = call.attrs["providers"]
    assert isinstance(pairs, Providers)
    kept = tuple(p for p in pairs.pairs if p[0] == "terraform")
    if kept:
        call.attrs["providers"] = Providers(kept)
    else:
        del call.attrs["providers"]
    return True


def _d_count_and_for_each(rng: random.Random, mods: list[Mod]) -> bool:
    _m, call = rng.choice(_blocks(mods, "module"))
    call.attrs["count"] = L(1)
    call.attrs["for_each"] = E('toset(["a"])')
    return True


def _d_override_without_base(rng: random.Random, mods: list[Mod]) -> bool:
    m = rng.choice(mods)
    m.files["ghost_override" + rng.choice([".tf", ".tf.json"])] = [
        Blk("variable", ["ghost"], {"default": L(1)})
    ]
    return True


def _d_duplicate_output(rng: random.Random, mods: list[Mod]) -> bool:
    m = rng.choice(mods)
    m.files["again" + rng.choice([".tf", ".tf.json"])] = [Blk("output", [m.outputs[0]], {"value": L(1)})]
    return True


def _d_missing_module_dir(rng: random.Random, mods: list[Mod]) -> bool:
    _m, call = rng.choice(_blocks(mods, "module"))
    call.attrs["source"] = L("./modules/nowhere")
    return True


def _d_invalid_type(rng: random.Random, mods: list[Mod]) -> bool:
    found = _blocks(mods, "variable")
    if not found:
        return False
    rng.choice(found)[1].attrs["type"] = Raw("strnig")
    return True


def _d_wrong_input_type(rng: random.Random, mods: list[Mod]) -> bool:
    found = [
        (c, v)
        for m in mods
        for _f, c, callee in m.calls
        for v in callee.vars
        if v.type[0] in ("number", "bool", "object", "list")
    ]
    if not found:
        return False
    call, var = rng.choice(found)
    call.attrs[var.name] = L("not-a-" + var.type[0])
    return True


def _d_undefined_module_output(rng: random.Random, mods: list[Mod]) -> bool:
    found = [
        (m, c)
        for m in mods
        for _f, c, _callee in m.calls
        if "count" not in c.attrs and "for_each" not in c.attrs
    ]
    if not found:
        return False
    m, call = rng.choice(found)
    m.files[_first_file(m)].append(Blk("output", ["bad"], {"value": E(f"module.{call.labels[0]}.nope")}))
    return True


def _d_duplicate_resource(rng: random.Random, mods: list[Mod]) -> bool:
    m, r = rng.choice(_blocks(mods, "resource"))
    m.files["again" + rng.choice([".tf", ".tf.json"])] = [Blk("resource", list(r.labels), {"input": L(1)})]
    return True


def _d_undefined_caller_provider(rng: random.Random, mods: list[Mod]) -> bool:
    _m, call = rng.choice(_blocks(mods, "module"))
    old = call.attrs.get("providers")
    pairs = old.pairs if isinstance(old, Providers) else ()
    call.attrs["providers"] = Providers(
        (("terraform", "terraform.ghost"), *(p for p in pairs if p[0] != "terraform"))
    )
    return True


def _d_undeclared_child_alias(rng: random.Random, mods: list[Mod]) -> bool:
    _m, call = rng.choice(_blocks(mods, "module"))
    old = call.attrs.get("providers")
    pairs = old.pairs if isinstance(old, Providers) else ()
    call.attrs["providers"] = Providers((*pairs, ("terraform.undeclared", "terraform")))
    return True


def _d_duplicate_local(rng: random.Random, mods: list[Mod]) -> bool:
    m = rng.choice(mods)
    m.files["again" + rng.choice([".tf", ".tf.json"])] = [
        Blk("locals", [], {"dupl": L(1)}),
    ]
    m.files[_first_file(m)].append(Blk("locals", [], {"dupl": L(2)}))
    return True


DEFECTS: dict[str, Callable[[random.Random, list[Mod]], bool]] = {
    "missing-required-input": _d_missing_required_input,
    "unsupported-input": _d_unsupported_input,
    "undeclared-variable": _d_undeclared_variable,
    "undeclared-local": _d_undeclared_local,
    "duplicate-variable": _d_duplicate_variable,
    "invalid-default": _d_invalid_default,
    "undeclared-provider": _d_undeclared_provider,
    "missing-alias-pass": _d_missing_alias_pass,
    "count-and-for_each": _d_count_and_for_each,
    "override-without-base": _d_override_without_base,
    "duplicate-output": _d_duplicate_output,
    "missing-module-dir": _d_missing_module_dir,
    "invalid-type": _d_invalid_type,
    "wrong-input-type": _d_wrong_input_type,
    "undefined-module-output": _d_undefined_module_output,
    "duplicate-resource": _d_duplicate_resource,
    "undefined-caller-provider": _d_undefined_caller_provider,
    "undeclared-child-alias": _d_undeclared_child_alias,
    "duplicate-local": _d_duplicate_local,
}


# --- mistakes: what `validate` finds without a provider schema (flatten/stages/references_check.py)


def _reference_target(rng: random.Random, mods: list[Mod]) -> tuple[Mod, Blk]:
    """Where a mistaken reference goes: an output, or a resource's input."""
    m = rng.choice(mods)
    if rng.random() < 0.5:
        found = [(mm, b) for mm, b in _blocks(mods, "resource") if mm is m]
        if found:
            return found[0]
    out = Blk("output", ["mistake"], {})
    m.files[_first_file(m)].append(out)
    return m, out


def _m_undeclared_module(rng: random.Random, mods: list[Mod]) -> bool:
    _m, blk = _reference_target(rng, mods)
    blk.attrs["input" if blk.type == "resource" else "value"] = E(
        rng.choice(["module.nope", "module.nope.x"])
    )
    return True


def _m_undeclared_resource(rng: random.Random, mods: list[Mod]) -> bool:
    _m, blk = _reference_target(rng, mods)
    ref = rng.choice(
        ["terraform_data.nope.output", "data.terraform_remote_state.nope.outputs", "terraform_data.nope"]
    )
    blk.attrs["input" if blk.type == "resource" else "value"] = E(ref)
    return True


def _m_call_count(rng: random.Random, mods: list[Mod]) -> bool:
    calls = [c for _m, c in _blocks(mods, "module") if "for_each" not in c.attrs]
    if not calls:
        return False
    rng.choice(calls).attrs["count"] = E(rng.choice(['"abc"', "-1", "1.5", "null", "true", '["a"]']))
    return True


def _m_call_for_each(rng: random.Random, mods: list[Mod]) -> bool:
    calls = [c for _m, c in _blocks(mods, "module") if "count" not in c.attrs]
    if not calls:
        return False
    call = rng.choice(calls)
    call.attrs.pop("count", None)
    call.attrs["for_each"] = E(rng.choice(['"abc"', "1", "null", '["a", "b"]', "true"]))
    return True


def _m_call_depends_on(rng: random.Random, mods: list[Mod]) -> bool:
    found = [(m, c) for m, c in _blocks(mods, "module")]
    if not found:
        return False
    m, call = rng.choice(found)
    resources = [r for mm, r in _blocks(mods, "resource") if mm is m]
    items = ["terraform_data.nope"]
    if resources:
        items.append(f"{resources[0].labels[0]}.{resources[0].labels[1]}.output")
    call.attrs["depends_on"] = Raw("[" + rng.choice(items) + "]")
    return True


def _m_counted_output(rng: random.Random, mods: list[Mod]) -> bool:
    found = [(m, c) for m in mods for _f, c, _callee in m.calls if "count" in c.attrs]
    if not found:
        return False
    m, call = rng.choice(found)
    ref = rng.choice([f"module.{call.labels[0]}.x", f"module.{call.labels[0]}[0].nope"])
    m.files[_first_file(m)].append(Blk("output", ["mistake"], {"value": E(ref)}))
    return True


# Function calls as validate looks them up: unknown, removed, namespaced, version-gated (convert is
# 1.15's, whose type argument 1.11 reads as a reference), and bare names.
_CALLS = [
    "lenght([1])",
    'uper("a")',
    "list(1)",
    'map("a", 1)',
    "core::nope(1)",
    "core::length([1])",
    "other::f(1)",
    "provider::terraform::encode_expr(1)",
    "convert([1], list(string))",
    "issensitive(1)",
    'upper(trimspace(" a "))',
    "foo",
    "string",
    '"x-${lenght("ab")}"',
]


def _m_function_call(rng: random.Random, mods: list[Mod]) -> bool:
    _m, blk = _reference_target(rng, mods)
    blk.attrs["input" if blk.type == "resource" else "value"] = E(rng.choice(_CALLS))
    return True


def _m_valid_references(rng: random.Random, mods: list[Mod]) -> bool:
    """References Terraform accepts that a careless checker would flag (no mistake at all)."""
    m = rng.choice(mods)
    m.files[_first_file(m)].append(
        Blk(
            "resource",
            ["terraform_data", "fine"],
            {
                "count": L(1),
                "input": E('[count.index, path.module, terraform.workspace, [for x in ["a"] : x]]'),
            },
        )
    )
    return True


MISTAKES: dict[str, Callable[[random.Random, list[Mod]], bool]] = {
    "undeclared-module": _m_undeclared_module,
    "undeclared-resource": _m_undeclared_resource,
    "call-count": _m_call_count,
    "call-for_each": _m_call_for_each,
    "call-depends_on": _m_call_depends_on,
    "counted-output": _m_counted_output,
    "function-call": _m_function_call,
    "valid-references": _m_valid_references,
    "undeclared-variable": _d_undeclared_variable,
    "undeclared-local": _d_undeclared_local,
    "wrong-input-type": _d_wrong_input_type,
    "undefined-module-output": _d_undefined_module_output,
}


def generate(seed: int, *, mistakes: bool = False) -> Case:
    """Return the tree for ``seed``: valid for about two seeds in three, else with one defect.

    With ``mistakes``, every tree has one of ``MISTAKES`` (what ``validate`` finds without a
    provider schema), compared by ``validate_case``.
    """
    gen = _Gen(seed)
    mods = gen.tree()
    defect: str | None = None
    if mistakes:
        names = sorted(MISTAKES)
        gen.rng.shuffle(names)
        for name in names:
            if MISTAKES[name](gen.rng, mods):
                defect = name
                break
    elif gen.rng.random() < 0.35:
        names = sorted(DEFECTS)
        gen.rng.shuffle(names)
        for name in names:
            if DEFECTS[name](gen.rng, mods):
                defect = name
                break
    files: dict[str, str] = {}
    for m in mods:
        for fname, blocks in m.files.items():
            rel = fname if m.dir == "." else f"{m.dir}/{fname}"
            files[rel] = render_json(blocks) if fname.endswith(".json") else render_native(blocks)
    return Case(seed, defect, files, sorted(gen.features))


def write_case(case: Case, directory: Path) -> None:
    for rel, text in case.files.items():
        path = directory / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


# --- running Terraform on both sides, and comparing --------------------------------------------


class Runner:
    """How to run Terraform: anything with ``run(*args, cwd=...)`` returning returncode/stdout/stderr."""

    def run(self, *args: str, cwd: Path) -> Any: ...  # pragma: no cover - a protocol


@dataclass
class TfRun:
    """What Terraform made of one directory."""

    errors: frozenset[str] = frozenset()  # error summaries, empty when the plan succeeded
    stage: str = ""  # where it stopped: init, plan, show, apply, or "" when all went well
    resources: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, Any] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)  # config resource address -> provider_config_key


@dataclass
class Outcome:
    seed: int
    defect: str | None
    outcome: str  # "agree-valid", "agree-invalid", "refused" (documented, REFUSALS) or "disagree"
    klass: str = ""  # disagreements: what differed; invalid trees: "flatten rejects" or who found it
    detail: str = ""
    # How many times Terraform loaded a tree before its verdict at init was flatten's (see
    # ``INIT_RUNS``); more than 1 only where Terraform's own verdict varies from run to run.
    terraform_runs: int = 1


# flatten's documented refusals of valid trees: no flattened output could plan the same
# (issue 14, item 3: an override's type that cannot carry the first type's optional defaults).
REFUSALS = frozenset({"Unsupported variable type override"})

_TEXT_ERROR = re.compile(r"^[│ ]*Error: (.+?)\s*$", re.M)


# Terraform's plan stops at the first provider it finds missing, and which one that is depends on
# the order of its concurrent graph walk (the same tree names either module run to run).
_MISSING_PROVIDER = re.compile(r"^missing provider \S+$")


def _summary(text: str) -> str:
    """A summary as compared: Terraform lists a cycle's nodes in Go map order, which changes from
    run to run (flatten sorts them), so a "Cycle: ..." summary is its nodes sorted."""
    if text.startswith("Cycle: "):
        return "Cycle: " + ", ".join(sorted(text.removeprefix("Cycle: ").split(", ")))
    return "missing provider <address>" if _MISSING_PROVIDER.match(text) else text


def _text_errors(text: str) -> frozenset[str]:
    # init wraps configuration errors in one more "Error:" that says only that.
    found = (m.group(1) for m in _TEXT_ERROR.finditer(text))
    return frozenset(
        _summary(s) for s in found if not s.startswith("Terraform encountered problems during init")
    )


def _json_errors(stdout: str) -> frozenset[str]:
    found = set()
    for line in stdout.splitlines():
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        diag = msg.get("diagnostic") if isinstance(msg, dict) else None
        if diag and diag.get("severity") == "error":
            found.add(_summary(diag["summary"]))
    return frozenset(found)


_UNREADABLE = frozenset({"<validate output unreadable>"})


def _validate_errors(stdout: str) -> frozenset[str]:
    """The error summaries of ``terraform validate -json`` (one JSON document)."""
    try:
        doc = json.loads(stdout)
    except ValueError:
        return _UNREADABLE
    diags = doc.get("diagnostics", []) if isinstance(doc, dict) else []
    return frozenset(_summary(d["summary"]) for d in diags if d.get("severity") == "error")


def _provider_keys(module: dict[str, Any], path: str, into: dict[str, str]) -> None:
    for r in module.get("resources", []):
        into[f"{path}{r['address']}"] = r.get("provider_config_key", "")
    for name, call in sorted(module.get("module_calls", {}).items()):
        _provider_keys(call.get("module", {}), f"{path}module.{name}.", into)


def terraform_plan(tf: Runner, directory: Path, *, apply: bool) -> TfRun:
    """init, plan, show (and apply): the errors where it stopped, or the planned instances."""
    init = tf.run("init", "-no-color", "-input=false", cwd=directory)
    if init.returncode != 0:
        return TfRun(_text_errors(init.stderr + init.stdout) or frozenset({"<init failed>"}), "init")
    plan = tf.run("plan", "-json", "-input=false", "-out=tfplan", cwd=directory)
    if plan.returncode != 0:
        return TfRun(
            _json_errors(plan.stdout) or _text_errors(plan.stderr) or frozenset({"<plan failed>"}), "plan"
        )
    show = tf.run("show", "-json", "tfplan", cwd=directory)
    if show.returncode != 0:
        return TfRun(frozenset({"<show failed>"}), "show")
    doc = json.loads(show.stdout)
    resources = {
        rc["address"]: {
            "actions": rc["change"]["actions"],
            "after": rc["change"].get("after"),
            "after_unknown": rc["change"].get("after_unknown"),
            "provider": rc.get("provider_name"),
        }
        for rc in doc.get("resource_changes", [])
    }
    outputs = {
        name: {"actions": oc["actions"], "after": oc.get("after"), "after_unknown": oc.get("after_unknown")}
        for name, oc in doc.get("output_changes", {}).items()
    }
    keys: dict[str, str] = {}
    _provider_keys(doc.get("configuration", {}).get("root_module", {}), "", keys)
    run = TfRun(resources=resources, outputs=outputs, keys=keys)
    if apply:
        done = tf.run("apply", "-no-color", "-input=false", "tfplan", cwd=directory)
        if done.returncode != 0:
            return TfRun(_text_errors(done.stderr) or frozenset({"<apply failed>"}), "apply")
    return run


# Terraform's verdict at init is not always the same for one tree: ``resolveProviderTypes``
# (internal/configs/config.go) lets each child module type the `providers` items of all its
# parent's calls, the one visited last winning, and Go visits ``Config.Children`` in a random
# map order. flatten gives the most likely order's verdict (docs/providers.md); where Terraform's
# verdict at init differs from the one wanted, it is asked again, up to this many runs in all.
# The rarest order of at most 8 calls comes 1 time in 8, so a verdict Terraform can give comes
# within 16 runs but for 1 time in 8.5 (7/8 ** 16 = 0.118) at worst, and for the likely order's
# verdict (at least 1 time in 4) but for 1 time in 100.
INIT_RUNS = 16


def terraform_verdict(tf: Runner, directory: Path, *, apply: bool, want: frozenset[str]) -> tuple[TfRun, int]:
    """``terraform_plan``, again while it stops at init with other errors than ``want``.

    Returns the last run and the number of runs. Only init can vary this way: the plan's own
    checks do not depend on the order of provider type resolution.
    """
    run = terraform_plan(tf, directory, apply=apply)
    runs = 1
    if run.stage == "init" and run.errors != want and want:
        # A root whose own files have errors: `validate` (and plan, apply) load the root alone
        # and report its errors, while `init` also installs the calls and reports their errors
        # (some by Go's map order). flatten follows validate there (docs/syntax-errors.md,
        # "Loading order"); validate's answer does not vary.
        checked = tf.run("validate", "-json", "-no-color", cwd=directory)
        errors = _validate_errors(checked.stdout)
        if errors == want:
            return TfRun(errors, "validate"), runs
    while run.stage == "init" and run.errors != want and runs < INIT_RUNS:
        run = terraform_plan(tf, directory, apply=apply)
        runs += 1
    return run, runs


def _diff(a: dict[str, Any], b: dict[str, Any]) -> str:
    keys = sorted(set(a) | set(b))
    for k in keys:
        if a.get(k) != b.get(k):
            before, after = json.dumps(a.get(k), sort_keys=True), json.dumps(b.get(k), sort_keys=True)
            return f"{k}: original {before} != flattened {after}"
    return ""


def _flatten(
    original: Path, out: Path, release: tuple[int, int] | None = None
) -> tuple[frozenset[str] | None, str]:
    """Build ``original`` into ``out`` with ``--terraform-version release`` (the newest when None);
    the error summaries when flatten rejects it (None when it accepts)."""
    from flatten.build import build
    from flatten.lang.options import Options
    from flatten.stages.emit import write_tree

    options = Options() if release is None else Options(terraform_version=release)
    result, diags = build(original, options=options)
    errors = frozenset(_summary(d.summary) for d in diags if d.severity.value == "error")
    if diags.has_errors:
        return errors, ""
    write_tree(out, result.tree.files, result.tree.copies)
    return None, ""


def _summaries(errors: frozenset[str]) -> str:
    return " | ".join(sorted(errors))


def _delta(ours: frozenset[str], theirs: frozenset[str], ours_name: str, theirs_name: str) -> str:
    """The class of an error disagreement: the summaries only one side gave."""
    parts = []
    if ours - theirs:
        parts.append(f"{ours_name} only: {_summaries(ours - theirs)}")
    if theirs - ours:
        parts.append(f"{theirs_name} only: {_summaries(theirs - ours)}")
    return "; ".join(parts)


def validate_case(case: Case, work: Path, tf: Runner, release: tuple[int, int] | None = None) -> Outcome:
    """``terraform init`` + ``validate`` against flatten's build of ``case``: the same error summaries.

    ``agree-valid``/``agree-invalid`` when both give the same set; ``disagree`` otherwise (klass
    says which summaries only one side gave).
    """
    original = work / "original"
    pristine = work / "pristine"
    write_case(case, original)
    write_case(case, pristine)

    runs = 1

    def verdict(outcome: str, klass: str = "", detail: str = "") -> Outcome:
        return Outcome(case.seed, case.defect, outcome, klass, detail, runs)

    try:
        rejected, _ = _flatten(pristine, work / "flat", release)
    except Exception:
        return verdict("disagree", "flatten-exception", traceback.format_exc(limit=-3))
    ours = frozenset() if rejected is None else rejected
    if ours & REFUSALS:
        return verdict("refused", _summaries(ours & REFUSALS))
    init = tf.run("init", "-no-color", "-input=false", "-backend=false", cwd=original)
    # init's verdict varies with Go's map order (INIT_RUNS), in every release: asked again while
    # it differs from flatten's, as terraform_verdict does for the plain run.
    while init.returncode != 0 and _text_errors(init.stderr + init.stdout) != ours and runs < INIT_RUNS:
        init = tf.run("init", "-no-color", "-input=false", "-backend=false", cwd=original)
        runs += 1
    if init.returncode != 0:
        theirs = _text_errors(init.stderr + init.stdout) or frozenset({"<init failed>"})
    else:
        run = tf.run("validate", "-json", "-no-color", cwd=original)
        theirs = _validate_errors(run.stdout)
        if theirs == _UNREADABLE:
            return verdict("disagree", "validate output unreadable", run.stderr[-500:])
    if ours == theirs:
        return verdict("agree-invalid" if ours else "agree-valid", "", _summaries(ours))
    return verdict("disagree", _delta(ours, theirs, "flatten", "terraform"), _summaries(theirs))


def run_case(
    case: Case,
    work: Path,
    tf: Runner,
    *,
    tamper: Callable[[Path], None] | None = None,
    release: tuple[int, int] | None = None,
) -> Outcome:
    """Run ``case`` through flatten and Terraform in ``work`` (a fresh directory) and compare.

    ``tamper`` edits flatten's output before Terraform reads it: the test that the comparison
    notices a difference.
    """
    original = work / "original"
    flat = work / "flat"
    write_case(case, original)
    pristine = work / "pristine"  # flatten reads a copy Terraform has not touched (no .terraform/)
    write_case(case, pristine)

    runs = 1

    def verdict(outcome: str, klass: str = "", detail: str = "") -> Outcome:
        return Outcome(case.seed, case.defect, outcome, klass, detail, runs)

    try:
        rejected, _ = _flatten(pristine, flat, release)
    except Exception:  # a crash in flatten is a finding, not a crash of the run
        return verdict("disagree", "flatten-exception", traceback.format_exc(limit=-3))
    # Terraform's verdict at init can vary run to run (INIT_RUNS): it must be able to give flatten's.
    want = frozenset() if rejected is None else rejected - REFUSALS
    ours, runs = terraform_verdict(tf, original, apply=rejected is None, want=want)
    if rejected is not None:
        if rejected & REFUSALS and rejected - REFUSALS == ours.errors and ours.errors:
            # A refusal beside Terraform's own errors: flatten also reports every one of those.
            return verdict("agree-invalid", "flatten rejects (and refuses)", _summaries(ours.errors))
        if rejected <= REFUSALS and ours.errors:
            # Both reject: Terraform for errors flatten leaves to it (plan-time ones), flatten
            # because no output could reproduce the tree even without them.
            return verdict("refused", _summaries(rejected) + " (terraform also rejects)")
        if not ours.errors:
            if rejected <= REFUSALS:
                # Inputs no output can reproduce, refused by design (docs/overrides.md).
                return verdict("refused", _summaries(rejected))
            return verdict("disagree", f"flatten rejects a valid tree: {_summaries(rejected)}")
        if rejected != ours.errors:
            return verdict(
                "disagree",
                "error summaries: " + _delta(ours.errors, rejected, "terraform", "flatten"),
                f"flatten: {_summaries(rejected)} / terraform ({ours.stage}): {_summaries(ours.errors)}",
            )
        return verdict("agree-invalid", "flatten rejects", _summaries(ours.errors))
    if tamper is not None:
        tamper(flat)
    theirs, their_runs = terraform_verdict(tf, flat, apply=False, want=ours.errors)
    runs = max(runs, their_runs)
    if bool(ours.errors) != bool(theirs.errors):
        side = f"output invalid: {_summaries(theirs.errors)}" if theirs.errors else "output valid"
        return verdict(
            "disagree",
            f"verdict, {side}",
            f"original ({ours.stage}): {_summaries(ours.errors)}"
            f" / output ({theirs.stage}): {_summaries(theirs.errors)}",
        )
    if ours.errors:
        if ours.errors != theirs.errors:
            return verdict(
                "disagree",
                "error summaries of the output: " + _delta(ours.errors, theirs.errors, "original", "output"),
                f"original: {_summaries(ours.errors)} / output: {_summaries(theirs.errors)}",
            )
        # flatten checks what Terraform checks while loading; the rest it leaves to Terraform,
        # which finds the same errors in the output. Counted apart, by Terraform's stage.
        return verdict("agree-invalid", f"left to terraform {ours.stage}", _summaries(ours.errors))
    for what, a, b in (
        ("planned-instances", sorted(ours.resources), sorted(theirs.resources)),
        ("resource-values", ours.resources, theirs.resources),
        ("outputs", ours.outputs, theirs.outputs),
        ("provider_config_key", ours.keys, theirs.keys),
    ):
        if a != b:
            detail = _diff(a, b) if isinstance(a, dict) and isinstance(b, dict) else f"{a} != {b}"
            return verdict("disagree", what, detail)
    shutil.copy2(original / "terraform.tfstate", flat / "terraform.tfstate")
    second = tf.run("plan", "-no-color", "-input=false", "-detailed-exitcode", cwd=flat)
    if second.returncode != 0:
        klass = "second-plan-changes" if second.returncode == 2 else "second-plan-error"
        return verdict("disagree", klass, (second.stdout + second.stderr)[-2000:])
    return verdict("agree-valid")
