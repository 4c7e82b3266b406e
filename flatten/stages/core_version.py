"""What the Terraform release the user runs (``--terraform-version``) says about one module.

Rule for the whole file: a construct newer than the chosen release (lang/terraform_releases.py,
``GATES``) is a name that release's schema lacks, so it gets the error HCL's decoder gives for
one: "Unsupported block type" / "Unsupported argument" in native syntax, "Extraneous JSON object
property" in JSON (hcl/hclsyntax/structure.go, hcl/json/structure.go). ``required_version`` is
checked as ``terraform init`` checks it (internal/configs/config.go,
``CheckCoreVersionRequirements``): every constraint of every module, against the release.
The terraform dialect only: OpenTofu's version gate is stages/decode.py's ``check_versions``.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import MappingProxyType

from flatten.lang.diagnostics import Diagnostic, Diagnostics, missing_item_range
from flatten.lang.model import Attribute, Block, Module, ParsedFile, Range
from flatten.lang.options import Options
from flatten.lang.terraform_releases import accepts, release_text
from flatten.lang.versions import parse_constraints

__all__ = ["check_core_version", "check_release_features"]

# Nested names gated per enclosing block type: (block type, name) -> GATES key.
_NESTED = MappingProxyType(
    {
        ("import", "identity"): "import.identity",
        ("import", "for_each"): "import.for_each",
        ("variable", "ephemeral"): "variable.ephemeral",
        ("variable", "deprecated"): "variable.deprecated",
        ("output", "ephemeral"): "output.ephemeral",
        ("output", "type"): "output.type",
        ("output", "deprecated"): "output.deprecated",
    }
)
_LIFECYCLE_HOLDERS = frozenset({"resource", "data"})
# Highest patch number tried when the user names only X.Y (Terraform patches stay far below it).
_PATCHES = 100


def _unsupported_block(block: Block) -> Diagnostic:
    if block.range.filename.endswith(".json"):
        return Diagnostic.error(
            "Extraneous JSON object property",
            f'No argument or block type is named "{block.type}".',
            block.range,
        )
    return Diagnostic.error(
        "Unsupported block type", f'Blocks of type "{block.type}" are not expected here.', block.range
    )


def _unsupported_attribute(attr: Attribute) -> Diagnostic:
    if attr.name_range.filename.endswith(".json"):
        return Diagnostic.error(
            "Extraneous JSON object property",
            f'No argument or block type is named "{attr.name}".',
            attr.name_range,
        )
    return Diagnostic.error(
        "Unsupported argument", f'An argument named "{attr.name}" is not expected here.', attr.name_range
    )


def _nested(block: Block, release: tuple[int, int]) -> Iterable[Diagnostic]:
    for item in block.body.items:
        key = _NESTED.get((block.type, item.name if isinstance(item, Attribute) else item.type))
        if key is None or accepts(release, key):
            continue
        yield _unsupported_attribute(item) if isinstance(item, Attribute) else _unsupported_block(item)
    if block.type in _LIFECYCLE_HOLDERS and not accepts(release, "lifecycle.action_trigger"):
        for lifecycle in block.body.blocks_of("lifecycle"):
            for trigger in lifecycle.body.blocks_of("action_trigger"):
                yield _unsupported_block(trigger)


def _missing_id(block: Block) -> Diagnostic:
    """Before 1.12 ``id`` is a required argument of an import block: HCL's error at the body's
    ``MissingItemRange`` (a native body's opening brace, a JSON object's closing one)."""
    return Diagnostic.error(
        "Missing required argument",
        'The argument "id" is required, but no definition was found.',
        missing_item_range(block.body.range or block.range),
    )


def check_release_features(file: ParsedFile, *, options: Options) -> Diagnostics:
    """Return an error for each construct of one file newer than ``options.terraform_version``."""
    diags = Diagnostics()
    if not options.dialect.allows("terraform_releases"):
        return diags
    release = options.terraform_version
    for block in file.body.blocks:
        if block.type == "terraform":
            diags.extend(_constraint_syntax(block))
        key = f"block:{block.type}"
        if key in _GATED_BLOCKS and not accepts(release, key):
            diags.append(_unsupported_block(block))
            continue
        diags.extend(_nested(block, release))
        if (
            block.type == "import"
            and not file.is_override
            and not accepts(release, "import.identity")
            and block.body.attribute("id") is None
        ):
            diags.append(_missing_id(block))
    return diags


def _constraint_syntax(block: Block) -> Iterable[Diagnostic]:
    """Terraform reads each ``required_version`` with go-version's constraint syntax as it loads
    the file (internal/configs/version_constraint.go, ``decodeVersionConstraint``): a string it
    cannot read is an error, whatever the release (a template is not read here)."""
    attr = block.body.attribute("required_version")
    if attr is None or not isinstance(attr.value, str) or "${" in attr.value or "%{" in attr.value:
        return
    try:
        parse_constraints(attr.value)
    except ValueError:
        yield Diagnostic.error(
            "Invalid version constraint",
            "This string does not use correct version constraint syntax.",
            attr.expr.range,
        )


_GATED_BLOCKS = frozenset({"block:check", "block:import", "block:removed", "block:ephemeral", "block:action"})


def _satisfied(text: str, release: tuple[int, int]) -> bool | None:
    """Whether some patch of ``release`` satisfies the constraint (None: not a valid constraint,
    reported where the terraform block is decoded)."""
    try:
        constraints = parse_constraints(text)
    except ValueError:
        return None
    if constraints.has_prerelease:
        return None
    major, minor = release
    return any(constraints.allows(f"{major}.{minor}.{patch}") for patch in range(_PATCHES))


def check_core_version(module: Module, *, options: Options, address: str, source: str | None) -> Diagnostics:
    """Return "Unsupported Terraform Core version" for each ``required_version`` of ``module``
    that no patch release of the chosen Terraform version satisfies (``address`` "" for the root;
    ``source`` is the call's source for a child)."""
    diags = Diagnostics()
    if not options.dialect.allows("terraform_releases"):
        return diags
    shown = release_text(options.terraform_version)
    for block in module.blocks_of("terraform"):
        attr = block.body.attribute("required_version")
        if (
            attr is None
            or not isinstance(attr.value, str)
            or _satisfied(attr.value, options.terraform_version) is not False
        ):
            continue
        who = "This configuration" if not address else f"Module {address} (from {source})"
        diags.append(
            Diagnostic.error(
                "Unsupported Terraform Core version",
                f"{who} does not support Terraform version {shown}. To proceed, either choose another "
                "supported Terraform version or update this version constraint. Version constraints are "
                "normally set for good reason, so updating the constraint may lead to other errors or "
                "unexpected behavior. (flatten follows Terraform "
                f"{shown}: --terraform-version.)",
                Range(attr.name_range.filename, attr.name_range.start, attr.expr.range.end),
                module=address,
            )
        )
    return diags
