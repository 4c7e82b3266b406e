"""Provider validation: OpenTofu's/Terraform's ``validateProviderConfigs``, diagnostic by diagnostic.

Rule for the whole file: the checks of spec §4.7 run depth first over the module tree, children
before their parent, and within a module in the code order of ``provider_validation.go``
(numbered 1–13 below); OpenTofu's instance-key checks (§4.8) are items 5–6. Severity and summary
are copied from the engines; where the two word a summary differently it comes from
``Dialect.word`` (``flatten/lang/dialect.py``). Each diagnostic carries the module path whose file its range
points into. Maps that Go iterates in random order are iterated in declaration order here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from flatten.lang.diagnostics import Diagnostic, Diagnostics
from flatten.lang.model import Expr, Range, module_address
from flatten.lang.options import Dialect, Options
from flatten.stages.decode import value_traversals
from flatten.stages.graph import ModuleGraph, ModuleNode

from .addresses import ConfigRef, Naming, Provider, implied_local_name, valid_local_name
from .declarations import CallDecl, ModuleDecl, PassedEntry

__all__ = ["for_each_identical", "validate_provider_configs"]


@dataclass(frozen=True, slots=True)
class _Context:
    naming: Naming
    dialect: Dialect
    resolved: bool  # False: the tree had load errors, so provider types were never resolved


def validate_provider_configs(
    graph: ModuleGraph,
    decls: Mapping[tuple[str, ...], ModuleDecl],
    *,
    options: Options,
    resolved: bool = True,
) -> Diagnostics:
    """Return every provider-validation diagnostic of the tree, children first.

    ``resolved=False`` is Terraform's validation of a tree whose child modules had load errors:
    ``BuildConfig`` then skips ``resolveProviderTypes`` but still validates, so every passed
    configuration is typed by its bare name (docs/providers.md, "Load errors and provider
    types"). Never raises; malformed declarations were already reported by the decoder and are
    skipped.
    """
    ctx = _Context(Naming(options.dialect), options.dialect, resolved)
    return _validate(graph, graph.root, decls, None, None, {}, ctx)


def _known_types(decl: ModuleDecl) -> dict[str, Provider]:
    """The ``providers`` map ``resolveProviderTypes`` builds for a module: its required_providers,
    then ``NewDefaultProvider`` for each provider block name not listed there."""
    known = {req.name: req.provider for req in decl.requirements}
    for block in decl.blocks:
        known.setdefault(block.name, decl.naming.default(block.name))
    return known


def _in_child_types(by_child: Mapping[str, Mapping[str, Provider]]) -> dict[str, Provider]:
    """The type Terraform gives the child side of the ``providers`` items of a module's calls.

    ``resolveProviderTypes`` lets *every* child of a module write its types into *all* of that
    module's calls ("fill in parent module calls too"), so one child's declaration types the
    items of calls that are not its own, and the child visited last wins, the called module
    included. Go visits ``Config.Children`` in map order: for at most 8 calls (one bucket) that
    is the insertion order, call names sorted, rotated to a random start, and the unrotated
    order is the most likely one (probability (9 - n)/8 for n calls; docs/providers.md). So the
    children go in call-name order, and Terraform's other outcomes are the rarer rotations.
    """
    out: dict[str, Provider] = {}
    for _, known in sorted(by_child.items()):
        out.update(known)
    return out


def _validate(
    graph: ModuleGraph,
    node: ModuleNode,
    decls: Mapping[tuple[str, ...], ModuleDecl],
    parent_call: CallDecl | None,
    no_config: tuple[Range, tuple[str, ...]] | None,
    in_child: Mapping[str, Provider],
    ctx: _Context,
) -> Diagnostics:
    diags = Diagnostics()
    decl = decls[node.path]
    # A module Terraform 1.15 left out of the configuration is not validated, nor the call to it.
    children = [c for c in graph.children(node.address) if c.address not in graph.dropped]
    by_child = {c.path[-1]: _known_types(decls[c.path]) for c in children} if ctx.resolved else {}
    types = _in_child_types(by_child)
    for child in children:
        call = next((c for c in decl.calls if c.name == child.path[-1]), None)
        if call is None:
            continue
        child_no_config = no_config
        if call.no_config_range is not None:
            child_no_config = (call.no_config_range, node.path)
        diags.extend(_validate(graph, child, decls, call, child_no_config, types, ctx))
    diags.extend(
        _check_module(
            decl, decls.get(node.path[:-1]) if node.path else None, parent_call, no_config, in_child, ctx
        )
    )
    return diags


def _q(text: str) -> str:
    """Go's ``%q``: a double-quoted string with Go escapes (JSON's agree for printable text)."""
    return json.dumps(text, ensure_ascii=False)


def _diag(error: bool, summary_: str, detail: str, rng: Range | None, module: tuple[str, ...]) -> Diagnostic:
    make = Diagnostic.error if error else Diagnostic.warning
    return make(summary_, detail, rng, module_address(module))


def _check_module(
    decl: ModuleDecl,
    parent: ModuleDecl | None,
    parent_call: CallDecl | None,
    no_config: tuple[Range, tuple[str, ...]] | None,
    in_child: Mapping[str, Provider],
    ctx: _Context,
) -> Diagnostics:
    out = Diagnostics()
    naming = ctx.naming
    path = decl.path
    caller_path = path[:-1]
    product = ctx.dialect.product

    configured: dict[str, Range] = {}
    empty_configs: dict[str, Range] = {}
    instanced: dict[str, Expr | None] = {}
    for block in decl.blocks:
        if block.empty:
            empty_configs.setdefault(block.key, block.range)
        else:
            configured.setdefault(block.key, block.range)
        instanced[block.key] = block.for_each
    local_names: dict[str, Provider] = {}
    config_aliases: dict[str, Provider] = {}

    # 1–2: duplicate requirements.
    seen_types: set[Provider] = set()
    for req in decl.requirements:
        if req.provider in seen_types:
            prev = ""
            for name, typ in local_names.items():
                if typ == req.provider:
                    prev = name
            out.append(
                _diag(
                    False,
                    "Duplicate required provider",
                    f"Provider {req.provider.for_display()} with the local name {_q(req.name)} was "
                    f"previously required as {_q(prev)}. A provider can only be required once within "
                    "required_providers.",
                    req.range,
                    path,
                )
            )
        elif naming.is_default(req.provider):
            implied = req.provider.type
            if req.name != implied and any(b.name == implied for b in decl.blocks):
                out.append(
                    _diag(
                        False,
                        "Duplicate required provider",
                        f"Provider {req.provider.for_display()} with the local name {_q(req.name)} was "
                        f"implicitly required via a configuration block as {_q(implied)}. The provider "
                        "configuration block name must match the name used in required_providers.",
                        req.range,
                        path,
                    )
                )
        seen_types.add(req.provider)
        local_names[req.name] = req.provider
        for alias in req.aliases:
            config_aliases[alias.compact] = req.provider

    # 3–4: implied local names of resources without a provider argument.
    modes = (
        ("managed", "data", "ephemeral")
        if ctx.dialect.allows("ephemeral_implied_providers")
        else ("managed", "data")
    )
    problems: dict[str, str | None] = {}  # by local name: most resources of a module share one
    for res in decl.resources:
        if res.mode not in modes or res.ref is not None:
            continue
        local = implied_local_name(res.type)
        if local in problems:
            problem = problems[local]
        else:
            problem = problems[local] = valid_local_name(local)
        if problem is not None:
            out.append(
                _diag(
                    True,
                    "Invalid provider local name",
                    f"{_q(local)} is an invalid implied provider local name: {problem}",
                    res.range,
                    path,
                )
            )
            continue
        if local in local_names:
            continue
        implied_fqn = naming.implied(local)
        for prev, addr in local_names.items():
            if addr == implied_fqn:
                out.append(
                    _diag(
                        False,
                        "Duplicate required provider",
                        f"Provider {_q(str(implied_fqn))} was implicitly required via resource "
                        f"{_q(res.address)}, but listed in required_providers as {_q(prev)}. Either the "
                        "local name in "
                        f"required_providers must match the resource name, or the {_q(prev)} provider must "
                        "be assigned within the resource block.",
                        res.range,
                        path,
                    )
                )

    passed_in: dict[str, PassedEntry] = {}
    if parent_call is not None:
        for entry in parent_call.passed:
            passed_in[entry.child.compact] = entry

    module_text = "the root module" if not path else module_address(path)
    parent_text = "the root module" if len(path) <= 1 else module_address(caller_path)

    # 5–6 (OpenTofu): instance keys on provider references.
    if ctx.dialect.allows("provider_instance_keys"):
        for call in decl.calls:
            for entry in call.passed:
                if entry.child.key is not None:
                    out.append(
                        _diag(
                            True,
                            "Invalid module provider configuration",
                            "Instance keys are not allowed on the left side of a provider configuration "
                            "assignment.",
                            entry.child_range,
                            path,
                        )
                    )
                pn = entry.parent.compact
                expr = instanced.get(pn)
                out.extend(
                    _instance_validation(
                        entry.parent, "module", expr is not None, pn in configured, entry.parent_range, path
                    )
                )
                if entry.parent.key is not None and call.native:
                    target = module_address((*path, call.name))
                    out.extend(_identical_warning("module", target, call.for_each, expr, path))
        for res in decl.resources:
            if res.ref is None or res.mode == "import":
                continue
            pn = res.ref.compact
            expr = instanced.get(pn)
            rng = res.ref_range or res.range
            out.extend(
                _instance_validation(res.ref, "resource", expr is not None, pn in configured, rng, path)
            )
            if res.ref.key is not None and res.mode == "managed" and res.native:
                target = f"{module_address(path)}.{res.address}" if path else res.address
                out.extend(_identical_warning("resource", target, res.for_each, expr, path))

    # 7: default configurations a module call passes on.
    for call in decl.calls:
        for entry in call.passed:
            if entry.parent.alias:
                continue
            name = entry.parent.name
            conf_ok = name in configured
            local_ok = name in local_names
            passed_ok = name in passed_in
            default = naming.default(name).for_display()
            if not conf_ok and not local_ok:
                out.append(
                    _diag(
                        False,
                        "Reference to undefined provider",
                        f"There is no explicit declaration for local provider name {_q(name)} in "
                        f"{module_text}, so {product} is assuming you mean to pass a configuration for "
                        "provider "
                        f"{_q(default)}.\n\nTo clarify your intent and silence this warning, add to "
                        # Terraform names the caller here, not the module it talks about.
                        f"{parent_text} a required_providers entry named {_q(name)} with source = "
                        f"{_q(default)}, or a different source address if appropriate.",
                        entry.parent_range,
                        path,
                    )
                )
                continue
            if path and parent_call is not None and not conf_ok and not passed_ok:
                out.append(
                    _diag(
                        False,
                        "Missing required provider configuration",
                        f"The configuration for {module_text} expects to inherit a configuration for "
                        f"provider {default} with local name {_q(name)}, but {parent_text} doesn't pass a "
                        f"configuration under that name.\n\nTo satisfy this requirement, add an entry for "
                        f'{_q(name)} to the "providers" argument in the module {_q(parent_call.name)} block.',
                        parent_call.range,
                        caller_path,
                    )
                )

    # 8: nothing else applies to the root module.
    if not path or parent_call is None:
        return out

    # 9: legacy modules under count / for_each / enabled / depends_on.
    if configured and no_config is not None:
        words = ctx.dialect.word("repetition_arguments")
        out.append(
            Diagnostic.error(
                ctx.dialect.word("module_incompatible_meta"),
                f"The module at {module_text} is a legacy module which contains its own local provider "
                f"configurations, and so calls to it may not use the {words} arguments.\n\nIf you also "
                f"control the module {_q(parent_call.source)}, consider updating this module to instead "
                "expect provider configurations to be passed by its caller.",
                no_config[0],
                module_address(no_config[1]),
            )
        )

    # 10: a configured block the caller also passes.
    for name in configured:
        if name in passed_in:
            out.append(
                _diag(
                    True,
                    "Cannot override provider configuration",
                    f"The configuration of {module_text} has its own local configuration for {name}, and so "
                    f"it cannot accept an overridden configuration provided by {parent_text}.",
                    passed_in[name].child_range,
                    caller_path,
                )
            )

    # 11: configuration_aliases neither configured nor passed.
    for name, provider in config_aliases.items():
        if name in configured or name in passed_in:
            continue
        out.append(
            _diag(
                True,
                "Missing required provider configuration",
                f"The child module requires an additional configuration for provider "
                f"{provider.for_display()}, with the local name {_q(name)}.\n\nRefer to the module's "
                "documentation to understand the intended purpose of this additional provider "
                f'configuration, and then add an entry for {name} in the "providers" meta-argument in '
                "the module block to choose which provider configuration the module should use for that "
                "purpose.",
                parent_call.range,
                caller_path,
            )
        )

    # 12: what is passed in must be declared and of the right type.
    for name, entry in passed_in.items():
        # InChild.providerType, else NewOfficialProvider; the module's own declarations then win.
        provider = in_child.get(entry.child.name) or naming.default(entry.child.name)
        is_local = name in local_names
        if is_local:
            provider = local_names[name]
        is_alias = name in config_aliases
        if is_alias:
            provider = config_aliases[name]
        is_empty = name in empty_configs
        if not (is_local or is_alias or is_empty):
            if naming.is_default(provider):
                out.append(
                    _diag(
                        False,
                        "Reference to undefined provider",
                        f"There is no explicit declaration for local provider name {_q(name)} in "
                        f"{module_text}, so {product} is assuming you mean to pass a configuration for "
                        f"{_q(provider.for_display())}.\n\nIf you also control the child module, add a "
                        f"required_providers entry named {_q(name)} with the source address "
                        f"{_q(provider.for_display())}.",
                        entry.child_range,
                        caller_path,
                    )
                )
            else:
                out.append(
                    _diag(
                        True,
                        "Reference to undefined provider",
                        f"The child module does not declare any provider requirement with the local name "
                        f"{_q(name)}.\n\nIf you also control the child module, you can add a "
                        f"required_providers entry named {_q(name)} with the source address "
                        f"{_q(provider.for_display())} to accept this provider configuration.",
                        entry.child_range,
                        caller_path,
                    )
                )
        # InParent.providerType (the caller's own types), else NewDefaultProvider.
        parent_ty = (
            _known_types(parent).get(entry.parent.name) if parent is not None and ctx.resolved else None
        ) or naming.default(entry.parent.name)
        if parent is not None:
            parent_req = parent.requirement(name)
            if parent_req is not None:
                parent_ty = parent_req.provider
        if provider != parent_ty:
            other = next((ln for ln, src in local_names.items() if src == parent_ty), "")
            if other:
                # What is passed is the parent's type; the child's local name stands for its own type.
                detail = (
                    f"The assigned configuration is for provider {_q(parent_ty.for_display())}, but local "
                    f"name {_q(entry.child.name)} in {parent_text} represents {_q(provider.for_display())}."
                    "\n\nTo pass this configuration to the child module, use the local name "
                    f"{_q(other)} instead."
                )
                rng = entry.child_range
            else:
                detail = (
                    f"The local name {_q(entry.parent.compact)} in {parent_text} represents provider "
                    f"{_q(parent_ty.for_display())}, but {_q(entry.child.compact)} in {module_text} "
                    f"represents {_q(provider.for_display())}.\n\nEach provider has its own distinct "
                    "configuration schema and provider types, so this module's "
                    f"{_q(entry.child.compact)} can be assigned only a configuration for "
                    f"{provider.for_display()}, which is not required by "
                    f"{module_text}."
                )
                rng = entry.parent_range
            out.append(_diag(True, "Provider type mismatch", detail, rng, caller_path))

    # 13: deprecated empty (proxy) blocks, one warning per local name.
    groups: dict[str, list[tuple[str, Range]]] = {}
    for key, rng in empty_configs.items():
        groups.setdefault(key.split(".", 1)[0], []).append((key, rng))
    for local, items in groups.items():
        # Terraform looks the configuration's whole name up in the local names, so only an
        # unaliased block finds its required_providers source, and the first block it visits
        # (declaration order, Go's most likely map order) sets the suggestion's source.
        source = local_names.get(items[0][0], naming.default(local))
        aliases = sorted(k for k, _ in items if k != local)
        lines = [
            f'Earlier versions of {product} used empty provider blocks ("proxy provider configurations") '
            "for child modules to declare their need to be passed a provider configuration by their "
            "callers. That approach was ambiguous and is now deprecated.\n\nIf you control this module, "
            f"you can migrate to the new declaration syntax by removing all of the empty provider "
            f"{_q(local)} blocks and then adding or updating an entry like the following to the "
            f"required_providers block of {module_text}:",
            f"    {local} = {{",
            f'      source = "{source.for_display()}"',
        ]
        if aliases:
            lines.append("      configuration_aliases = [")
            lines.extend(f"        {k}," for k in sorted(k for k, _ in items))
            lines.append("      ]")
        lines.append("    }")
        first = sorted((r for _, r in items), key=str)[0]
        out.append(_diag(False, "Redundant empty provider block", "\n".join(lines), first, path))
    return out


def _instance_validation(
    ref: ConfigRef, kind: str, instanced: bool, has_config: bool, rng: Range, path: tuple[str, ...]
) -> Diagnostics:
    """OpenTofu's ``ProviderConfigRef.InstanceValidation`` (spec §4.8)."""
    out = Diagnostics()
    summary_ = f"Invalid {kind} provider configuration"
    if ref.key is not None:
        if not ref.alias:
            out.append(
                _diag(
                    True,
                    summary_,
                    f"An instance key can be used only with a provider configuration that has an alias; "
                    f"{ref} has none.",
                    rng,
                    path,
                )
            )
        elif not instanced:
            if not has_config:
                detail = (
                    f"This module doesn't declare a provider {_q(ref.name)} block with alias = "
                    f"{_q(ref.alias)}, which is required for use with for_each"
                )
            else:
                detail = (
                    f"The provider configuration {ref.compact} does not use for_each, so it has no "
                    f"instances and {ref} cannot select one. Remove the instance key."
                )
            out.append(_diag(True, summary_, detail, rng, path))
    elif instanced:
        out.append(
            _diag(
                True,
                summary_,
                f"The provider configuration {ref.compact} uses for_each, so this reference requires an "
                "instance key to select one of its instances. Passing a collection of provider "
                "instances into a child module is not allowed.",
                rng,
                path,
            )
        )
    return out


def _identical_warning(
    kind: str, target: str, source: Expr | None, instance: Expr | None, path: tuple[str, ...]
) -> Diagnostics:
    out = Diagnostics()
    if source is None or instance is None or not for_each_identical(source, instance):
        return out
    out.append(
        _diag(
            False,
            f"Provider configuration for_each matches {kind}",
            f"This provider configuration uses the same for_each expression as a {kind}, which means that "
            "subsequent removal of elements from this collection would cause a planning error.\n\n"
            "OpenTofu relies on a provider instance to destroy resource instances that are associated "
            "with it, and so the provider instance must outlive all of its resource instances by at least "
            "one plan/apply round. For removal of instances to succeed in future you must structure the "
            "configuration so that the provider block's for_each expression can produce a superset of the "
            "instances of the resources associated with the provider configuration. Refer to the OpenTofu "
            "documentation for specific suggestions.\n\nTo destroy this object before removing the provider "
            f"configuration, consider first performing a targeted destroy:\n    tofu apply -destroy "
            f"-target={target}",
            source.range,
            path,
        )
    )
    return out


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|\s+|.', re.DOTALL)


def _normal(value: object) -> str:
    """A canonical text for an expression value: whitespace and outer parentheses dropped."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{_normal(k)}:{_normal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_normal(v) for v in value) + "]"
    if not isinstance(value, str):
        return repr(value)
    text = value.strip()
    if not (text.startswith("${") and text.endswith("}") and text.count("${") == 1):
        return '"' + text + '"'
    tokens = [t for t in _TOKEN.findall(text[2:-1]) if not t.isspace()]
    joined = "".join(tokens)
    while joined.startswith("(") and joined.endswith(")") and _balanced(joined[1:-1]):
        joined = joined[1:-1]
    return joined


def _balanced(text: str) -> bool:
    depth = 0
    for t in _TOKEN.findall(text):
        if t == "(":
            depth += 1
        elif t == ")":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def for_each_identical(a: Expr, b: Expr) -> bool:
    """Return whether two native ``for_each`` expressions are the same non-constant expression.

    A best-effort structural comparison, as OpenTofu's ``providerIterationIdentical``: both must
    refer to something, and they must match token for token once outer parentheses are removed.
    """
    if not value_traversals(a.value) or not value_traversals(b.value):
        return False
    return _normal(a.value) == _normal(b.value)
