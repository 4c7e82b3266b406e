"""Every difference between Terraform and OpenTofu that flatten knows, each written once.

Code never compares dialects (``dialect is Dialect.OPENTOFU``); it asks this table:

* ``dialect.allows(feature)``: a language feature or rule that only one engine has
  (``FEATURES``), e.g. ``options.dialect.allows("language_block")``;
* ``dialect.word(key, **fields)``: a summary, name or phrase the engines word differently
  (``WORDING``), e.g. ``dialect.word("duplicate_backend")``; ``dialect.product`` is
  ``word("product")``;
* a value that differs (``VALUES``): file suffixes, shadowing, registry host, engine version.

A newcomer looking for "what does OpenTofu do differently" reads this file; a new difference is
one new row here and one query at the place that needs it. Every row says the Terraform value
first, then the OpenTofu value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Generic, TypeVar

__all__ = ["FEATURES", "VALUES", "WORDING", "Dialect", "Differs"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Differs(Generic[T]):
    """One difference: Terraform's value, OpenTofu's value."""

    terraform: T
    opentofu: T


# Language features and rules only one engine has (True: the engine has it).
FEATURES: Mapping[str, Differs[bool]] = MappingProxyType(
    {
        # Top-level blocks and nested blocks only one engine knows (spec §1).
        "language_block": Differs(False, True),  # language { edition, compatible_with }
        "actions": Differs(True, False),  # action blocks and lifecycle { action_trigger }
        "state_store": Differs(True, False),  # terraform { state_store "x" {} }
        "encryption": Differs(False, True),  # terraform { encryption {} }
        "output_type": Differs(True, False),  # output { type = ... }
        "enabled": Differs(False, True),  # lifecycle { enabled } on resources and module calls
        "lifecycle_destroy": Differs(False, True),  # lifecycle { destroy } on resources
        "provider_for_each": Differs(False, True),  # provider { for_each }, which needs an alias
        # OpenTofu evaluates backend/cloud arguments, module source/version and prevent_destroy
        # with a static context (templates and references work); Terraform reads literals (§7.4).
        "static_evaluation": Differs(False, True),
        # Per-file decode rules.
        "tofu_references": Differs(False, True),  # the `tofu` object, e.g. in destroy provisioners
        "reserved_ignore_nested_deprecations": Differs(True, False),  # a reserved variable name
        "deprecation_messages": Differs(False, True),  # `deprecated` must not be empty; overridable
        "ignored_default_attribute_warning": Differs(False, True),  # default attrs the type lacks
        "ephemeral_provisioners_rejected": Differs(False, True),  # connection/provisioner blocks
        "version_gate": Differs(False, True),  # compatible_with / .tofu required_version (spec §1)
        # A JSON string's template errors come from the validate walk, for what the override merge
        # kept (hcl/json/structure.go parses a template when it is evaluated; docs/syntax-errors.md);
        # OpenTofu's contract keeps them with the file's errors.
        "evaluated_json_templates": Differs(True, False),
        "terraform_releases": Differs(True, False),  # --terraform-version gates (lang/terraform_releases.py)
        # Override files (spec §3).
        "ephemeral_overrides": Differs(False, True),  # Terraform ignores ephemeral in overrides
        "removed_override_error": Differs(False, True),  # "Cannot override 'Removed' blocks"
        "required_version_per_file": Differs(False, True),  # an override adds a constraint
        # The module tree (spec §4.5) and provider checks (spec §4.7–§4.8).
        "import_in_child_error": Differs(False, True),  # "Invalid import configuration"
        "provider_instance_keys": Differs(False, True),  # for_each providers, keyed references
        "ephemeral_implied_providers": Differs(False, True),  # implied local names of ephemerals
        # Checks `validate` makes once it builds its graph (docs/providers.md, "Errors at graph
        # build"; docs/dialects.md, "Provider and graph checks"): both engines run the same
        # transformers, so only these details differ.
        # "Unsupported argument" in a module call: OpenTofu's validate reports it too, but its
        # conformance contract pins tree-escaping-block-module as valid (config loading only).
        "unsupported_module_inputs": Differs(True, False),
        "provider_graph_checks": Differs(True, True),  # transform_provider.go in both engines
        # OpenTofu's ProviderTransformer finds a root module's configuration_aliases as provider
        # nodes (context_validate_test.go, TestContext2Validate_providerAliasInRoot: no error).
        "root_configuration_aliases": Differs(False, True),
        # "missing provider" for a `providers` item naming no provider node of the caller
        # (addProxyProviders in both engines' transform_provider.go): the OpenTofu conformance
        # contract (point 5) pins provider-pass-inherited and override-module as valid, so the
        # OpenTofu dialect leaves it to `tofu validate`.
        "missing_provider_proxies": Differs(True, False),
        # The validate walk's reference checks (stages/references_check.py) for var, local,
        # resource and data references outside a module call's depends_on. OpenTofu's
        # evaluate_valid.go/evaluate.go report them exactly as Terraform's do, but the OpenTofu
        # conformance contract pins trees with such references as valid (accept-outputs-tf,
        # files-tofu-only, provider-with-depends-on), so the OpenTofu dialect checks module
        # references, module call arguments and input types only.
        "object_reference_checks": Differs(True, False),
        # Built-in functions: OpenTofu's table (lang/functions.py, internal/lang/functions.go)
        # instead of Terraform's release-gated one; "Unknown provider function" for
        # provider::NAME:: and namespaces is Terraform's wording (OpenTofu's is unchecked).
        "opentofu_functions": Differs(False, True),
        "provider_function_checks": Differs(True, False),
        "validate_after_child_errors": Differs(True, False),  # BuildConfig validates anyway (root errors too)
        # Module sources and versions (spec §5–§6): the go-getter each engine vendors.
        "getter_source_dir_subdir": Differs(False, True),  # SourceDirSubdir splits "//"
        "getter_strict_github_query": Differs(False, True),  # one "?" in a GitHub URL
        "getter_strict_gcs_host": Differs(False, True),  # ".googleapis.com/" and a cleaned path
        "v_prefixed_exact_versions": Differs(False, True),  # "= v1.2.3-beta" requests a prerelease
    }
)

# Summaries, names and phrases the engines word differently ({field}s filled by word()).
WORDING: Mapping[str, Differs[str]] = MappingProxyType(
    {
        "product": Differs("Terraform", "OpenTofu"),
        # Summaries (spec §2, §3, §4.7).
        "duplicate_backend": Differs(
            "Duplicate 'backend' configuration block", "Duplicate backend configuration"
        ),
        "duplicate_cloud": Differs(
            "Duplicate HCP Terraform configurations", "Duplicate cloud configurations"
        ),
        "backend_and_cloud": Differs(
            "Conflicting 'cloud' and 'backend' configuration blocks are present",
            "Both a backend and a cloud configuration are present",
        ),
        "duplicate_ephemeral": Differs(
            'Duplicate ephemeral "{type}" configuration',
            'Duplicate ephemeral resource "{type}" configuration',
        ),
        "module_incompatible_meta": Differs(
            "Module is incompatible with count, for_each, and depends_on",
            "Module is incompatible with count, for_each, enabled and depends_on",
        ),
        "ephemeral_lifecycle": Differs(
            "Invalid ephemeral resource lifecycle argument",
            "Invalid lifecycle configuration for ephemeral resource",
        ),
        # Phrases inside details.
        "repetition_arguments": Differs(
            "count, for_each, or depends_on", "count, for_each, enabled or depends_on"
        ),
        # The graph node of a child module's input variable, as "Cycle: ..." names it
        # (nodeExpandModuleVariable.Name in internal/terraform and internal/tofu).
        "graph_module_variable": Differs("var.{name} (expand)", "var.{name} (expand, input)"),
        "invalid_source_noun": Differs("address", "string"),  # "invalid source address: x"
        "ssh_url_kind": Differs("Git", "GitHub"),  # "error parsing Git SSH URL: ..."
    }
)


@dataclass(frozen=True, slots=True)
class _Values:
    """Values that differ, one field per difference."""

    # Configuration file suffixes in the order the engine tests them (the first match wins).
    config_suffixes: tuple[str, ...]
    # Suffixes of test and query files, which are never configuration.
    test_suffixes: tuple[str, ...]
    # A file with the first suffix hides the same base name with the second (X.tofu hides X.tf).
    shadows: tuple[tuple[str, str], ...]
    # The registry host of a registry address or provider source without one.
    registry_host: str
    # Provider type prefixes that are rejected as redundant ("terraform-aws").
    provider_type_prefixes: tuple[str, ...]
    # The engine version whose rules flatten follows (None: checked later by the engine itself).
    engine_version: tuple[int, ...] | None
    # Configuration files only the other engine reads: never copied into this engine's output
    # (stages/guards.py; docs/dialects.md, "Files of the other dialect").
    foreign_suffixes: tuple[str, ...]
    # The files an output gets where the module had .tofu files (the engines load it differently):
    # (name, required_version or None). They stop the other engine loudly (stages/guards.py).
    guard_files: tuple[tuple[str, str | None], ...]


VALUES: Mapping[str, _Values] = MappingProxyType(
    {
        "terraform": _Values(
            config_suffixes=(".tf", ".tf.json"),
            test_suffixes=(".tftest.hcl", ".tftest.json", ".tfquery.hcl", ".tfquery.json"),
            shadows=(),
            registry_host="registry.terraform.io",
            provider_type_prefixes=("terraform-",),
            engine_version=None,
            foreign_suffixes=(".tofu", ".tofu.json"),
            guard_files=(("flatten-terraform-only.tofu.json", "< 0.0.0"),),
        ),
        "opentofu": _Values(
            config_suffixes=(".tf", ".tf.json", ".tofu", ".tofu.json"),
            test_suffixes=(".tftest.hcl", ".tftest.json", ".tofutest.hcl", ".tofutest.json"),
            shadows=((".tofu", ".tf"), (".tofu.json", ".tf.json")),
            registry_host="registry.opentofu.org",
            provider_type_prefixes=("terraform-", "opentofu-"),
            # The OpenTofu version whose rules flatten follows (conformance README point 6).
            engine_version=(1, 13, 0),
            foreign_suffixes=(),
            # The .tofu.json one shadows the .tf.json one for OpenTofu 1.8-1.11, which still
            # checked required_version in .tf files (spec §1).
            guard_files=(
                ("flatten-opentofu-only.tf.json", "< 0.0.0"),
                ("flatten-opentofu-only.tofu.json", None),
            ),
        ),
    }
)


class Dialect(StrEnum):
    """Which engine's rules apply: file extensions, block types and diagnostic wording."""

    TERRAFORM = "terraform"
    OPENTOFU = "opentofu"

    def _pick(self, difference: Differs[T]) -> T:
        return difference.opentofu if self is Dialect.OPENTOFU else difference.terraform

    def allows(self, feature: str) -> bool:
        """Return whether this engine has ``feature`` (a key of ``FEATURES``; a typo is a KeyError)."""
        return self._pick(FEATURES[feature])

    def word(self, key: str, **fields: str) -> str:
        """Return ``key``'s wording in this engine (a key of ``WORDING``), with ``fields`` filled in."""
        return self._pick(WORDING[key]).format(**fields)

    @property
    def product(self) -> str:
        """The engine's name as its diagnostics spell it: "Terraform" or "OpenTofu"."""
        return self.word("product")

    @property
    def values(self) -> _Values:
        """The values that differ: file suffixes, registry host, engine version, ..."""
        return VALUES[self.value]
