"""Which provider reference an inlined resource needs in its new module, and the requirements to declare.

Rule for the whole file: wiring is never recomputed here, only read (spec §4.2). A resource keeps
the configuration it used (``ResourceWiring.config``, an absolute address); in the module it moves
to, flatten names the binding that resolves to that same configuration, using that module's own
local name for the provider. A configuration the new module cannot name makes the call stay.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace

from flatten.lang.model import Attribute, Block, Body, Expr, JsonValue, Module, Range
from flatten.providers import Binding, ConfigAddr, ConfigRef, How, ModuleWiring, Provider, ProviderWiring
from flatten.providers.addresses import Naming, implied_local_name

__all__ = [
    "ProviderNames",
    "Requirement",
    "add_required_version",
    "add_requirements",
    "instance_of",
    "module_requirements",
    "passed_types",
]

Slot = tuple[Provider, str]  # (FQN, alias)

# An instance key that reads the same in any module: a quoted string without templates, or a
# number. ``each.key``/``each.value`` also qualify in a moved call's own ``providers`` map,
# whose ``for_each`` moves with it.
_CONSTANT_KEY = re.compile(r'\A\s*(?:"(?:[^"\\$%]|\\.)*"|-?[0-9]+)\s*\Z')
_EACH_KEY = re.compile(r"\A\s*each\.(?:key|value)\s*\Z")


def instance_of(binding: Binding | None) -> str | None:
    """Return the instance key (source text) of a ``for_each`` provider a binding chain selects.

    OpenTofu's provider ``for_each``: the module that configures it refers to one instance as
    ``name.alias[key]``, in a resource's ``provider`` or a ``providers`` map item; a module it
    is passed to holds that one instance (internal/configs/provider.go, module_call.go in
    opentofu/opentofu). The key sits on the passing item closest to the configuration.
    """
    found: str | None = None
    b = binding
    while b is not None:
        if b.how is How.PASSED and b.parent_ref is not None and b.parent_ref.key is not None:
            found = b.parent_ref.key
        b = b.upstream
    return found


@dataclass(frozen=True, slots=True)
class Requirement:
    """A ``required_providers`` entry as written in a module (current text, after earlier inlining)."""

    name: str
    provider: Provider
    version: str | None


def module_requirements(module: Module, naming: Naming) -> dict[str, Requirement]:
    """Return the ``required_providers`` entries of ``module`` by local name."""
    out: dict[str, Requirement] = {}
    for block in module.blocks_of("terraform"):
        for nested in block.body.blocks_of("required_providers"):
            for attr in nested.body.attributes:
                value = attr.value
                provider: Provider | None = naming.implied(attr.name)
                version: str | None = value if isinstance(value, str) else None
                if isinstance(value, dict):
                    source, raw = value.get("source"), value.get("version")
                    version = raw if isinstance(raw, str) else None
                    if isinstance(source, str):
                        provider = naming.parse_source(source)
                if provider is not None:
                    out[attr.name] = Requirement(attr.name, provider, version)
    return out


def _effective(mw: ModuleWiring) -> dict[Slot, Binding]:
    """The binding each (FQN, alias) slot resolves to in a module (``_wire_module``'s precedence)."""
    slots: dict[Slot, Binding] = {}
    for b in mw.own:
        slots.setdefault((b.addr.provider, b.addr.alias), b)
    for b in mw.received:
        slot = (b.addr.provider, b.addr.alias)
        if b.how is How.PASSED:
            if slot not in slots or slots[slot].how is not How.OWN:
                slots[slot] = b
        elif slot not in slots:
            slots[slot] = b
    return slots


def passed_types(
    parent: dict[str, Requirement], passed: str, child: dict[str, Requirement], key: str, naming: Naming
) -> tuple[Provider, Provider]:
    """Return the provider types Terraform compares for the ``providers`` map item ``key = passed``
    (``validateProviderConfigs`` in internal/configs/provider_validation.go): the parent's, then
    the child's, from each module's ``required_providers`` entries (``parent``, ``child``).

    The child's name is its entry's provider, else ``NewDefaultProvider`` (``hashicorp/<name>``,
    no builtin special case). The parent's is its entry for the passed name, else
    ``NewDefaultProvider`` of it, and Terraform then prefers the parent's entry under the child's
    name, when the parent has one (it looks the child's name up among the parent's requirements).
    """
    parent_name = passed.split(".", 1)[0].split("[", 1)[0]
    child_name = key.split(".", 1)[0]
    parent_ty = parent[parent_name].provider if parent_name in parent else naming.default(parent_name)
    if key in parent:
        parent_ty = parent[key].provider
    child_ty = child[child_name].provider if child_name in child else naming.default(child_name)
    return parent_ty, child_ty


class ProviderNames:
    """Provider references and requirements for modules that receive inlined resources."""

    def __init__(self, wiring: ProviderWiring, naming: Naming) -> None:
        self.wiring = wiring
        self.naming = naming
        self._used_ids: frozenset[int] | None = None  # computed once, on first use
        self._modules: dict[tuple[str, ...], ModuleWiring] | None = None

    def source(self, provider: Provider) -> str:
        if provider.hostname == self.naming.default_host:
            return f"{provider.namespace}/{provider.type}"
        return str(provider)

    def module_at(self, path: tuple[str, ...]) -> ModuleWiring | None:
        """The wiring of the module at ``path`` (indexed once: one lookup per module stays linear)."""
        if self._modules is None:
            self._modules = {m.path: m for m in self.wiring.modules}
        return self._modules.get(path)

    def _slots(self, path: tuple[str, ...]) -> dict[Slot, Binding]:
        mw = self.module_at(path)
        return _effective(mw) if mw is not None else {}

    def resolve(self, path: tuple[str, ...], ref: ConfigRef, module: Module) -> ConfigAddr | None:
        """Return the configuration ``ref`` (a local reference in the module at ``path``) resolves to."""
        reqs = module_requirements(module, self.naming)
        fqn = reqs[ref.name].provider if ref.name in reqs else self.naming.implied(ref.name)
        binding = self._slots(path).get((fqn, ref.alias))
        if binding is not None:
            return binding.target
        return ConfigAddr((), fqn) if not ref.alias else None

    def implied(self, path: tuple[str, ...], resource_type: str, module: Module) -> ConfigAddr | None:
        return self.resolve(path, ConfigRef(implied_local_name(resource_type)), module)

    def slot_for(
        self, path: tuple[str, ...], target: ConfigAddr, *, proxy: bool = False, instance: str | None = None
    ) -> Slot | None:
        """Return the slot of the module at ``path`` that resolves to ``target``, or None.

        A binding the module holds itself (its own block, or one its caller passed by name) is
        preferred to an inherited default with the same target: that is the name the module works
        with. With ``instance`` (a ``for_each`` provider's key) only the configuration itself or
        a binding passed that same instance qualifies. ``proxy`` asks for a name a ``providers``
        map item may give: in a module other than the root, Terraform builds a proxy only to a
        configuration the module configures or was passed, never to an inherited default
        (``ProviderConfigTransformer.addProxyProviders`` in internal/terraform/
        transform_provider.go fails with "missing provider module.c.provider[...]"; Terraform
        1.11 validates such a tree and then rejects it).
        """
        slots = self._slots(path)
        inherited = {How.INHERITED, How.IMPLICIT}
        found = sorted(
            (
                slot
                for slot, b in slots.items()
                if b.target == target
                and not (proxy and path and b.how in inherited)
                and (instance is None or b.how is How.OWN or instance_of(b) == instance)
            ),
            key=lambda s: (slots[s].how in inherited, s[1] != target.alias, s[1]),
        )
        if found:
            return found[0]
        if proxy and path:
            return None
        if not target.alias and not target.module and (target.provider, "") not in slots:
            return (target.provider, "")  # the root's implicit default, inherited
        return None

    def passed_names(self, path: tuple[str, ...]) -> frozenset[str]:
        """The local names the caller of the module at ``path`` passes it configurations under.

        Its caller's ``providers`` map types each of them (``passed_types``): a new
        ``required_providers`` entry under one of those names would type it differently from what
        the caller passes ("Provider type mismatch"), so a new entry never takes one (issue 42).
        """
        mw = self.module_at(path)
        if mw is None:
            return frozenset()
        return frozenset(b.key.split(".", 1)[0] for b in mw.received if b.how is How.PASSED)

    def local_name(
        self, module: Module, provider: Provider, preferred: str, avoid: frozenset[str] = frozenset()
    ) -> tuple[str, bool]:
        """Return the local name ``module`` uses for ``provider``, and whether it must be declared
        (never as one of ``avoid``, the names its caller passes it: ``passed_names``)."""
        reqs = module_requirements(module, self.naming)
        names = sorted(
            (r.name for r in reqs.values() if r.provider == provider), key=lambda n: (n != preferred, n)
        )
        if names:
            return names[0], False
        if provider.type not in reqs and self.naming.implied(provider.type) == provider:
            return provider.type, False
        taken = set(reqs) | {b.labels[0] for b in module.blocks_of("provider") if b.labels} | avoid
        for name in _candidates(preferred, provider):
            if name not in taken:
                return name, True
        raise AssertionError("unreachable: candidates are unbounded")  # pragma: no cover

    def reference(
        self,
        path: tuple[str, ...],
        module: Module,
        target: ConfigAddr,
        preferred: str,
        *,
        proxy: bool = False,
        instance: str | None = None,
    ) -> tuple[str, Requirement | None] | None:
        """Return the ``provider`` reference for ``target`` in the module at ``path`` (None: unreachable)
        and the requirement to declare there for it, if any (``proxy``, ``instance``: see
        ``slot_for``). In the module that configures a ``for_each`` provider the reference
        names the instance, ``name.alias[key]``, when its key reads the same there."""
        slot = self.slot_for(path, target, proxy=proxy, instance=instance)
        if slot is None:
            return None
        name, new = self.local_name(module, slot[0], preferred, self.passed_names(path))
        ref = f"{name}.{slot[1]}" if slot[1] else name
        if instance is not None and self._slots(path)[slot].how is How.OWN:
            if not (_CONSTANT_KEY.match(instance) or (proxy and _EACH_KEY.match(instance))):
                return None
            ref += f"[{instance.strip()}]"
        return ref, (Requirement(name, slot[0], None) if new else None)

    def default_target(self, path: tuple[str, ...], provider: Provider) -> ConfigAddr | None:
        binding = self._slots(path).get((provider, ""))
        return binding.target if binding is not None else ConfigAddr((), provider)

    def passes(self, path: tuple[str, ...]) -> Iterator[tuple[Binding, ConfigAddr]]:
        """Yield the bindings the module at ``path`` receives that must be given to it again.

        Every binding its caller passed by name: a ``configuration_aliases`` entry must be
        passed even when nothing uses it (Terraform: "Missing required provider configuration").
        And every inherited default that some resource at or below it uses.
        """
        mw = self.module_at(path)
        if mw is None:
            return
        used = self._used()
        for b in mw.received:
            target = b.target
            if target is not None and (b.how is How.PASSED or id(b) in used):
                yield b, target

    def _used(self) -> frozenset[int]:
        """The bindings (by identity: the wiring shares them) some resource's chain goes through."""
        if self._used_ids is None:
            self._used_ids = frozenset(
                id(b)
                for res in self.wiring.resources()
                if res.binding is not None
                for b in res.binding.chain()
            )
        return self._used_ids


def _candidates(preferred: str, provider: Provider) -> Iterator[str]:
    yield preferred
    yield provider.type
    base = f"{provider.type}-{provider.namespace}"
    yield base
    n = 2
    while True:
        yield f"{base}{n}"
        n += 1


def add_requirements(module: Module, entries: list[tuple[Requirement, str]], at: Range) -> Module:
    """Return ``module`` with each (requirement, source) declared, merging version constraints."""
    if not entries:
        return module
    blocks = list(module.blocks)
    index = next((n for n, b in enumerate(blocks) if b.type == "terraform"), None)
    if index is None:
        blocks.insert(0, Block("terraform", (), Body((), None), at))
        index = 0
    terraform = blocks[index]
    items = list(terraform.body.items)
    rp_index = next(
        (n for n, i in enumerate(items) if isinstance(i, Block) and i.type == "required_providers"), None
    )
    if rp_index is None:
        items.append(Block("required_providers", (), Body((), None), at))
        rp_index = len(items) - 1
    rp = items[rp_index]
    assert isinstance(rp, Block)
    attrs = list(rp.body.items)
    for req, source in entries:
        pos = next((n for n, a in enumerate(attrs) if isinstance(a, Attribute) and a.name == req.name), None)
        if pos is None:
            value: dict[str, JsonValue] = {"source": source}
            if req.version:
                value["version"] = req.version
            attrs.append(Attribute(req.name, Expr(value, at), at))
            continue
        old = attrs[pos]
        assert isinstance(old, Attribute)
        current: dict[str, JsonValue] = (
            dict(old.value)
            if isinstance(old.value, dict)
            else {"version": old.value}
            if isinstance(old.value, str)
            else {}
        )
        if req.version:
            have = current.get("version")
            if not isinstance(have, str) or not have.strip():
                current["version"] = req.version
            elif req.version not in [v.strip() for v in have.split(",")]:
                current["version"] = f"{have}, {req.version}"
        if "source" not in current:
            current["source"] = source
        attrs[pos] = replace(old, expr=Expr(current, old.expr.range))
    items[rp_index] = replace(rp, body=Body(tuple(attrs), rp.body.range))
    blocks[index] = replace(terraform, body=Body(tuple(items), terraform.body.range))
    return replace(module, blocks=tuple(blocks))


def add_required_version(module: Module, versions: list[str], at: Range) -> Module:
    """Return ``module`` whose ``required_version`` also holds each of ``versions``."""
    if not versions:
        return module
    blocks = list(module.blocks)
    index = next((n for n, b in enumerate(blocks) if b.type == "terraform"), None)
    if index is None:
        blocks.insert(0, Block("terraform", (), Body((), None), at))
        index = 0
    terraform = blocks[index]
    old = terraform.body.attribute("required_version")
    have = old.value if old is not None and isinstance(old.value, str) else ""
    parts = [p.strip() for p in have.split(",") if p.strip()]
    for v in versions:
        for p in v.split(","):
            if p.strip() and p.strip() not in parts:
                parts.append(p.strip())
    attr = Attribute("required_version", Expr(", ".join(parts), at), at)
    items = [
        i for i in terraform.body.items if not (isinstance(i, Attribute) and i.name == "required_version")
    ]
    blocks[index] = replace(terraform, body=Body((attr, *items), terraform.body.range))
    return replace(module, blocks=tuple(blocks))
