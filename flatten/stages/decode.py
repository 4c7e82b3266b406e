"""Per-file decode checks: what OpenTofu's and Terraform's block decoders reject after the schema walk.

Rule for the whole file: the parsers (``hcl.py``, ``jsonsyntax.py``) already reported syntax and
schema problems, and ``merge.py`` reports everything that needs more than one file; this module
reports only what ``internal/configs``' ``decode*Block`` functions add for one file at a time:
names, meta-argument combinations, lifecycle rules, provisioners, provider blocks and references,
``required_providers`` entries, conditions and their references, and OpenTofu's ``language``
block (spec §1, §2 "Related per-file decode errors", §3.6, §4.1, §4.3–§4.4). It also holds the
OpenTofu version gate (``check_versions``, spec §1). Nothing here raises; every diagnostic has a
range.

Expressions are held as ``"${...}"`` templates of their source text (spec §7). The reference
checks scan that text with ``syntax/references.py`` (the scanner inline mode uses too): when it
cannot read an expression, which HCL would reject, they report nothing about it. Parser
diagnostics are recognised by their ``Extra`` code, never by their wording.

Summaries that the two dialects word differently, and every OpenTofu-only rule, come from the one
table of differences (``flatten/lang/dialect.py``): ``dialect.word(...)``, ``dialect.allows(...)``.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from types import MappingProxyType

from flatten.lang.blocks import BLOCKS
from flatten.lang.diagnostics import Code, Diagnostic, Diagnostics, Extra, Severity
from flatten.lang.diagnostics import missing_item_range as _missing_at
from flatten.lang.fields import Requirement
from flatten.lang.model import Attribute, Block, Body, JsonValue, ParsedFile, Pos, Range, json_strings
from flatten.lang.options import Dialect, Options
from flatten.lang.resource_addresses import AddressProblem, Endpoint, parse_endpoint
from flatten.lang.terraform_releases import accepts
from flatten.lang.types import Type
from flatten.lang.versions import parse_constraints
from flatten.syntax.evaluate import as_bool
from flatten.syntax.references import ExpressionError, Reference, expression_references, template_references
from flatten.syntax.traversal_string import traversal_problem

__all__ = [
    "ProviderAddressError",
    "check_file",
    "check_versions",
    "incompatible",
    "parse_provider_part",
    "parse_provider_source",
    "superseded",
    "valid_identifier",
    "value_traversals",
]

_FIRST_EDITION = "tofu2024"

_BAD_IDENTIFIER = (
    "A name must start with a letter or underscore and may contain only letters, digits, "
    "underscores, and dashes."
)

# Decode diagnostics that replace the parser's diagnostic of that code at the same range: OpenTofu's
# decoder reports these situations with its own summary (see ``superseded``).
_REPLACES_QUOTED = Extra(replaces=(Code.QUOTED_KEYWORD,))
_REPLACES_UNEXPECTED = Extra(replaces=(Code.UNEXPECTED_ARGUMENT,))
_REPLACES_INVALID = Extra(replaces=(Code.INVALID_EXPRESSION,))
_MISSING = Extra(Code.MISSING_ARGUMENT)  # in_file_order places a body's leftovers after it

_MANAGED_LIFECYCLE = ("create_before_destroy", "prevent_destroy", "ignore_changes", "replace_triggered_by")
_REMOVED_PROVISIONERS = ("chef", "habitat", "puppet", "salt-masterless")


# An ASCII identifier, as the rule below reads one (str.isalpha and isalnum are [A-Za-z] and
# [A-Za-z0-9] on ASCII): one match instead of a Python test per character, for every label.
_ASCII_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def valid_identifier(name: str) -> bool:
    """Return whether ``name`` is an HCL identifier (letter or ``_``, then letters, digits, ``_``, ``-``)."""
    if name.isascii():
        return _ASCII_IDENTIFIER.fullmatch(name) is not None
    if not name or not (name[0].isalpha() or name[0] == "_"):
        return False
    return all(c.isalnum() or c in "_-" for c in name[1:])


# ---------------------------------------------------------------------------------------------
# Provider names and source addresses (spec §4.1; regaddr ParseProviderPart / ParseProviderSource)


class ProviderAddressError(ValueError):
    """A provider name or source is invalid; ``summary`` is the diagnostic summary, ``str()`` the detail."""

    def __init__(self, summary: str, detail: str) -> None:
        super().__init__(detail)
        self.summary = summary


# A valid ASCII name part as the checks of ``parse_provider_part`` read one: letters, digits and
# single dashes, neither first nor last.
_ASCII_PART = re.compile(r"[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*")


def parse_provider_part(given: str) -> str:
    """Return the normalised form of one provider name part, or raise ``ProviderAddressError``.

    >>> parse_provider_part("AWS")
    'aws'
    """
    if given.isascii() and _ASCII_PART.fullmatch(given):
        return given.lower()  # the common case, valid: one match (the checks below explain the others)
    if not given:
        raise ProviderAddressError("Invalid provider name", "must have at least one character")
    if "." in given:
        raise ProviderAddressError("Invalid provider name", "dots are not allowed")
    if "--" in given:
        raise ProviderAddressError("Invalid provider name", "cannot use multiple consecutive dashes")
    ok = all((c.isascii() and (c.isalnum() or c == "-")) or (not c.isascii() and c.isalnum()) for c in given)
    if not ok or given.startswith("-") or given.endswith("-"):
        raise ProviderAddressError(
            "Invalid provider name",
            "must contain only letters, digits, and dashes, and may not use leading or trailing dashes",
        )
    return given.lower()


_HOST_LABEL = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")


def _parse_hostname(given: str) -> str:
    host, _, port = given.partition(":")
    host = host.lower()
    if port and not port.isdigit():
        raise ValueError(f"invalid port {port!r}")
    labels = host.split(".")
    if not host or not all(_HOST_LABEL.match(label) or not label.isascii() for label in labels):
        raise ValueError("hostname contains invalid characters")
    return host if port in ("", "443") else f"{host}:{port}"


def parse_provider_source(source: str, *, dialect: Dialect) -> tuple[str, str, str]:
    """Return ``(hostname, namespace, type)`` for a ``required_providers`` source string.

    Raises ``ProviderAddressError`` with OpenTofu's summary ("Invalid provider source string",
    "Invalid provider type", "Invalid provider namespace", "Invalid provider source hostname").

    >>> parse_provider_source("hashicorp/aws", dialect=Dialect.OPENTOFU)
    ('registry.opentofu.org', 'hashicorp', 'aws')
    """
    default_host = dialect.values.registry_host
    parts = source.split("/")
    if len(parts) > 3 or any(p == "" for p in parts):
        raise ProviderAddressError(
            "Invalid provider source string",
            'The "source" attribute must be in the format "[hostname/][namespace/]name"',
        )
    given_type = parts[-1]
    try:
        type_ = parse_provider_part(given_type)
    except ProviderAddressError as exc:
        raise ProviderAddressError(
            "Invalid provider type", f"Invalid provider type {given_type!r} in source {source!r}: {exc}"
        ) from None
    namespace, host = "hashicorp", default_host
    if len(parts) >= 2:
        given_ns = parts[-2]
        if given_ns == "-":
            namespace = "-"
        else:
            try:
                namespace = parse_provider_part(given_ns)
            except ProviderAddressError as exc:
                raise ProviderAddressError(
                    "Invalid provider namespace",
                    f"Invalid provider namespace {given_ns!r} in source {source!r}: {exc}",
                ) from None
    if len(parts) == 3:
        try:
            host = _parse_hostname(parts[0])
        except ValueError as exc:
            raise ProviderAddressError(
                "Invalid provider source hostname",
                f"Invalid provider source hostname {parts[0]!r} in source {source!r}: {exc}",
            ) from None
    if namespace == "-" and host != default_host:
        raise ProviderAddressError(
            "Invalid provider namespace",
            f'The legacy provider namespace "-" can be used only with hostname {default_host}.',
        )
    for prefix in dialect.values.provider_type_prefixes:
        if not type_.startswith(prefix):
            continue
        user_error = prefix + "provider-"
        if type_.startswith(user_error) and _is_part(type_[len(user_error) :]):
            suggested = f"{host}/{namespace}/{type_[len(user_error) :]}"
            raise ProviderAddressError(
                "Invalid provider type",
                f"Provider source {source!r} has a type with the prefix {user_error!r}, which isn't "
                "valid. Although that prefix is often used in the names of version control "
                "repositories for providers, provider source strings should not include it.\n\n"
                f"Did you mean {suggested!r}?",
            )
        raise ProviderAddressError(
            "Invalid provider type",
            f"Provider source {source!r} has a type with the prefix {prefix!r}, which isn't allowed "
            "because it would be redundant to name a provider with that prefix. If you are the "
            "author of this provider, rename it to not include the prefix.",
        )
    return host, namespace, type_


def _is_part(text: str) -> bool:
    try:
        parse_provider_part(text)
    except ProviderAddressError:
        return False
    return True


def _engine_version(dialect: Dialect) -> str:
    """The engine version whose rules flatten follows, as text (OpenTofu's; spec §1)."""
    version = dialect.values.engine_version
    assert version is not None, "only asked where the dialect has a version gate"
    return ".".join(str(n) for n in version)


# ---------------------------------------------------------------------------------------------
# References in expression text (hclsyntax's Expression.Variables(), ``syntax/references.py``)

Traversal = tuple[str, ...]  # root, then attribute names; index steps are "[]"


def _traversal(ref: Reference) -> Traversal:
    return (ref.root, *(key if isinstance(key, str) and kind == "attr" else "[]" for kind, key in ref.steps))


def _scan(text: str, *, template: bool) -> list[Traversal] | None:
    try:
        refs = template_references(text) if template else expression_references(text)
    except ExpressionError:
        return None
    return [_traversal(r) for r in refs]


def value_traversals(value: JsonValue) -> list[Traversal] | None:
    """Return the traversals an expression value refers to, or None when it cannot be read.

    >>> value_traversals("${[for k, v in var.m : k if v != null]}")
    [('var', 'm')]
    """
    out: list[Traversal] = []
    for text in json_strings(value, items_last_first=True):
        found = _scan(text, template=True)
        if found is None:
            return None
        out.extend(found)
    return out


def _blank(value: JsonValue) -> bool:
    return isinstance(value, str) and not value.strip()


def _has_interpolation(value: JsonValue) -> bool:
    return isinstance(value, str) and ("${" in value.replace("$${", "") or "%{" in value.replace("%%{", ""))


def _source_item(text: str) -> str:
    """An EXPR_SOURCE_LIST item as expression source (a JSON ``"${x}"`` item holds ``x``)."""
    stripped = text.strip()
    if stripped.startswith("${") and stripped.endswith("}") and stripped.count("${") == 1:
        return stripped[2:-1]
    return stripped


# ---------------------------------------------------------------------------------------------
# The checker


def _arguments(body: Body) -> dict[str, Attribute]:
    """Return ``body``'s arguments by name, the last of each name (what ``Body.attribute`` answers):
    one pass over the items for a check that reads several arguments of a body."""
    found: dict[str, Attribute] = {}
    for item in body.items:
        if isinstance(item, Attribute):
            found[item.name] = item
    return found


_RESOURCE_NAMES = MappingProxyType(
    {
        "resource": ("Invalid resource type name", "Invalid resource name"),
        "data": ("Invalid data source name", "Invalid data resource name"),
        "ephemeral": ("Invalid ephemeral resource type name", "Invalid ephemeral resource name"),
    }
)


def missing_item_range(block: Block) -> Range:
    """HCL's ``MissingItemRange`` of a block's body (lang/diagnostics.py), the block's own range
    for a body read without one."""
    rng = block.body.range
    return _missing_at(rng) if rng is not None else block.range


def _within(rng: Range, text: str, part: AddressProblem) -> Range:
    """The range of ``text[part.start:part.end]`` where ``rng`` holds ``text`` as written (on one
    line, no spaces); the whole range otherwise."""
    if rng.start.line != rng.end.line or rng.end.column - rng.start.column != len(text):
        return rng
    return Range(
        rng.filename,
        Pos(rng.start.line, rng.start.column + part.start, rng.start.byte + part.start),
        Pos(rng.start.line, rng.start.column + part.end, rng.start.byte + part.end),
    )


def range_within(inner: Range, outer: Range | None) -> bool:
    """Whether ``inner`` lies inside ``outer`` (same file, by bytes)."""
    return (
        outer is not None
        and inner.filename == outer.filename
        and outer.start.byte <= inner.start.byte
        and inner.end.byte <= outer.end.byte
    )


class _Checker:
    def __init__(self, file: ParsedFile, options: Options, parse_diags: Sequence[Diagnostic]) -> None:
        self.file = file
        self.options = options
        self.dialect = options.dialect
        self.product = options.dialect.product
        self.diags = Diagnostics()
        self.parse_diags = parse_diags
        self.quoted = {str(d.range) for d in parse_diags if d.code is Code.QUOTED_KEYWORD}
        self.allows_enabled = options.dialect.allows("enabled")  # asked for every resource

    def error(self, summary: str, detail: str, rng: Range, *, extra: Extra | None = None) -> None:
        self.diags.error(summary, detail, rng, extra=extra)

    def warning(self, summary: str, detail: str, rng: Range) -> None:
        self.diags.warning(summary, detail, rng)

    def label_range(self, block: Block, index: int) -> Range:
        return block.label_ranges[index] if index < len(block.label_ranges) else block.range

    def reserved_block(self, block: Block, kind: str) -> None:
        self.error(
            f"Reserved block type name in {kind} block",
            f'The block type name "{block.type}" is reserved for use by {self.product} in a future version.',
            block.range,
        )

    def duplicate_escaping(self, blocks: Iterable[Block], kind: str) -> None:
        first: Block | None = None
        for block in blocks:
            if block.type != "_":
                continue
            if first is None:
                first = block
                continue
            self.error(
                "Duplicate escaping block",
                'The special block type "_" can be used to force particular arguments to be interpreted '
                f"as {kind}-specific rather than as meta-arguments, but each {kind} block can have only "
                f"one such block. The first escaping block was at {first.range}.",
                block.range,
            )

    def run(self) -> Diagnostics:
        for block in self.file.body.blocks:
            handler = _CHECKS.get(block.type)  # the check BLOCKS names for this type (lang/blocks.py)
            if handler is not None:
                handler(self, block)
        return self.diags

    # -- top-level blocks --------------------------------------------------------------------
    def block_required_providers(self, block: Block) -> None:
        self.error(
            "Invalid required_providers block",
            'A "required_providers" block is not allowed in the top-level of a module. Did you mean '
            'to place it inside a "terraform" block?',
            block.range,
        )

    def block_variable(self, block: Block) -> None:
        if not block.labels:
            return
        name = block.labels[0]
        rng = self.label_range(block, 0)
        if not valid_identifier(name):
            self.error("Invalid variable name", _BAD_IDENTIFIER, rng)
        reserved = ["source", "version", "providers", "count", "for_each", "depends_on", "_", "lifecycle"]
        reserved += ["locals", "provider"]
        if self.dialect.allows("reserved_ignore_nested_deprecations"):
            reserved.append("ignore_nested_deprecations")
        if name in reserved:
            self.error(
                "Invalid variable name",
                f'The variable name "{name}" is reserved due to its special meaning inside module blocks.',
                rng,
            )
        body = block.body
        arguments = _arguments(body)
        for arg in ("sensitive", "nullable", "ephemeral", "const"):
            attr = arguments.get(arg)
            if attr is not None:
                self.bool_argument(attr)
        deprecated = arguments.get("deprecated")
        if (
            self.dialect.allows("deprecation_messages")
            and deprecated is not None
            and _blank(deprecated.value)
        ):
            self.error(
                "Invalid `deprecated` value",
                'The "deprecated" argument must not be empty, and should provide instructions on how '
                "to migrate away from usage of this deprecated variable.",
                rng,
            )
        if self.dialect.allows("ignored_default_attribute_warning"):
            self.unused_default_attributes(body)
        for nested in body.blocks_of("validation"):
            self.validation(nested, name)

    def bool_argument(self, attr: Attribute) -> None:
        if _has_interpolation(attr.value) or as_bool(attr.value) is not None:
            return
        self.error(
            "Unsuitable value type",
            f'Unsuitable value: a bool is required. Set "{attr.name}" to true or false.',
            attr.expr.range,
        )

    def unused_default_attributes(self, body: Body) -> None:
        type_attr, default = body.attribute("type"), body.attribute("default")
        if type_attr is None or default is None or not isinstance(type_attr.value, str):
            return
        from flatten.lang.types import ConversionError, TypeExprError, apply_defaults, convert, parse_type

        try:
            ty = parse_type(type_attr.value)
            if default.value is not None:
                convert(apply_defaults(default.value, ty), ty)
        except (TypeExprError, ConversionError):
            return  # merge.py reports an invalid type or default
        for path in _ignored_attributes(default.value, ty, ""):
            self.warning(
                "Object attribute is ignored",
                f"The object type for this variable's default value does not include the attribute "
                f"{path}, so it will be ignored. Remove it from the default value, or add it to the "
                "type constraint.",
                default.expr.range,
            )

    def validation(self, block: Block, var_name: str) -> None:
        if self.file.is_override:
            return
        self.required_arguments(block, ("condition", "error_message"))
        condition = block.body.attribute("condition")
        if condition is None:
            return
        refs = value_traversals(condition.value)
        if refs is None:
            return
        if not refs:
            self.error(
                "Invalid validation expression",
                "The condition expression must refer to at least one object from elsewhere in the "
                "configuration, or else its result would not be checking anything.",
                condition.expr.range,
            )
        # The condition must refer to the variable itself, whatever else it refers to (terraform
        # internal/configs, ``checkVariableValidationBlock``; 1.11 and 1.15 alike, OpenTofu too).
        own = any(len(r) >= 2 and r[0] == "var" and r[1] == var_name for r in refs)
        if not own:
            self.error(
                "Invalid variable validation condition",
                f'The condition for variable "{var_name}" must refer to var.{var_name} in order to test '
                "incoming values.",
                condition.expr.range,
            )

    def required_arguments(self, block: Block, names: Iterable[str]) -> None:
        for name in names:
            if block.body.attribute(name) is None:
                self.error(
                    "Missing required argument",
                    f'The argument "{name}" is required, but no definition was found.',
                    missing_item_range(block),
                    extra=_MISSING,
                )

    def condition_rule(self, block: Block, owner: tuple[str, ...] | None) -> None:
        """A precondition, postcondition or assert block (``decodeCheckRuleBlock``)."""
        if self.file.is_override:
            return  # merge.py reports "Can't override ... blocks"
        self.required_arguments(block, ("condition", "error_message"))
        condition = block.body.attribute("condition")
        if condition is not None:
            refs = value_traversals(condition.value)
            if refs is not None and not refs:
                self.error(
                    f"Invalid {block.type} expression",
                    "The condition expression must refer to at least one object from elsewhere in the "
                    "configuration, or else its result would not be checking anything.",
                    condition.expr.range,
                )
        if owner is None:
            return
        for arg in ("condition", "error_message"):
            attr = block.body.attribute(arg)
            if attr is None:
                continue
            refs = value_traversals(attr.value) or []
            if any(r[: len(owner)] == owner for r in refs):
                self.error(
                    f"Invalid reference in {block.type}",
                    f"Configuration for {'.'.join(owner)} may not refer to itself.",
                    attr.expr.range,
                )

    def block_output(self, block: Block) -> None:
        if block.labels and not valid_identifier(block.labels[0]):
            self.error("Invalid output name", _BAD_IDENTIFIER, self.label_range(block, 0))
        body = block.body
        if not self.file.is_override:
            self.required_arguments(block, ("value",))
        for arg in ("sensitive", "ephemeral"):
            attr = body.attribute(arg)
            if attr is not None:
                self.bool_argument(attr)
        deprecated = body.attribute("deprecated")
        if (
            self.dialect.allows("deprecation_messages")
            and deprecated is not None
            and _blank(deprecated.value)
        ):
            self.error(
                "Invalid `deprecated` attribute",
                'The "deprecated" argument must not be empty, and should provide instructions on how '
                "to migrate away from usage of this deprecated output value.",
                deprecated.expr.range,
            )
        for nested in body.blocks:
            if nested.type == "precondition":
                self.condition_rule(nested, None)
            elif nested.type == "postcondition":
                self.error(
                    "Postconditions are not allowed",
                    "Output values can only have preconditions, not postconditions.",
                    nested.range,
                )

    def block_locals(self, block: Block) -> None:
        for attr in block.body.attributes:
            if not valid_identifier(attr.name):
                self.error("Invalid local value name", _BAD_IDENTIFIER, attr.name_range)

    def block_check(self, block: Block) -> None:
        if block.labels and not valid_identifier(block.labels[0]):
            self.error("Invalid check block name", _BAD_IDENTIFIER, self.label_range(block, 0))
        if self.file.is_override:
            return
        asserts = 0
        seen_data: Block | None = None
        for nested in block.body.blocks:
            if nested.type == "assert":
                asserts += 1
                self.condition_rule(nested, None)
            elif nested.type == "data":
                if seen_data is not None:
                    self.error(
                        "Multiple data resource blocks",
                        f"This check block already has a data resource defined at {seen_data.range}.",
                        nested.range,
                    )
                    continue
                seen_data = nested
                self.resource(nested, "data", nested_in_check=True)
        if asserts == 0:
            self.error("Zero assert blocks", "Check blocks must have at least one assert block.", block.range)

    def block_provider(self, block: Block) -> None:
        if not block.labels:
            return
        if not self.provider_local_name(block.labels[0], block.range):
            return
        body = block.body
        alias = body.attribute("alias")
        if (
            alias is not None
            and isinstance(alias.value, str)
            and not _has_interpolation(alias.value)
            and not valid_identifier(alias.value)
        ):
            self.error(
                "Invalid provider configuration alias",
                f"An alias must be a valid name. {_BAD_IDENTIFIER}",
                alias.expr.range,
            )
        version = body.attribute("version")
        if version is not None:
            self.warning(
                "Version constraints inside provider configuration blocks are deprecated",
                f"{self.product} 0.13 and earlier allowed provider version constraints inside the provider "
                f"configuration block, but that is now deprecated and will be removed in a future version "
                f"of {self.product}. To silence this warning, move the provider version constraint into "
                "the required_providers block.",
                version.expr.range,
            )
            self.version_constraint(version)
        reserved = ["count", "depends_on", "source"] + (
            [] if self.dialect.allows("provider_for_each") else ["for_each"]
        )
        for attr in body.attributes:
            if attr.name in reserved:
                self.error(
                    "Reserved argument name in provider block",
                    f'The provider argument name "{attr.name}" is reserved for use by {self.product} in a '
                    "future version.",
                    attr.name_range,
                )
        for_each = body.attribute("for_each")
        if (
            self.dialect.allows("provider_for_each")
            and for_each is not None
            and alias is None
            and not self.file.is_override
        ):
            self.error(
                'Alias required when using "for_each"',
                'The "for_each" argument in a provider block requires an "alias" argument, because '
                "provider instances created with for_each are always referred to by alias.",
                for_each.name_range,
            )
        for nested in body.blocks:
            if nested.type in ("lifecycle", "locals"):
                self.reserved_block(nested, "provider")
        self.duplicate_escaping(body.blocks, "provider")

    def provider_local_name(self, name: str, rng: Range) -> bool:
        """Report a provider local name that is invalid or not normalised; return whether it is fine."""
        try:
            normalized = parse_provider_part(name)
        except ProviderAddressError as exc:
            self.error("Invalid provider local name", f"{name} is an invalid provider local name: {exc}", rng)
            return False
        if normalized != name:
            self.error(
                "Invalid provider local name",
                f'Provider names must be normalized. Replace "{name}" with "{normalized}" to fix this error.',
                rng,
            )
            return False
        return True

    def version_constraint(self, attr: Attribute) -> None:
        value = attr.value
        if not isinstance(value, str) or _has_interpolation(value):
            return
        try:
            parse_constraints(value)
        except ValueError:
            self.error(
                "Invalid version constraint",
                "This string does not use correct version constraint syntax.",
                attr.expr.range,
            )

    def provider_reference(self, text: JsonValue, rng: Range) -> None:
        """A ``provider`` argument or ``providers`` map entry: its local name must be normalised."""
        if not isinstance(text, str) or not text:
            return
        if self.dialect.allows("terraform_releases") and traversal_problem(text) is not None:
            return  # no traversal: the reader reported it (syntax/jsonsyntax.py, hcl.py)
        name = re.split(r"[.\[]", text, maxsplit=1)[0].strip()
        if name:
            self.provider_local_name(name, rng)

    def block_terraform(self, block: Block) -> None:
        for nested in block.body.blocks:
            if nested.type == "required_providers":
                for attr in nested.body.attributes:
                    self.required_provider(attr)
            elif nested.type == "provider_meta" and nested.labels:
                self.provider_local_name(nested.labels[0], nested.range)

    def required_provider(self, attr: Attribute) -> None:
        value = attr.value
        rng = attr.expr.range
        if not isinstance(value, dict):
            if isinstance(value, str | bool | int) or value is None:
                if isinstance(value, str) and not _has_interpolation(value):
                    try:
                        parse_constraints(value)
                    except ValueError:
                        self.error(
                            "Invalid version constraint",
                            "This string does not use correct version constraint syntax.",
                            rng,
                        )
                try:
                    parse_provider_part(attr.name)
                except ProviderAddressError as exc:
                    self.error("Invalid provider name", str(exc), rng)
            return
        if not self.provider_local_name(attr.name, rng):
            return
        # The items in order, each error at the item's value (provider_requirements.go:
        # ``kv.Value.Range()``); a value without the readers' item ranges (none is) falls back
        # to the whole object.
        ranges = value.value_ranges if isinstance(value, Requirement) else {}
        for key, item in value.items():
            self.requirement_item(attr.name, key, item, ranges.get(key, rng))

    def requirement_item(self, name: str, key: str, item: JsonValue, at: Range) -> None:
        """One ``source``, ``version`` or ``configuration_aliases`` item of a requirement."""
        if key == "version":
            if not isinstance(item, str):
                self.error("Invalid version constraint", "Version must be specified as a string.", at)
            elif not _has_interpolation(item):
                try:
                    parse_constraints(item)
                except ValueError:
                    self.error(
                        "Invalid version constraint",
                        "This string does not use correct version constraint syntax.",
                        at,
                    )
        elif key == "source":
            if not isinstance(item, str):
                self.error("Invalid source", "Source must be specified as a string.", at)
            else:
                try:
                    parse_provider_source(item, dialect=self.options.dialect)
                except ProviderAddressError as exc:
                    self.error(exc.summary, str(exc), at)
        elif key == "configuration_aliases" and isinstance(item, list):
            for alias in item:
                if not isinstance(alias, str) or traversal_problem(alias) is not None:
                    continue  # no traversal: the reader reported it
                parts = alias.split(".")
                if len(parts) != 2 or not all(valid_identifier(p) for p in parts):
                    self.error(
                        "Invalid configuration_aliases value",
                        "Configuration aliases can only contain references to local provider configuration "
                        "names in the format of provider.alias",
                        at,
                    )
                elif parts[0] != name:
                    self.error(
                        "Invalid configuration_aliases value",
                        "Configuration aliases must be prefixed with the provider name. "
                        f'Expected "{name}", but found "{parts[0]}".',
                        at,
                    )

    def block_language(self, block: Block) -> None:
        if not self.dialect.allows("language_block") or self.file.is_override:
            return  # merge.py reports "Language selections in override file"
        edition = block.body.attribute("edition")
        if edition is not None:
            self.edition(edition)
        experiments = block.body.attribute("experiments")
        if experiments is not None and isinstance(experiments.value, list):
            for item in experiments.value:
                if isinstance(item, str):
                    self.error(
                        "Unknown experiment keyword",
                        f'There is no current experiment with the keyword "{item}".',
                        experiments.expr.range,
                    )
        seen: Block | None = None
        for nested in block.body.blocks_of("compatible_with"):
            constraint = nested.body.attribute("opentofu")
            if constraint is None:
                continue
            if seen is not None:
                self.error(
                    "Duplicate compatible_with block",
                    "Each language block may have at most one compatible_with block referring to OpenTofu. "
                    f"The OpenTofu version constraint was already declared at {seen.range}.",
                    block.range,
                )
                continue
            seen = nested
            if not isinstance(constraint.value, str):
                continue
            try:
                reqs = parse_constraints(constraint.value)
            except ValueError:
                continue  # check_versions reports it
            if reqs.has_prerelease:
                continue
            if reqs.allows("1.11.0"):
                self.warning(
                    "Ineffective version constraint",
                    "The compatible_with block was added in OpenTofu v1.12.0, so any constraint specified "
                    'this way should exclude earlier versions of OpenTofu, such as by including ">= 1.12.0".'
                    "\n\nIf your module must be compatible with earlier versions of OpenTofu, use the "
                    'required_version argument in a "terraform" block in a file named with the .tofu '
                    "suffix, which is an older way to specify OpenTofu version constraints.",
                    constraint.expr.range,
                )

    def edition(self, attr: Attribute) -> None:
        version = _engine_version(self.dialect)
        kw = attr.value if isinstance(attr.value, str) else ""
        quoted = str(attr.expr.range) in self.quoted and self.file.syntax == "native"
        if not kw or quoted:
            self.error(
                "Invalid language edition",
                f'The "edition" argument expects a bare language edition keyword. OpenTofu {version} '
                f"supports only language edition {_FIRST_EDITION}, which is the default.",
                attr.expr.range,
                extra=_REPLACES_QUOTED,
            )
        elif kw.startswith("TF"):
            self.error(
                "Unsupported language edition",
                f'OpenTofu v{version} does not support language edition "{kw}". This module may be '
                "intended for use with other software.",
                attr.expr.range,
            )
        elif kw != _FIRST_EDITION:
            rel = "newer" if kw > _FIRST_EDITION else "different"
            self.error(
                "Unsupported language edition",
                f"OpenTofu v{version} only supports language edition {_FIRST_EDITION}. This module requires "
                f"a {rel} version of OpenTofu CLI.",
                attr.expr.range,
            )

    def block_import(self, block: Block) -> None:
        """``decodeImportBlock`` (internal/configs/import.go), in its order: the body's content
        (HCL's "Missing required argument": "to" in every release, "id" too before 1.12, in the
        schema's order; an override file's schema requires nothing), the provider argument, then
        from 1.12 the id/identity rule, which is not reached when "to" is set and the content had
        errors (``decodeImportBlock`` returns there)."""
        body = block.body
        terraform = self.options.dialect.allows("terraform_releases")
        identity = not terraform or accepts(self.options.terraform_version, "import.identity")
        before = len(self.diags.errors)
        if not self.file.is_override:
            self.required_arguments(block, ("to",) if identity else ("id", "to"))
        provider = body.attribute("provider")
        to = body.attribute("to")
        if to is not None and self.content_failed(block, before) and terraform:
            return
        if to is not None and terraform:
            # parseConfigResourceFromExpression: "to" must name a managed resource (instance); a
            # failed address leaves the mode unset, so it is "Invalid import address" too, at the
            # whole argument.
            target = self.address(to)
            if target is not None and (target.kind == "module" or target.problem is not None or target.data):
                whole = Range(to.name_range.filename, to.name_range.start, to.expr.range.end)
                if target.kind == "module":
                    self.error(
                        "Invalid address",
                        "A resource instance address is required here. The module path must be followed "
                        "by a resource instance specification.",
                        to.expr.range,
                    )
                self.error("Invalid import address", "Only managed resources can be imported.", whole)
        if provider is not None:
            if to is not None and isinstance(to.value, str) and to.value.startswith("module."):
                self.error(
                    "Invalid import provider argument",
                    "The provider argument can only be specified in import blocks that will generate "
                    "configuration.\n\nUse the providers argument within the module block to configure "
                    "providers for all resources within a module, including imported resources.",
                    provider.name_range,
                )
            self.provider_reference(provider.value, provider.expr.range)
        if self.file.is_override or not identity:
            return
        given = [name for name in ("id", "identity") if body.attribute(name) is not None]
        if not terraform:
            if not given:
                self.error(
                    "Missing required import argument",
                    "One of 'id' or 'identity' must be specified in an import block to identify the "
                    "resource instance to import.",
                    block.range,
                )
        elif len(given) != 1:
            detail = (
                "At least one of 'id' or 'identity' must be specified."
                if not given
                else "Only one of 'id' or 'identity' can be specified."
            )
            self.error("Invalid import block", detail, block.range)

    def block_moved(self, block: Block) -> None:
        """``decodeMovedBlock`` (internal/configs/moved.go): both addresses are required, each is
        read as a move endpoint (lang/resource_addresses.py), and when nothing failed both must
        name resources or both modules (``MightUnifyWith``). An override file's moved block is
        merge.py's error ("Cannot override 'moved' blocks")."""
        if self.file.is_override:
            return
        before = len(self.diags.errors)
        self.required_arguments(block, ("from", "to"))
        ends = [self.address(block.body.attribute(name)) for name in ("from", "to")]
        if self.content_failed(block, before) or ends[0] is None or ends[1] is None:
            return
        if ends[0].kind != ends[1].kind:
            self.error(
                'Invalid "moved" addresses',
                'The "from" and "to" addresses must either both refer to resources or both refer to modules.',
                block.range,
            )

    def content_failed(self, block: Block, before: int) -> bool:
        """Whether decoding ``block`` had an error so far: the decoder's since ``before`` (the
        error count when it started) or an argument the parser found no place for in its body."""
        body = block.body.range
        return len(self.diags.errors) > before or any(
            d.code is Code.UNEXPECTED_ARGUMENT and d.range is not None and range_within(d.range, body)
            for d in self.parse_diags
        )

    def address(self, attr: Attribute | None) -> Endpoint | None:
        """The address ``attr`` names (``hcl.AbsTraversalForExpr``, then addrs' parser), with its
        "Invalid address" reported; None when it is no single static traversal or its shape is
        not modelled (lang/resource_addresses.py)."""
        if attr is None or not isinstance(attr.value, str):
            return None
        # The parser keeps a reference argument as the traversal's text (as ``depends_on``'s
        # items); a quoted one is its own warning (not read here), a template no traversal.
        text, rng = attr.value, attr.expr.range
        if "${" in text or any(
            d.summary == "Quoted references are deprecated" and d.range == rng for d in self.parse_diags
        ):
            return None
        try:
            refs = expression_references(text)
        except ExpressionError:
            return None
        if len(refs) != 1 or refs[0].start != 0 or refs[0].end != len(text):
            return None
        endpoint = parse_endpoint(refs[0])
        if endpoint is not None and endpoint.problem is not None:
            at = _within(rng, text, endpoint.problem)
            self.error("Invalid address", endpoint.problem.detail, at)
        return endpoint

    def block_removed(self, block: Block) -> None:
        # removedBlockSchema (internal/configs/removed.go): "from" is required.
        if not self.file.is_override:
            self.required_arguments(block, ("from",))

    def block_module(self, block: Block) -> None:
        body = block.body
        enabled = None
        for nested in body.blocks_of("lifecycle"):
            if self.dialect.allows("enabled"):
                enabled = nested.body.attribute("enabled") or enabled
        self.repetition(block, enabled)
        providers = body.attribute("providers")
        if providers is not None and isinstance(providers.value, dict):
            for key, val in providers.value.items():
                self.provider_reference(key, providers.expr.range)
                self.provider_reference(val, providers.expr.range)
        reserved = (
            ("locals", "provider") if self.dialect.allows("enabled") else ("locals", "provider", "lifecycle")
        )
        for nested in body.blocks:
            if nested.type in reserved:
                self.reserved_block(nested, "module")
        self.duplicate_escaping(body.blocks, "module")

    def repetition(self, block: Block, enabled: Attribute | None) -> None:
        """``count``, ``enabled`` and ``for_each`` are mutually exclusive (spec §2)."""
        self.repetition_of(block.body.attribute("count"), enabled, block.body.attribute("for_each"))

    def repetition_of(
        self, count: Attribute | None, enabled: Attribute | None, for_each: Attribute | None
    ) -> None:
        """``repetition`` for a block whose ``count`` and ``for_each`` arguments are known."""
        if self.file.is_override:
            return  # merge.py judges the merged result ("Override leaves both count and for_each set")
        present = [a for a in (count, enabled, for_each) if a is not None]
        if len(present) < 2:
            return
        if self.dialect.allows("enabled"):
            names = [f'"{a.name}"' for a in present]
            joined = (
                f"{names[0]} and {names[1]}" if len(names) == 2 else f"{names[0]}, {names[1]}, and {names[2]}"
            )
            summary = f"Invalid combination of {joined}"
            detail = (
                f"The {joined} meta-arguments are mutually-exclusive, only one should be used to be explicit "
                "about the number of instances to be created."
            )
        elif count is not None and for_each is not None:
            summary = 'Invalid combination of "count" and "for_each"'
            detail = (
                'The "count" and "for_each" meta-arguments are mutually-exclusive, only one should be used '
                "to be explicit about the number of resources to be created."
            )
        else:
            return
        self.error(summary, detail, present[-1].name_range)

    # -- resources -------------------------------------------------------------------------
    def block_resource(self, block: Block) -> None:
        self.resource(block, "resource")

    def block_data(self, block: Block) -> None:
        self.resource(block, "data")

    def block_ephemeral(self, block: Block) -> None:
        self.resource(block, "ephemeral")

    def resource(self, block: Block, kind: str, *, nested_in_check: bool = False) -> None:
        if len(block.labels) < 2:
            return
        type_, name = block.labels
        names = _RESOURCE_NAMES[kind]
        if not valid_identifier(type_):
            self.error(names[0], _BAD_IDENTIFIER, self.label_range(block, 0))
        if not valid_identifier(name):
            self.error(names[1], _BAD_IDENTIFIER, self.label_range(block, 1))
        body = block.body
        # One pass over the items for every argument and nested block read below (resources are
        # most of a module's blocks; each lookup was a pass of its own). ``arguments`` keeps the
        # last of a name, as ``Body.attribute`` answers.
        arguments: dict[str, Attribute] = {}
        lifecycles: list[Block] = []
        connections: list[Block] = []
        provisioners: list[Block] = []
        reserved: list[Block] = []  # "locals" and "_" blocks, in order
        for item in body.items:
            if isinstance(item, Attribute):
                arguments[item.name] = item
            elif isinstance(item, Block):
                nested_type = item.type
                if nested_type == "lifecycle":
                    lifecycles.append(item)
                elif nested_type == "connection":
                    connections.append(item)
                elif nested_type == "provisioner":
                    provisioners.append(item)
                elif nested_type == "locals" or nested_type == "_":
                    reserved.append(item)
        enabled = None
        if lifecycles and self.allows_enabled:
            enabled = lifecycles[0].body.attribute("enabled")
        if nested_in_check:
            for arg in ("count", "for_each"):
                attr = arguments.get(arg)
                if attr is not None:
                    self.error(
                        f'Invalid "{arg}" attribute',
                        'The "count" and "for_each" meta-arguments are not supported within nested data '
                        "blocks.",
                        attr.name_range,
                    )
            for lc in lifecycles:
                self.error(
                    "Invalid lifecycle block",
                    'Nested data blocks do not support "lifecycle" blocks as the lifecycle is managed by '
                    "the containing block.",
                    lc.range,
                )
        else:
            self.repetition_of(arguments.get("count"), enabled, arguments.get("for_each"))
        provider = arguments.get("provider")
        if provider is not None:
            self.provider_reference(provider.value, provider.expr.range)
        owner = (type_, name) if kind == "resource" else (kind, type_, name)
        for index, lc in enumerate(lifecycles):
            if index:
                self.error(
                    "Duplicate lifecycle block",
                    f"This resource already has a lifecycle block at {lifecycles[0].range}.",
                    lc.range,
                )
                continue
            self.lifecycle(lc, kind, owner)
        if kind == "ephemeral" and self.dialect.allows("ephemeral_provisioners_rejected"):
            for nested in connections + provisioners:
                self.error(
                    "Invalid configuration block for ephemeral resource",
                    f'The "{nested.type}" block is not allowed in ephemeral resources; it can be used only '
                    'in "resource" blocks.',
                    nested.range,
                )
        if kind == "resource":
            for extra in connections[1:]:
                self.error(
                    "Duplicate connection block",
                    f"This resource already has a connection block at {connections[0].range}.",
                    extra.range,
                )
            destroy = False
            for prov in provisioners:
                destroy = self.provisioner(prov) or destroy
            if destroy and connections:
                self.only_self_refs(connections[0].body)
        if reserved:
            for nested in reserved:
                if nested.type == "locals":
                    self.reserved_block(nested, "data" if kind == "data" else kind)
            self.duplicate_escaping(reserved, "resource-type" if kind == "resource" else kind)

    def lifecycle(self, block: Block, kind: str, owner: tuple[str, ...]) -> None:
        body = block.body
        conditions: Iterable[Block] = ()
        if kind == "resource":
            # One pass over the items, as for the resource itself.
            arguments: dict[str, Attribute] = {}
            conditions = []
            for entry in body.items:
                if isinstance(entry, Attribute):
                    arguments[entry.name] = entry
                elif isinstance(entry, Block) and entry.type in ("precondition", "postcondition"):
                    conditions.append(entry)
            for arg in ("create_before_destroy", "prevent_destroy", "destroy"):
                attr = arguments.get(arg)
                if attr is not None:
                    self.bool_argument(attr)
            ignore = arguments.get("ignore_changes")
            ignored = ignore.value if ignore is not None else None
            if ignore is not None and isinstance(ignored, list) and "*" in ignored and len(set(ignored)) > 1:
                self.error(
                    "Invalid ignore_changes ruleset",
                    'Cannot mix wildcard string "*" with non-wildcard references.',
                    ignore.expr.range,
                )
            triggers = arguments.get("replace_triggered_by")
            if triggers is not None and isinstance(triggers.value, list):
                for item in triggers.value:
                    if isinstance(item, str):
                        self.replace_trigger(item, triggers.expr.range)
        else:
            for attr in body.attributes:
                if attr.name not in _MANAGED_LIFECYCLE and attr.name != "destroy":
                    continue
                if kind == "data":
                    self.data_lifecycle_argument(attr.name, attr.name_range)
                else:
                    self.ephemeral_lifecycle_argument(attr.name, attr.name_range)
            conditions = (b for b in body.blocks if b.type in ("precondition", "postcondition"))
        for nested in conditions:
            self.condition_rule(nested, owner)

    def data_lifecycle_argument(self, name: str, rng: Range) -> None:
        self.error(
            "Invalid data resource lifecycle argument",
            f'The lifecycle argument "{name}" is defined only for managed resources ("resource" blocks), '
            "and is not valid for data resources.",
            rng,
            extra=_REPLACES_UNEXPECTED,
        )

    def ephemeral_lifecycle_argument(self, name: str, rng: Range) -> None:
        self.error(
            self.dialect.word("ephemeral_lifecycle"),
            f'The lifecycle argument "{name}" cannot be used in ephemeral resources. This is meant to be '
            'used strictly in "resource" blocks.',
            rng,
            extra=_REPLACES_INVALID,
        )

    def replace_trigger(self, text: str, rng: Range) -> None:
        refs = _scan(_source_item(text), template=False)
        if refs is None:
            return
        resources = 0
        for ref in refs:
            root = ref[0]
            if root in ("var", "local", "module", "path", "terraform", "self", "tofu", "check"):
                summary, detail = (
                    "Invalid reference in replace_triggered_by expression",
                    "Only resources, count.index, and each.key may be used in replace_triggered_by.",
                )
            elif root == "each":
                if len(ref) >= 2 and ref[1] == "key":
                    continue
                summary, detail = (
                    "Invalid each reference in replace_triggered_by expression",
                    "Only each.key may be used in replace_triggered_by.",
                )
            elif root == "count":
                if len(ref) >= 2 and ref[1] == "index":
                    continue
                summary, detail = (
                    "Invalid count reference in replace_triggered_by expression",
                    "Only count.index may be used in replace_triggered_by.",
                )
            else:
                named = ref[1:3] if root in ("data", "ephemeral") else ref[1:2]
                want = 2 if root in ("data", "ephemeral") else 1
                if len(named) < want or "[]" in named:
                    self.error(
                        "Invalid reference",
                        "A reference to a resource type must be followed by at least one attribute access, "
                        "specifying the resource name.",
                        rng,
                    )
                    return
                resources += 1
                continue
            self.error(summary, detail, rng)
        if resources != 1:
            self.error(
                "Invalid replace_triggered_by expression",
                "Missing resource reference in replace_triggered_by expression."
                if resources == 0
                else "Multiple resource references in replace_triggered_by expression.",
                rng,
            )

    def provisioner(self, block: Block) -> bool:
        """Check one provisioner block; return whether it runs at destroy time."""
        if not block.labels:
            return False
        type_ = block.labels[0]
        if type_ in _REMOVED_PROVISIONERS:
            self.error(
                f'The "{type_}" provisioner has been removed',
                f'The "{type_}" provisioner is deprecated and has been removed from {self.product}.',
                self.label_range(block, 0),
            )
            return False
        body = block.body
        destroy = False
        when = body.attribute("when")
        if when is not None and isinstance(when.value, str):
            if when.value == "destroy":
                destroy = True
            elif when.value != "create":
                self.error(
                    'Invalid "when" keyword',
                    'The "when" argument requires one of the following keywords: create or destroy.',
                    when.expr.range,
                )
        on_failure = body.attribute("on_failure")
        if (
            on_failure is not None
            and isinstance(on_failure.value, str)
            and on_failure.value not in ("continue", "fail")
        ):
            self.error(
                'Invalid "on_failure" keyword',
                'The "on_failure" argument requires one of the following keywords: continue or fail.',
                on_failure.expr.range,
            )
        if destroy:
            self.only_self_refs(body, skip=("when", "on_failure"))
        seen_connection: Block | None = None
        for nested in body.blocks:
            if nested.type == "connection":
                if seen_connection is not None:
                    self.error(
                        "Duplicate connection block",
                        f"This provisioner already has a connection block at {seen_connection.range}.",
                        nested.range,
                    )
                    continue
                seen_connection = nested
                if destroy:
                    self.only_self_refs(nested.body)
            elif nested.type == "lifecycle":
                self.reserved_block(nested, "provisioner")
        self.duplicate_escaping(body.blocks, "provisioner-type")
        return destroy

    def only_self_refs(self, body: Body, skip: tuple[str, ...] = ()) -> None:
        allowed = {"self", "path", "terraform"} | (
            {"tofu"} if self.dialect.allows("tofu_references") else set()
        )
        for attr in body.attributes:
            if attr.name in skip:
                continue
            for ref in value_traversals(attr.value) or []:
                root = ref[0]
                ok = root in allowed or (
                    len(ref) == 2
                    and ((root == "count" and ref[1] == "index") or (root == "each" and ref[1] == "key"))
                )
                if not ok:
                    self.error(
                        "Invalid reference from destroy provisioner",
                        "Destroy-time provisioners and their connection configurations may only reference "
                        "attributes of the related resource, via 'self', 'count.index', or 'each.key'.\n\n"
                        "References to other resources during the destroy phase can cause dependency cycles "
                        "and interact poorly with create_before_destroy.",
                        attr.expr.range,
                    )

    # -- parser diagnostics that decoding words differently ------------------------------------
    def reworded(self) -> None:
        """Re-report parser diagnostics that OpenTofu's decoder words differently (``superseded``)."""
        for diag in self.parse_diags:
            if diag.range is None or diag.extra is None:
                continue
            if diag.extra.code is Code.UNEXPECTED_ARGUMENT:
                name = diag.extra.subject
                if name not in (*_MANAGED_LIFECYCLE, "destroy"):
                    continue
                kind = self.lifecycle_kind(diag.range)
                if kind == "data":
                    self.data_lifecycle_argument(name, diag.range)
            elif (
                diag.extra.code is Code.INVALID_EXPRESSION and self.lifecycle_kind(diag.range) == "ephemeral"
            ):
                self.diags.error(
                    self.dialect.word("ephemeral_lifecycle"),
                    "This lifecycle argument cannot be used in ephemeral resources. It is meant to be used "
                    'strictly in "resource" blocks.',
                    diag.range,
                    extra=_REPLACES_INVALID,
                )

    def lifecycle_kind(self, rng: Range) -> str | None:
        for block in self.file.body.blocks:
            if block.type in ("data", "ephemeral") or block.type == "check":
                candidates = [block] if block.type != "check" else list(block.body.blocks_of("data"))
                for res in candidates:
                    for lc in res.body.blocks_of("lifecycle"):
                        if range_within(rng, lc.body.range):
                            return res.type
        return None


# Block type -> its per-file check, as flatten/lang/blocks.py names it (a missing method fails here).
_CHECKS: Mapping[str, Callable[[_Checker, Block], None]] = MappingProxyType(
    {b.name: getattr(_Checker, "block_" + b.check) for b in BLOCKS if b.check is not None}
)


def _ignored_attributes(value: JsonValue, ty: Type, path: str) -> Iterator[str]:
    """Yield the paths of default-value object attributes that the object type ``ty`` lacks."""
    from flatten.lang.types import ListType, MapType, ObjectType, SetType, TupleType

    if isinstance(ty, ObjectType) and isinstance(value, dict):
        attributes = ty.attribute_map
        for key, item in value.items():
            if key not in attributes:
                yield f'"{key}"' if not path else f'{path}["{key}"]'
                continue
            yield from _ignored_attributes(item, attributes[key], f"{path}.{key}" if path else key)
    elif isinstance(ty, MapType) and isinstance(value, dict):
        for key, item in value.items():
            yield from _ignored_attributes(item, ty.element, f'{path}["{key}"]')
    elif isinstance(ty, ListType | SetType) and isinstance(value, list):
        for index, item in enumerate(value):
            yield from _ignored_attributes(item, ty.element, f"{path}[{index}]")
    elif isinstance(ty, TupleType) and isinstance(value, list):
        for index, (item, elem) in enumerate(zip(value, ty.elements, strict=False)):
            yield from _ignored_attributes(item, elem, f"{path}[{index}]")


def check_file(file: ParsedFile, *, options: Options, parse_diags: Sequence[Diagnostic] = ()) -> Diagnostics:
    """Return the decode diagnostics of one parsed file (never raises).

    ``parse_diags`` are the parser's diagnostics for the file. Where OpenTofu's decoder reports a
    situation the parser already diagnosed with other words (a quoted language edition, a managed
    lifecycle argument in a data or ephemeral resource), the decode diagnostic is returned here and
    ``superseded`` removes the parser's one.

    >>> from flatten.lang.model import Body
    >>> list(check_file(ParsedFile("main.tf", "native", Body()), options=Options()))
    []
    """
    checker = _Checker(file, options, parse_diags)
    try:
        checker.run()
        checker.reworded()
    except Exception as exc:  # a bug here must not escape the library
        checker.diags.error(
            "Internal error in flatten's decoder", f"{type(exc).__name__}: {exc}", Range.point(file.filename)
        )
    return checker.diags


def in_file_order(
    file: ParsedFile, parse_diags: Sequence[Diagnostic], decode_diags: Sequence[Diagnostic]
) -> Diagnostics:
    """Return one file's diagnostics in Terraform's order: the parser's (less those a decode
    diagnostic replaces, ``superseded``), then the decoder's, one top-level block after another.

    The readers report the arguments and blocks a block's schema has no place for as they read
    the file (``Code.UNEXPECTED_ARGUMENT``); Terraform reports them as it decodes that block, with
    HCL's ``Body.Content``: after the body's missing required arguments (``PartialContent``),
    before the block's other errors (hclsyntax/structure.go, json/structure.go; configs' decoders
    call ``Content`` first). Each is placed so; one outside every top-level block (the file's own
    schema, checked before any block is decoded) stays where it is.
    """
    parsed = superseded(parse_diags, decode_diags)
    leftovers = [d for d in parsed if d.code is Code.UNEXPECTED_ARGUMENT]
    if not leftovers or not decode_diags:
        parsed.extend(decode_diags)
        return parsed
    extents = sorted(
        (block.range.start.byte, block.body.range.end.byte if block.body.range else block.range.end.byte)
        for block in file.body.blocks
    )

    def block_of(d: Diagnostic) -> int | None:
        if d.range is None or d.range.filename != file.filename:
            return None
        at = d.range.start.byte
        i = bisect.bisect_right(extents, (at, _AFTER)) - 1
        return i if i >= 0 and at <= extents[i][1] else None

    pending = [(d, b) for d in leftovers if (b := block_of(d)) is not None]
    out = Diagnostics(d for d in parsed if all(d is not p for p, _ in pending))
    for d in decode_diags:
        b = block_of(d)
        if b is not None:
            while pending and (
                pending[0][1] < b or (pending[0][1] == b and d.code is not Code.MISSING_ARGUMENT)
            ):
                out.append(pending.pop(0)[0])
        out.append(d)
    out.extend(d for d, _ in pending)
    return out


_AFTER = 1 << 62  # a block end after every byte: bisect keeps blocks starting at the byte


def superseded(parse_diags: Sequence[Diagnostic], decode_diags: Sequence[Diagnostic]) -> Diagnostics:
    """Return ``parse_diags`` without those a decode diagnostic at the same range replaces."""
    replaced = {
        (code, str(d.range)) for d in decode_diags if d.extra is not None for code in d.extra.replaces
    }
    return Diagnostics(d for d in parse_diags if d.code is None or (d.code, str(d.range)) not in replaced)


def _tofu_file(filename: str) -> bool:
    return filename.endswith((".tofu", ".tofu.json"))


def check_versions(files: Sequence[ParsedFile], *, options: Options) -> Diagnostics:
    """Return OpenTofu's version-gate diagnostics for one module's files (spec §1).

    OpenTofu checks ``language { compatible_with { opentofu } }`` in every file and
    ``terraform { required_version }`` only in ``.tofu``/``.tofu.json`` files against its own
    version; a constraint that excludes it gives "Incompatible module", after which the caller
    keeps only those diagnostics for the module. Terraform's ``required_version`` is checked
    against the running Terraform later, which flatten does not know: no diagnostics.
    """
    diags = Diagnostics()
    if not options.dialect.allows("version_gate"):
        return diags
    version = _engine_version(options.dialect)
    for file in files:
        for block in file.body.blocks:
            if block.type == "language":
                for nested in block.body.blocks_of("compatible_with"):
                    attr = nested.body.attribute("opentofu")
                    if attr is not None:
                        _gate(attr, version, diags)
            elif block.type == "terraform" and _tofu_file(file.filename):
                attr = block.body.attribute("required_version")
                if attr is not None:
                    _gate(attr, version, diags)
    return diags


def _gate(attr: Attribute, version: str, diags: Diagnostics) -> None:
    if not isinstance(attr.value, str):
        diags.error(
            "Invalid version constraint",
            "A string value is required for the version constraint.",
            attr.expr.range,
        )
        return
    try:
        reqs = parse_constraints(attr.value)
    except ValueError:
        diags.error(
            "Invalid version constraint",
            "This string does not use correct version constraint syntax.",
            attr.expr.range,
        )
        return
    if reqs.has_prerelease:
        diags.error(
            "Invalid required_version constraint",
            f"Prerelease version constraints are not supported: {attr.value}. Remove the prerelease "
            "information from the constraint. Prerelease versions of OpenTofu will match constraints "
            "using their version core only.",
            attr.expr.range,
        )
        return
    if not reqs.allows(version):
        diags.error(
            "Incompatible module",
            f"This module is not compatible with OpenTofu v{version}.\n\nTo proceed, either choose "
            "another supported OpenTofu version or update this version constraint. Version constraints "
            "are normally set for good reason, so updating the constraint may lead to other errors or "
            "unexpected behavior.",
            attr.expr.range,
            extra=Extra(Code.INCOMPATIBLE_MODULE),
        )


def incompatible(diags: Sequence[Diagnostic]) -> bool:
    """Return whether ``diags`` hold an "Incompatible module" error (the module's other diagnostics go)."""
    return any(d.severity is Severity.ERROR and d.code is Code.INCOMPATIBLE_MODULE for d in diags)
