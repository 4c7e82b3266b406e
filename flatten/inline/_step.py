"""One inlining step: a module call's child module merged into the module that calls it.

Rule for the whole file: every name the child brings gets the call name as a prefix
(``aws_vpc.this`` -> ``aws_vpc.net__this``, ``local.cidr`` -> ``local.net__cidr``, ``var.cidr``
-> ``local.net__var__cidr``, output ``id`` -> ``local.net__out__id``, nested call ``b`` ->
``module.net__b``), with ``_2``, ``_3``… added when the caller already has that name. Every
reference is rewritten by parsing (``flatten.syntax.references``): child references into the new
names, caller references to ``module.net…`` into the output locals (once for all the caller's
calls, ``settle``). A step returns the caller's ``Work`` grown in place, or the reason the call
has to stay a call, and then it has changed nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from types import MappingProxyType
from typing import Any, cast

from flatten.lang.fields import BlockSchema
from flatten.lang.model import Attribute, Block, Body, Expr, JsonValue, Module, Range
from flatten.lang.options import Options
from flatten.lang.types import ANY, AnyType, Primitive, Type, TypeExprError, parse_type, type_string
from flatten.providers import ConfigAddr, How
from flatten.stages.graph import ModuleNode
from flatten.syntax.references import (
    ExpressionError,
    Reference,
    hcl_string,
    json_to_hcl,
    literal_to_expression,
    single_interpolation,
    template_references,
)

from ._checks import failing_local
from ._convert import conversion
from ._providers import (
    ProviderNames,
    Requirement,
    add_required_version,
    add_requirements,
    instance_of,
    module_requirements,
    passed_types,
)
from ._rewrite import Scope, rewrite_block, rewrite_body, rewrite_value

__all__ = [
    "MODES",
    "NO_JOURNAL",
    "Context",
    "HostRule",
    "Journal",
    "Work",
    "inline_call",
    "position",
    "settle",
    "taken_names",
]

MODES = MappingProxyType({"resource": "managed", "data": "data", "ephemeral": "ephemeral"})
_PREFIX = MappingProxyType({"managed": "", "data": "data.", "ephemeral": "ephemeral."})
_RESERVED = frozenset(
    {"var", "local", "module", "data", "ephemeral", "path", "terraform", "count", "each", "self", "resource"}
)
_META = frozenset({"source", "version", "count", "for_each", "depends_on", "providers"})
_HANDLED = frozenset(
    {"variable", "output", "locals", "check", "module", "moved", "removed", "terraform", "provider", *MODES}
)


class _Unset:
    """Not written (absent is not null)."""


UNSET = _Unset()


_MISSING = object()


class Journal:
    """The changes made to one caller's ``Work`` since a split call began, to undo them.

    A call with a literal ``count`` or ``for_each`` is inlined instance by instance (``_count.py``),
    each step growing the caller in place; when one instance cannot be inlined the call stays a
    call and the caller must be as it was. Undoing the few entries each step wrote costs what the
    steps touched, where copying the caller's tables before the split would cost the whole caller
    (issue 42). ``NO_JOURNAL`` records nothing.
    """

    def __init__(self, work: Work | None = None) -> None:
        self.undo: list[tuple[dict[Any, Any] | set[Any], Any, Any]] = []
        self.saved = (
            (work, work.module, work.view, work.hint, work.calls, work.taken) if work is not None else None
        )

    def update(self, table: dict[Any, Any], items: Mapping[Any, Any]) -> None:
        if self.saved is not None:
            self.undo.extend((table, k, table.get(k, _MISSING)) for k in items)
        table.update(items)

    def pop(self, table: dict[Any, Any], key: Any) -> None:
        if key in table:
            if self.saved is not None:
                self.undo.append((table, key, table[key]))
            del table[key]

    def add(self, names: set[str], name: str) -> None:
        if name not in names:
            if self.saved is not None:
                self.undo.append((names, name, _MISSING))
            names.add(name)

    def discard(self, names: set[str], name: str) -> None:
        if name in names:
            if self.saved is not None:
                self.undo.append((names, name, True))
            names.discard(name)

    def rollback(self) -> None:
        """Undo every recorded change, newest first, and restore the caller's blocks."""
        for table, key, old in reversed(self.undo):
            if isinstance(table, set):
                (table.discard if old is _MISSING else table.add)(key)
            elif old is _MISSING:
                table.pop(key, None)
            else:
                table[key] = old
        self.undo.clear()
        if self.saved is not None:
            work, module, view, hint, calls, taken = self.saved
            assert work is not None
            work.module, work.view, work.hint, work.calls, work.taken = module, view, hint, calls, taken


NO_JOURNAL = Journal()

ResourceKey = tuple[str, str, str]  # (mode, type, name)


@dataclass(frozen=True, slots=True)
class Context:
    """What every step needs: options, the schema table, provider names, where modules are vendored."""

    options: Options
    schema: BlockSchema
    names: ProviderNames
    module_dir: Callable[[ModuleNode], str]  # path.module of an inlined module, relative to the root
    files: Callable[[ModuleNode, str], dict[str, Path]]  # its non-configuration files, by output path


@dataclass(slots=True)
class Work:
    """A module being rewritten: its current blocks and what flatten knows about them.

    ``targets`` maps each resource (by its current mode, type and name) to the provider
    configuration it used originally; ``origins`` maps the current address of every managed
    resource and module call that came from inlining to its original address relative to this
    module (the ``moved`` blocks); ``kept`` holds the calls that stay calls, by current name;
    ``notes`` says, by local name, what a variable local keeps and drops of its declaration.
    """

    node: ModuleNode
    module: Module
    targets: dict[ResourceKey, ConfigAddr | None]
    origins: dict[str, str] = field(default_factory=dict)
    kept: dict[str, Work] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    copies: dict[str, Path] = field(default_factory=dict)
    pending: dict[str, HostRule] = field(default_factory=dict)  # rewrites ``settle`` still owes
    taken: set[str] | None = None  # the names the module declares (``taken_names``), once known
    instances: dict[ResourceKey, str] = field(default_factory=dict)  # for_each provider keys
    # Kept in step with ``module`` by ``_inline`` (None: not built yet), so that a caller of
    # thousands of calls is not scanned once per call: its module calls by name, and the blocks
    # the provider naming reads (``_provider_view``).
    calls: dict[str, Block] | None = None
    view: Module | None = None
    hint: int = 0  # where the last inlined call's blocks end: the next call is usually just after
    # Records each change while a split call's instances are inlined (``Journal``); a no-op one
    # outside them.
    journal: Journal = field(default_factory=lambda: NO_JOURNAL)


def taken_names(module: Module) -> set[str]:
    """Return every name ``module`` declares, as ``local.x``, ``module.x``, ``aws_vpc.x``…"""
    taken: set[str] = set()
    for b in module.blocks:
        if b.type == "locals":
            taken |= {f"local.{a.name}" for a in b.body.attributes}
        elif b.type in ("module", "check") and b.labels:
            taken.add(f"{b.type}.{b.labels[0]}")
            for d in b.body.blocks_of("data"):
                taken.add(f"data.{'.'.join(d.labels)}")
        elif b.type in MODES and len(b.labels) == 2:
            taken.add(f"{b.type}.{b.labels[0]}.{b.labels[1]}")
    return taken


class _Names:
    """Collision-free names in the caller, allocated in a fixed order (so the output is stable).

    ``taken`` is the caller's names (kept in its ``Work``, not recomputed for every call); the
    names a step takes are added to it only when the step succeeds (``new``).
    """

    def __init__(self, taken: set[str]) -> None:
        self.taken = taken
        self.new: set[str] = set()

    def take(self, namespace: str, base: str) -> str:
        name, n = base, 2
        while f"{namespace}.{name}" in self.taken or f"{namespace}.{name}" in self.new:
            name, n = f"{base}_{n}", n + 1
        self.new.add(f"{namespace}.{name}")
        return name


def _set(
    items: tuple[Attribute | Block, ...], name: str, value: JsonValue | None, at: Range
) -> tuple[Attribute | Block, ...]:
    """Return ``items`` with attribute ``name`` set to ``value`` (removed when None), in place."""
    out: list[Attribute | Block] = []
    done = False
    for item in items:
        if isinstance(item, Attribute) and item.name == name:
            if value is not None and not done:
                out.append(replace(item, expr=Expr(value, item.expr.range)))
            done = True
            continue
        out.append(item)
    if not done and value is not None:
        out.append(Attribute(name, Expr(value, at), at))
    return tuple(out)


def _list(value: JsonValue) -> list[JsonValue]:
    return list(value) if isinstance(value, list) else []


def _call_arg(src: str) -> str:
    """Drop the parentheses ``json_to_hcl`` puts around a lone interpolation (a call needs none)."""
    return src[1:-1] if src.startswith("(") and src.endswith(")") and _balanced(src[1:-1]) else src


def _balanced(text: str) -> bool:
    depth = 0
    for c in text:
        depth += c in "([{"
        depth -= c in ")]}"
        if depth < 0:
            return False
    return depth == 0


def _is_exact(value: JsonValue, ty: Type) -> bool:
    """Whether ``value`` (a literal) already has exactly type ``ty``, so it needs no conversion."""
    if isinstance(ty, AnyType):
        return True
    if not isinstance(ty, Primitive):
        return False
    if isinstance(value, str) and single_interpolation(value) is None:
        return ty.name == "string"
    if isinstance(value, bool):
        return ty.name == "bool"
    return isinstance(value, (int, Decimal)) and ty.name == "number"


def _variable_value(block: Block, argument: object) -> tuple[JsonValue, str] | str:
    """Return the expression a variable local is bound to and the note describing it, or why not.

    The value is what Terraform gives the variable: the argument (or the default, or null), with
    ``nullable = false`` turning a null argument into the default, then the type's ``optional()``
    defaults applied and the value converted to the type (``_convert.py``), then ``sensitive``.
    """

    def literal(name: str) -> JsonValue | _Unset:
        attr = block.body.attribute(name)
        return attr.value if attr is not None else UNSET

    type_attr = literal("type")
    type_text = type_attr if isinstance(type_attr, str) else ""
    try:
        ty: Type = parse_type(type_text) if type_text.strip() else ANY
    except TypeExprError as exc:
        return f"the type of variable {block.labels[0]} could not be read ({exc})"
    default = literal("default")
    default_expr: JsonValue = None if isinstance(default, _Unset) else literal_to_expression(default)
    sensitive = literal("sensitive") in (True, "true")
    not_nullable = literal("nullable") in (False, "false")
    value: JsonValue
    if not isinstance(argument, _Unset):
        value, source = cast(JsonValue, argument), "the caller's argument"
    elif not isinstance(default, _Unset):
        value, source = default_expr, "its default"
    else:
        value, source = None, "null (the variable is required and was not set)"
    wrapped = False

    def conv(v: JsonValue) -> str | None:
        nonlocal wrapped
        if _is_exact(v, ty):
            return json_to_hcl(v)
        wrapped = True
        return conversion(v, ty)

    src = conv(value)
    if not_nullable and not isinstance(argument, _Unset) and not isinstance(default, _Unset):
        fallback = conv(default_expr)
        if value is None:
            src, wrapped = fallback, True
        elif isinstance(value, str) and single_interpolation(value) is not None and src is not None:
            # Null only at run time: pick from a tuple, not a conditional, whose two results
            # must unify (an any-typed default and argument may not).
            if fallback is not None:
                src, wrapped = f"[{fallback}, {src}][{json_to_hcl(value)} == null ? 0 : 1]", True
            else:
                src = None
        # Any other literal is never null, so the default is never used.
    if src is None:
        return (
            f"the type {type_text} of variable {block.labels[0]} has an any below a collection, "
            "whose conversion no expression writes exactly"
        )
    if sensitive:
        src, wrapped = f"sensitive({_call_arg(src)})", True
    note = f"bound to {source}"
    if type_text:
        note += f"; type {type_string(ty)}" + (", converted" if wrapped else "")
    if not_nullable:
        note += "; nullable = false"
    if sensitive:
        note += "; sensitive"
    return (f"${{{src}}}" if wrapped else value), note


def _refers_beyond(validation: Block, name: str) -> bool:
    """Whether a variable validation refers to anything but ``var.<name>`` (a cross-variable rule).

    Terraform checks such a rule during plan only, where ``validate`` checks one that reads just
    its own variable (the rules are evaluated by ``evalVariableValidations`` in
    internal/terraform/eval_variable.go; the timing measured with Terraform 1.11, issue 31).
    """
    cond = validation.body.attribute("condition")
    msg = validation.body.attribute("error_message")
    for attr in (cond, msg):
        if attr is None or not isinstance(attr.value, str):
            continue
        for ref in template_references(attr.value):
            if not (ref.root == "var" and ref.name(1) == name):
                return True
    return False


def _moved(block: Block, prefix: str) -> Block:
    items = tuple(
        replace(i, expr=Expr(f"{prefix}{i.value}", i.expr.range))
        if isinstance(i, Attribute) and i.name in ("from", "to") and isinstance(i.value, str)
        else i
        for i in block.body.items
    )
    return replace(block, body=Body(items, block.body.range))


def inline_call(
    ctx: Context, host: Work, call_name: str, child: Work, origin: str | None = None
) -> Work | str:
    """Return ``host`` with the call ``call_name`` replaced by ``child``'s blocks, or why it cannot be.

    ``origin`` is the call's original address when it differs from ``module.<call_name>`` (one
    instance of a counted call, ``module.x[0]``): the ``moved`` blocks start there.
    """
    try:
        return _inline(ctx, host, call_name, child, origin or f"module.{call_name}")
    except ExpressionError as exc:
        return f"an expression could not be read ({exc})"


def position(blocks: tuple[Block, ...], block: Block, hint: int) -> int:
    """Return where ``block`` (this very object) is in ``blocks``, looking from just before
    ``hint`` on first: a caller's calls are inlined in their order, so each is found a few blocks
    after the last one's replacement, not by scanning thousands of blocks per call."""
    start = max(0, min(hint, len(blocks)) - 2)
    for i in range(start, len(blocks)):
        if blocks[i] is block:
            return i
    for i in range(start):
        if blocks[i] is block:
            return i
    raise ValueError("the call is not among its caller's blocks")


def _provider_view(module: Module) -> Module:
    """The blocks of ``module`` that the provider naming reads (``ProviderNames``: terraform and
    provider blocks), looked up for every resource of every inlined call."""
    return replace(module, blocks=tuple(b for b in module.blocks if b.type in ("terraform", "provider")))


def _inline(ctx: Context, host: Work, p: str, child: Work, origin: str) -> Work | str:
    if host.calls is None:
        host.calls = {b.labels[0]: b for b in host.module.blocks_of("module") if b.labels}
    call = host.calls[p]
    mod = child.module
    for b in mod.blocks:
        if b.type not in _HANDLED:
            return f"the module holds {b.type} blocks, which inlining does not handle"
    for b in mod.blocks:
        eph = b.body.attribute("ephemeral") if b.type in ("variable", "output") and b.labels else None
        if eph is not None and eph.value in (True, "true"):
            # A local cannot be ephemeral: the value would land in state and plan files.
            return f'its {b.type} "{b.labels[0]}" is ephemeral, and a local cannot keep a value ephemeral'
    at = call.range
    taken = host.taken if host.taken is not None else taken_names(host.module)
    host.taken = taken
    names = _Names(taken)
    variables = [b for b in mod.blocks_of("variable") if b.labels]
    outputs = [b for b in mod.blocks_of("output") if b.labels]
    local_attrs = [a for b in mod.blocks_of("locals") for a in b.body.attributes if a.name != "//"]
    var_names = {v.labels[0]: names.take("local", f"{p}__var__{v.labels[0]}") for v in variables}
    out_names = {o.labels[0]: names.take("local", f"{p}__out__{o.labels[0]}") for o in outputs}
    local_names = {a.name: names.take("local", f"{p}__{a.name}") for a in local_attrs}
    res_names: dict[ResourceKey, str] = {}
    for b in mod.blocks:
        if b.type in MODES and len(b.labels) == 2:
            mode, (t, n) = MODES[b.type], b.labels
            res_names[(mode, t, n)] = names.take(f"{b.type}.{t}", f"{p}__{n}")
        elif b.type == "check":
            for d in b.body.blocks_of("data"):
                dt, dn = d.labels
                res_names[("data", dt, dn)] = names.take(f"data.{dt}", f"{p}__{dn}")
    call_names = {k: names.take("module", f"{p}__{k}") for k in sorted(child.kept)}
    check_names = {c.labels[0]: names.take("check", f"{p}__{c.labels[0]}") for c in mod.blocks_of("check")}
    path_module = ctx.module_dir(child.node)
    used_path = False

    # Provider requirements: the child's entries under the caller's names (versions merged).
    host_mod = host.module
    view = host.view if host.view is not None else _provider_view(host_mod)
    naming = ctx.names.naming
    child_reqs = module_requirements(mod, naming)
    passed_names = ctx.names.passed_names(host.node.path)
    func_names: dict[str, str] = {}  # the child's local name -> the caller's, for provider::<name>::
    for req in child_reqs.values():
        name, new = ctx.names.local_name(view, req.provider, req.name, passed_names)
        func_names[req.name] = name
        if new or req.version:
            entry = (Requirement(name, req.provider, req.version), ctx.names.source(req.provider))
            host_mod, view = add_requirements(host_mod, [entry], at), add_requirements(view, [entry], at)
    functions_used: set[str] = set()

    def child_replace(ref: Reference, text: str) -> str | None:
        nonlocal used_path
        root, first = ref.root, ref.name(1)
        attr1 = ref.steps[0][0] == "attr" if ref.steps else False
        if root == "provider" and len(ref.steps) == 2:
            # A provider-defined function names its provider by the module's local name: the
            # caller's name for the same provider (Terraform resolves provider::<name>:: through
            # required_providers, internal/lang/functions.go).
            if first is None or first not in func_names:
                return None
            functions_used.add(first)
            return f"provider::{func_names[first]}{ref.tail(text, 1)}"
        if root in ("var", "local") and first is not None:
            table = var_names if root == "var" else local_names
            return f"local.{table[first]}{ref.tail(text, 1)}" if first in table else None
        if root == "module" and first in call_names:
            return f"module.{call_names[first]}{ref.tail(text, 1)}"
        if root in ("data", "ephemeral") and len(ref.steps) >= 2:
            key = (root, str(ref.steps[0][1]), str(ref.steps[1][1]))
            if key in res_names:
                return f"{root}.{key[1]}.{res_names[key]}{ref.tail(text, 2)}"
            return None
        if root == "path" and first == "module":
            used_path = True
            return hcl_string(path_module) + ref.tail(text, 1)
        if root in _RESERVED or not attr1:
            return None
        key = ("managed", root, str(first))
        return f"{root}.{res_names[key]}{ref.tail(text, 1)}" if key in res_names else None

    scope = Scope(child_replace, functions=True)
    call_depends = call.body.attribute("depends_on")
    depends = [d for d in _list(call_depends.value) if isinstance(d, str)] if call_depends else []
    inputs: dict[str, JsonValue] = {a.name: a.value for a in call.body.attributes if a.name not in _META}
    for escape in call.body.blocks_of("_"):
        inputs.update({a.name: a.value for a in escape.body.attributes})

    new_blocks: list[Block] = []
    locals_items: list[Attribute | Block] = []
    notes: dict[str, str] = {local_names[k]: v for k, v in child.notes.items() if k in local_names}
    variable_schema = ctx.schema.blocks["variable"]
    output_schema = ctx.schema.blocks["output"]
    for v in variables:
        x = v.labels[0]
        bound = _variable_value(v, inputs.get(x, UNSET))
        if isinstance(bound, str):
            return bound
        value, note = bound
        locals_items.append(Attribute(var_names[x], Expr(value, v.range), v.range))
        notes[var_names[x]] = f'variable "{x}" of module.{p}: {note}'  # relative: the same in every copy
        # Each validation: a local that fails the plan with an error, as the validation does.
        for val in v.body.blocks_of("validation"):
            rule = replace(val, body=rewrite_body(val.body, variable_schema.blocks["validation"], scope))
            what = f'Invalid value for variable "{x}" of module.{p}'
            failing = failing_local(rule, what, at_plan=_refers_beyond(val, x))
            if failing is not None:
                name = names.take("local", f"{p}__var__{x}__validation")
                locals_items.append(Attribute(name, Expr(failing, val.range), val.range))
                notes[name] = f'validation of variable "{x}" of module.{p}: an error when it fails'
    for o in outputs:
        x = o.labels[0]
        attr = o.body.attribute("value")
        value = rewrite_value(attr.value, scope) if attr is not None else None
        # sensitive = true is not applied: Terraform does not mark a module output for its caller
        # (the value keeps its own marks), so sensitive() would be stricter than the original.
        locals_items.append(Attribute(out_names[x], Expr(value, o.range), o.range))
        for c in o.body.blocks_of("precondition"):
            rule = replace(c, body=rewrite_body(c.body, output_schema.blocks["precondition"], scope))
            what = f'Module output value precondition failed: output "{x}" of module.{p}'
            failing = failing_local(rule, what, at_plan=True)  # validate never checks it
            if failing is not None:
                name = names.take("local", f"{p}__out__{x}__precondition")
                locals_items.append(Attribute(name, Expr(failing, c.range), c.range))
                notes[name] = f'precondition of output "{x}" of module.{p}: an error when it fails'
    for a in local_attrs:
        locals_items.append(
            replace(a, name=local_names[a.name], expr=Expr(rewrite_value(a.value, scope), a.expr.range))
        )
    if locals_items:
        new_blocks.append(Block("locals", (), Body(tuple(locals_items)), at))
    # A provider function needs its provider declared by name in the caller's required_providers.
    for name in sorted(functions_used):
        req = child_reqs[name]
        entry = (Requirement(func_names[name], req.provider, None), ctx.names.source(req.provider))
        host_mod, view = add_requirements(host_mod, [entry], at), add_requirements(view, [entry], at)

    targets: dict[ResourceKey, ConfigAddr | None] = {}
    instances: dict[ResourceKey, str] = {}
    origins: dict[str, str] = {}

    def provider_ref(key: ResourceKey) -> str | None:
        nonlocal host_mod, view
        target = child.targets.get(key)
        if target is None:
            return None
        instance = child.instances.get(key)
        found = ctx.names.reference(host.node.path, view, target, key[1].split("_", 1)[0], instance=instance)
        if found is None:
            return None
        ref, req = found
        if req is not None:
            entry = (req, ctx.names.source(req.provider))
            host_mod, view = add_requirements(host_mod, [entry], at), add_requirements(view, [entry], at)
        return ref

    def resource(b: Block, mode: str, schema: BlockSchema) -> Block | str:
        t, n = b.labels
        key = (mode, t, n)
        nb = rewrite_block(b, schema, scope)
        ref = provider_ref(key)
        if ref is None:
            return (
                f"{_PREFIX[mode]}{t}.{n} uses provider configuration {child.targets.get(key)}, "
                "which the caller cannot refer to"
            )
        items = _set(nb.body.items, "provider", ref, b.range)
        old_depends = nb.body.attribute("depends_on")
        merged = [*(_list(old_depends.value) if old_depends else []), *[d for d in depends]]
        merged = [d for i, d in enumerate(merged) if d not in merged[:i]]
        items = _set(items, "depends_on", merged or None, b.range)
        new_name = res_names[key]
        targets[(mode, t, new_name)] = child.targets.get(key)
        if key in child.instances:
            instances[(mode, t, new_name)] = child.instances[key]
        # Data and ephemeral resources are renamed too (recorded for reports, never moved: they
        # have no state to carry).
        here, there = f"{_PREFIX[mode]}{t}.{new_name}", f"{_PREFIX[mode]}{t}.{n}"
        origins[here] = f"{origin}." + child.origins.get(there, there)
        return replace(nb, labels=(t, new_name), body=Body(items, nb.body.range))

    for b in mod.blocks:
        if b.type in MODES and len(b.labels) == 2:
            done = resource(b, MODES[b.type], ctx.schema.blocks[b.type])
            if isinstance(done, str):
                return done
            new_blocks.append(done)
    for c in mod.blocks_of("check"):
        check_schema = ctx.schema.blocks["check"]
        items: list[Attribute | Block] = []
        for item in c.body.items:
            if isinstance(item, Block) and item.type == "data" and len(item.labels) == 2:
                done = resource(item, "data", check_schema.blocks["data"])
                if isinstance(done, str):
                    return done
                items.append(done)
            elif isinstance(item, Block) and item.type == "assert":
                items.append(
                    replace(item, body=rewrite_body(item.body, check_schema.blocks["assert"], scope))
                )
            else:
                items.append(item)
        new_blocks.append(
            replace(c, labels=(check_names[c.labels[0]],), body=Body(tuple(items), c.body.range))
        )

    kept: dict[str, Work] = {}
    for b in mod.blocks_of("module"):
        k = b.labels[0]
        kw = child.kept.get(k)
        if kw is None:
            return f"module.{k} inside it was not loaded"
        nb = rewrite_block(b, ctx.schema.blocks["module"], scope)
        passes: dict[str, JsonValue] = {}
        for binding, target in ctx.names.passes(kw.node.path):
            if binding.how is How.PASSED:
                key = binding.key
            elif binding.how is How.INHERITED:
                if ctx.names.default_target(host.node.path, binding.addr.provider) == target:
                    continue
                key, new = ctx.names.local_name(kw.module, binding.addr.provider, binding.key)
                if new:
                    return f"module.{k} inside it cannot be given provider {binding.addr.provider} explicitly"
            else:
                continue
            found = ctx.names.reference(
                host.node.path,
                view,
                target,
                key.split(".")[0],
                proxy=True,
                instance=instance_of(binding),
            )
            inherits = (
                "." not in key and ctx.names.default_target(host.node.path, binding.addr.provider) == target
            )
            if found is None and inherits:
                continue  # the default the call inherits from its new place is the same one
            if found is None:
                return (
                    f"module.{k} inside it uses provider configuration {target}, which the caller "
                    "cannot refer to"
                )
            # The providers map item must type-check as Terraform checks it (``passed_types``). A
            # kept module gets a required_providers entry only when that makes it take what its
            # new caller passes, as the provider its resources already use: an entry that types
            # it differently from its caller ("Provider type mismatch", issue 42) is never added.
            host_entries = module_requirements(view, naming)
            if found[1] is not None:
                host_entries[found[1].name] = found[1]
            passed_ty, taken_ty = passed_types(
                host_entries, found[0], module_requirements(kw.module, naming), key, naming
            )
            if passed_ty != taken_ty:
                if (
                    binding.how is not How.INHERITED
                    or key in module_requirements(kw.module, naming)
                    or passed_ty != binding.addr.provider
                ):
                    return (
                        f"module.{k} inside it would be passed {found[0]}, which "
                        f"{ctx.options.dialect.product} types as {passed_ty.for_display()} there, where "
                        f"the module's {key} is "
                        f"{taken_ty.for_display()}"
                    )
                # A child without required_providers takes "terraform" for hashicorp/terraform in
                # a providers map, without the builtin special case resources get; declaring the
                # provider it already uses changes nothing else in it.
                req = Requirement(key, binding.addr.provider, None)
                module = add_requirements(kw.module, [(req, ctx.names.source(req.provider))], at)
                kw = replace(kw, module=module, calls=None, view=None)
            passes[key] = found[0]
            if found[1] is not None:
                entry = (found[1], ctx.names.source(found[1].provider))
                host_mod, view = add_requirements(host_mod, [entry], at), add_requirements(view, [entry], at)
        call_items = _set(nb.body.items, "providers", dict(sorted(passes.items())) or None, b.range)
        old_depends = nb.body.attribute("depends_on")
        merged = [*(_list(old_depends.value) if old_depends else []), *depends]
        call_items = _set(
            call_items,
            "depends_on",
            [d for i, d in enumerate(merged) if d not in merged[:i]] or None,
            b.range,
        )
        new_k = call_names[k]
        new_blocks.append(replace(nb, labels=(new_k,), body=Body(call_items, nb.body.range)))
        kept[new_k] = kw
        origins[f"module.{new_k}"] = f"{origin}." + child.origins.get(f"module.{k}", f"module.{k}")
    for b in mod.blocks:
        if b.type == "removed" and "[" in origin:
            return "the module holds removed blocks, whose addresses cannot name one instance"
        if b.type in ("moved", "removed"):
            new_blocks.append(_moved(b, f"{origin}."))
    versions = [
        a.value
        for t in mod.blocks_of("terraform")
        for a in t.body.attributes
        if a.name == "required_version" and isinstance(a.value, str)
    ]

    # The caller: module.p.<output> becomes the output's local; depends_on module.p every new address.
    whole = "{" + ", ".join(f"{o} = local.{n}" for o, n in sorted(out_names.items())) + "}"
    addresses = [
        f"{_PREFIX[m]}{t}.{res_names[(m, t, n)]}"
        for b in mod.blocks
        if b.type in MODES and len(b.labels) == 2
        for m, t, n in [(MODES[b.type], *b.labels)]
    ] + [f"module.{n}" for n in kept]

    at_call = position(host_mod.blocks, call, host.hint)
    blocks = host_mod.blocks[:at_call] + tuple(new_blocks) + host_mod.blocks[at_call + 1 :]
    module = add_required_version(replace(host_mod, blocks=blocks), versions, at)
    view = add_required_version(view, versions, at)

    # Nothing can fail from here on: the caller's tables grow in place (a step that refused left
    # them untouched), which keeps inlining N calls linear instead of copying N tables N times.
    # Inside a split call (``Journal``) each change is recorded, so that the instances already
    # inlined can be undone when a later one cannot be.
    j = host.journal
    j.update(host.copies, child.copies)
    if used_path and child.node.directory is not None:
        j.update(host.copies, ctx.files(child.node, path_module))
    j.pop(host.kept, p)
    j.update(host.kept, kept)
    j.update(host.targets, targets)
    j.update(host.instances, instances)
    j.update(host.origins, origins)
    j.update(host.notes, notes)
    for name in names.new:
        j.add(taken, name)
    j.discard(taken, f"module.{p}")  # the call is gone
    # The caller's references to module.p are rewritten once for all its calls (``settle``).
    j.update(host.pending, {p: HostRule(MappingProxyType(out_names), whole, tuple(addresses))})
    host.module, host.view = module, view
    host.hint = at_call + len(new_blocks)
    j.pop(host.calls, p)
    j.update(host.calls, {b.labels[0]: b for b in new_blocks if b.type == "module" and b.labels})
    return host


@dataclass(frozen=True, slots=True)
class HostRule:
    """How the caller's references to one inlined call are rewritten (``settle``).

    A split call (a literal ``count`` or ``for_each``, ``_count.py``) has ``parts``: the calls of
    its instances, in order, whose own rules give its value: ``module.x`` is the tuple of their
    objects (``keys`` None) or the object of them by key, with any traversal after it
    (``module.x[0].id``), and ``depends_on = [module.x]`` is everything inlined from every part.
    """

    outputs: Mapping[str, str]  # output name -> its local
    whole: str  # module.p as a whole: an object of the output locals
    addresses: tuple[str, ...]  # depends_on = [module.p]: everything inlined from it
    parts: tuple[str, ...] = ()
    keys: tuple[str, ...] | None = None


def _compose(rule: HostRule, rules: Mapping[str, HostRule]) -> HostRule:
    """Return a split call's rule with its value and addresses made of its parts' own."""
    wholes = [rules[p].whole if p in rules else f"module.{p}" for p in rule.parts]
    addresses: list[str] = []
    for p in rule.parts:
        addresses.extend(rules[p].addresses if p in rules else (f"module.{p}",))
    if rule.keys is None:
        whole = "[" + ", ".join(wholes) + "]"
    else:
        pairs = zip(rule.keys, wholes, strict=True)
        whole = "{" + ", ".join(f"{hcl_string(k)} = {w}" for k, w in pairs) + "}"
    return replace(rule, whole=whole, addresses=tuple(addresses))


def settle(ctx: Context, work: Work) -> Work:
    """Return ``work`` with every reference to a call inlined into it rewritten, in one pass.

    ``module.p.<output>`` becomes the output's local, ``module.p`` the object of them all, and
    ``depends_on = [module.p]`` every address inlined from ``p``. One pass over the module for all
    its calls, not one per call: inlining N calls stays linear in N. A split call's references
    (``module.x[0].id``) are rewritten in the same pass, to its instances' values.
    """
    if not work.pending:
        return work
    rules = dict(work.pending)
    for name, rule in work.pending.items():
        if rule.parts:
            rules[name] = _compose(rule, work.pending)

    def host_replace(ref: Reference, text: str) -> str | None:
        rule = rules.get(ref.name(1) or "") if ref.root == "module" else None
        if rule is None:
            return None
        if rule.parts:
            return rule.whole + ref.tail(text, 1)
        out = ref.name(2)
        if out is not None and out in rule.outputs:
            return f"local.{rule.outputs[out]}{ref.tail(text, 2)}"
        return rule.whole + ref.tail(text, 1) if len(ref.steps) == 1 else None

    def host_expand(ref: Reference) -> list[str] | None:
        rule = rules.get(ref.name(1) or "") if ref.root == "module" else None
        return list(rule.addresses) if rule is not None and len(ref.steps) == 1 else None

    scope = Scope(host_replace, host_expand)
    blocks: list[Block] = []
    for b in work.module.blocks:
        schema = ctx.schema.blocks.get(b.type)
        blocks.append(rewrite_block(b, schema, scope) if schema is not None else b)
    work.pending.clear()
    work.module = replace(work.module, blocks=tuple(blocks))
    work.calls, work.view = None, None  # (rebuilt from the rewritten blocks when next needed)
    return work
