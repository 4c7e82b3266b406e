"""How each argument is read in Terraform's JSON syntax: the one table both loaders and the emitter use.

Terraform's JSON syntax reads most strings as templates, but some arguments are read as literal
values, static traversals, keywords or type expressions, and a ``"${...}"`` there is an error
(spec §7.3–7.4, python-hcl2-notes §1.6). Native syntax is converted into the form this table
names; JSON input is already in that form.

A ``BlockSchema`` describes a block type: its label names, the mode of each known argument, its
known nested block types, and what happens to anything else (``other``: the mode of unknown
arguments in provider-defined bodies, or ``None`` where Terraform's schema is closed).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from functools import cache
from typing import TYPE_CHECKING

from flatten.lang.dialect import Dialect

if TYPE_CHECKING:
    from flatten.lang.model import JsonValue, Range

__all__ = [
    "REQUIRED_PROVIDERS_DETAIL",
    "REQUIRED_PROVIDERS_OBJECT",
    "REQUIREMENT_KEYS",
    "BlockSchema",
    "Mode",
    "Requirement",
    "generic_schema",
]


class Mode(Enum):
    """The form an argument takes in JSON syntax."""

    EXPR = "expr"  # expression: strings are templates, ${...} wraps non-literals
    LITERAL = "literal"  # constant read without an evaluation context: strings verbatim
    TRAVERSAL = "traversal"  # one static reference as a bare string: "aws.west"
    TRAVERSAL_LIST = "traversal_list"  # ["aws_instance.a", "module.m"]
    KEYWORD = "keyword"  # a bare keyword as a string: "destroy"
    KEYWORD_LIST = "keyword_list"  # ["module_variable_optional_attrs"]
    TYPE = "type"  # a type expression as a string: "list(string)"
    EXPR_SOURCE_LIST = "expr_source_list"  # list of expressions as bare source strings
    IGNORE_CHANGES = "ignore_changes"  # "all" or a list of relative traversals
    PROVIDER_MAP = "provider_map"  # {"aws.dst": "aws.west"}
    REQUIRED_PROVIDER = "required_provider"  # "~> 1.0" or {"source", "version", "configuration_aliases"}


# What a ``REQUIRED_PROVIDER`` object may hold, and Terraform's error at the first other key, after
# which it reads no more items (internal/configs/provider_requirements.go, ``break LOOP``); both
# readers (syntax/hcl.py, syntax/jsonsyntax.py) report it.
REQUIREMENT_KEYS = frozenset(("source", "version", "configuration_aliases"))
REQUIRED_PROVIDERS_OBJECT = "Invalid required_providers object"
REQUIRED_PROVIDERS_DETAIL = (
    'required_providers objects can only contain "version", "source" and "configuration_aliases" '
    'attributes. To configure a provider, use a "provider" block.'
)


class Requirement(dict[str, "JsonValue"]):
    """A ``required_providers`` object as the readers read it: the items Terraform reads, and the
    range of each item's value.

    Terraform reports every error of an item (a version constraint or source it cannot read, a
    value that is no string, a bad configuration alias) at that value, ``kv.Value.Range()``
    (internal/configs/provider_requirements.go), not at the whole object; the model keeps one
    range per expression, so the object carries its items' here. The ranges are no part of the
    value: it equals, prints, pickles and emits as the dict it is.
    """

    __slots__ = ("value_ranges",)

    value_ranges: dict[str, Range]

    def __init__(self, items: dict[str, JsonValue], value_ranges: dict[str, Range]) -> None:
        super().__init__(items)
        self.value_ranges = value_ranges

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return Requirement, (dict(self), self.value_ranges)


@dataclass(frozen=True, slots=True)
class BlockSchema:
    """What a block type may hold. ``other`` is the mode of arguments not listed, or None."""

    labels: tuple[str, ...] = ()
    attributes: Mapping[str, Mode] = field(default_factory=dict)
    blocks: Mapping[str, BlockSchema] = field(default_factory=dict)
    other: Mode | None = None
    other_blocks: bool = False  # nested blocks not listed are allowed (provider-defined)

    def attribute_mode(self, name: str) -> Mode | None:
        return self.attributes.get(name, self.other)

    def nested(self, name: str, labels: int = 0) -> BlockSchema | None:
        """Return the schema of nested block type ``name``, or None if it is not allowed."""
        if name in self.blocks:
            return self.blocks[name]
        if name == "dynamic" and self.other_blocks and self.other is Mode.EXPR:
            return _dynamic()
        if self.other_blocks:
            return generic_schema(self.other or Mode.EXPR, labels)
        return None


@cache
def generic_schema(mode: Mode, labels: int = 0) -> BlockSchema:
    """A provider-defined body: every argument in ``mode``, any nested block."""
    return BlockSchema(labels=tuple(f"label{i}" for i in range(labels)), other=mode, other_blocks=True)


def _conditions() -> dict[str, BlockSchema]:
    check = BlockSchema(attributes={"condition": Mode.EXPR, "error_message": Mode.EXPR})
    return {"precondition": check, "postcondition": check}


def _connection() -> BlockSchema:
    return BlockSchema(attributes={"type": Mode.LITERAL}, other=Mode.EXPR, other_blocks=True)


def _provisioner() -> BlockSchema:
    return BlockSchema(
        labels=("type",),
        attributes={"when": Mode.KEYWORD, "on_failure": Mode.KEYWORD},
        blocks={"connection": _connection()},
        other=Mode.EXPR,
        other_blocks=True,
    )


@cache
def _dynamic() -> BlockSchema:
    # A content body is provider-defined, so it may hold dynamic blocks again (see nested()).
    content = BlockSchema(other=Mode.EXPR, other_blocks=True)
    return BlockSchema(
        labels=("type",),
        attributes={"for_each": Mode.EXPR, "iterator": Mode.KEYWORD, "labels": Mode.EXPR},
        blocks={"content": content},
    )


def _static(dialect: Dialect) -> Mode:
    """The mode of an argument OpenTofu evaluates statically and Terraform reads as a literal."""
    return Mode.EXPR if dialect.allows("static_evaluation") else Mode.LITERAL


def _resource(kind: str, dialect: Dialect) -> BlockSchema:
    lifecycle_attrs: dict[str, Mode] = {}
    if kind in ("resource", "ephemeral"):
        lifecycle_attrs = {
            "create_before_destroy": Mode.LITERAL,
            "prevent_destroy": _static(dialect),
            "ignore_changes": Mode.IGNORE_CHANGES,
            "replace_triggered_by": Mode.EXPR_SOURCE_LIST,
        }
        if dialect.allows("lifecycle_destroy"):
            lifecycle_attrs["destroy"] = Mode.LITERAL
    if dialect.allows("enabled"):
        lifecycle_attrs["enabled"] = Mode.EXPR
    lifecycle_blocks: dict[str, BlockSchema] = dict(_conditions())
    if kind == "resource" and dialect.allows("actions"):
        lifecycle_blocks["action_trigger"] = BlockSchema(
            attributes={
                "events": Mode.KEYWORD_LIST,
                "condition": Mode.EXPR,
                "actions": Mode.TRAVERSAL_LIST,
            }
        )
    blocks: dict[str, BlockSchema] = {
        "lifecycle": BlockSchema(attributes=lifecycle_attrs, blocks=lifecycle_blocks),
        "dynamic": _dynamic(),
        "_": BlockSchema(other=Mode.EXPR, other_blocks=True),
    }
    if kind == "resource":
        blocks["connection"] = _connection()
        blocks["provisioner"] = _provisioner()
    return BlockSchema(
        labels=("type", "name"),
        attributes={
            "count": Mode.EXPR,
            "for_each": Mode.EXPR,
            "provider": Mode.TRAVERSAL,
            "depends_on": Mode.TRAVERSAL_LIST,
        },
        blocks=blocks,
        other=Mode.EXPR,
        other_blocks=True,
    )


# -- one schema per top-level block type; flatten/lang/blocks.py says which types a dialect has,
# -- and gives each its labels.


def terraform_schema(dialect: Dialect) -> BlockSchema:
    # OpenTofu evaluates backend arguments with a static context (templates work);
    # Terraform reads them as literal values (spec §7.4).
    backend_mode = _static(dialect)
    blocks: dict[str, BlockSchema] = {
        "required_providers": BlockSchema(other=Mode.REQUIRED_PROVIDER),
        "backend": generic_schema(backend_mode, 1),
        "cloud": generic_schema(backend_mode, 0),
        # Read with JustAttributes, each value evaluated with no context (terraform
        # internal/configs/provider_meta.go, ``decodeProviderMetaBlock``): no nested block.
        "provider_meta": BlockSchema(labels=("label0",), other=Mode.LITERAL),
    }
    if dialect.allows("encryption"):
        blocks["encryption"] = generic_schema(Mode.EXPR, 0)
    if dialect.allows("state_store"):
        blocks["state_store"] = generic_schema(Mode.LITERAL, 1)
    return BlockSchema(
        attributes={
            "required_version": Mode.LITERAL,
            "experiments": Mode.KEYWORD_LIST,
            "language": Mode.KEYWORD,
        },
        blocks=blocks,
    )


def required_providers_schema(dialect: Dialect) -> BlockSchema:
    # Only valid inside terraform {}; read so that decode can say so (spec §4.1).
    return BlockSchema(other=Mode.REQUIRED_PROVIDER)


def variable_schema(dialect: Dialect) -> BlockSchema:
    return BlockSchema(
        attributes={
            "type": Mode.TYPE,
            "default": Mode.LITERAL,
            "description": Mode.LITERAL,
            "sensitive": Mode.LITERAL,
            "nullable": Mode.LITERAL,
            "ephemeral": Mode.LITERAL,
            "const": Mode.LITERAL,
            "deprecated": Mode.LITERAL,
        },
        blocks={"validation": BlockSchema(attributes={"condition": Mode.EXPR, "error_message": Mode.EXPR})},
    )


def locals_schema(dialect: Dialect) -> BlockSchema:
    return BlockSchema(other=Mode.EXPR)


def output_schema(dialect: Dialect) -> BlockSchema:
    output_attrs = {
        "value": Mode.EXPR,
        "description": Mode.LITERAL,
        "sensitive": Mode.LITERAL,
        "ephemeral": Mode.LITERAL,
        "deprecated": Mode.LITERAL,
        "depends_on": Mode.TRAVERSAL_LIST,
    }
    if dialect.allows("output_type"):
        output_attrs["type"] = Mode.TYPE
    return BlockSchema(attributes=output_attrs, blocks=_conditions())


def module_schema(dialect: Dialect) -> BlockSchema:
    literal_or_static = _static(dialect)
    module_blocks: dict[str, BlockSchema] = {"_": BlockSchema(other=Mode.EXPR, other_blocks=True)}
    if dialect.allows("enabled"):
        module_blocks["lifecycle"] = BlockSchema(attributes={"enabled": Mode.EXPR})
    return BlockSchema(
        attributes={
            "source": literal_or_static,
            "version": literal_or_static,
            "count": Mode.EXPR,
            "for_each": Mode.EXPR,
            "depends_on": Mode.TRAVERSAL_LIST,
            "providers": Mode.PROVIDER_MAP,
        },
        blocks=module_blocks,
        other=Mode.EXPR,
        other_blocks=True,
    )


def provider_schema(dialect: Dialect) -> BlockSchema:
    provider_blocks: dict[str, BlockSchema] = {"_": BlockSchema(other=Mode.EXPR, other_blocks=True)}
    return BlockSchema(
        attributes={"alias": Mode.LITERAL, "version": Mode.LITERAL, "for_each": Mode.EXPR},
        blocks=provider_blocks,
        other=Mode.EXPR,
        other_blocks=True,
    )


def resource_schema(dialect: Dialect) -> BlockSchema:
    return _resource("resource", dialect)


def data_schema(dialect: Dialect) -> BlockSchema:
    return _resource("data", dialect)


def ephemeral_schema(dialect: Dialect) -> BlockSchema:
    return _resource("ephemeral", dialect)


def moved_schema(dialect: Dialect) -> BlockSchema:
    return BlockSchema(attributes={"from": Mode.TRAVERSAL, "to": Mode.TRAVERSAL})


def import_schema(dialect: Dialect) -> BlockSchema:
    return BlockSchema(
        attributes={
            "to": Mode.TRAVERSAL,
            "id": Mode.EXPR,
            "identity": Mode.EXPR,
            "provider": Mode.TRAVERSAL,
            "for_each": Mode.EXPR,
        }
    )


def removed_schema(dialect: Dialect) -> BlockSchema:
    return BlockSchema(
        attributes={"from": Mode.TRAVERSAL},
        blocks={
            "lifecycle": BlockSchema(attributes={"destroy": Mode.LITERAL}),
            "provisioner": _provisioner(),
            "connection": _connection(),
        },
    )


def check_schema(dialect: Dialect) -> BlockSchema:
    return BlockSchema(
        blocks={
            "data": _resource("data", dialect),
            "assert": BlockSchema(attributes={"condition": Mode.EXPR, "error_message": Mode.EXPR}),
        },
    )


def language_schema(dialect: Dialect) -> BlockSchema:
    # Other software may add its own arguments under compatible_with; tofu ignores them.
    compatible_with = BlockSchema(attributes={"opentofu": Mode.LITERAL}, other=Mode.EXPR, other_blocks=True)
    return BlockSchema(
        attributes={"edition": Mode.KEYWORD, "experiments": Mode.KEYWORD_LIST},
        blocks={"compatible_with": compatible_with},
    )


def action_schema(dialect: Dialect) -> BlockSchema:
    return BlockSchema(
        attributes={"count": Mode.EXPR, "for_each": Mode.EXPR, "provider": Mode.TRAVERSAL},
        blocks={"config": generic_schema(Mode.EXPR, 0)},
    )
