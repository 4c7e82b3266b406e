"""The root variable values ``tofu init`` evaluates module sources and backends with (opentofu dialect).

Rule for the whole file: OpenTofu's ``collectVariableValues`` (internal/command/meta_vars.go)
and ``rootModuleCall`` (internal/command/meta_config.go), in their order, a later source
replacing an earlier one:

1. ``TF_VAR_<name>`` environment variables (the lowest: read first);
2. ``terraform.tfvars``, then ``terraform.tfvars.json``, in the root directory;
3. ``*.auto.tfvars`` and ``*.auto.tfvars.json`` there, in lexical order;
4. ``-var NAME=VALUE`` and ``-var-file FILE`` (``--var``/``--var-file``) in command-line order;

and a variable none of them sets takes its default (``syntax/evaluate.py``). A value from the
command line or the environment is a string, parsed by the variable's parsing mode: literal for
a variable with no type or a primitive one, an HCL expression otherwise (configs
``decodeVariableType``); a file's value is its expression, which may not refer to anything.
The Terraform dialect reads none of them: Terraform evaluates no variables in module sources.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from flatten import gate
from flatten.lang.diagnostics import Diagnostics
from flatten.lang.model import Block, JsonValue, Module, Range
from flatten.lang.options import Options
from flatten.lang.oserror import describe_os_error
from flatten.lang.printable import printable
from flatten.lang.types import Primitive, TypeExprError, parse_type

__all__ = ["InputValue", "root_inputs"]

_DEFAULT_FILES = ("terraform.tfvars", "terraform.tfvars.json")
_AUTO_SUFFIXES = (".auto.tfvars", ".auto.tfvars.json")
_INTERPOLATION = re.compile(r"(?<![$%])[$%]\{")


@dataclass(frozen=True, slots=True)
class InputValue:
    """One root variable's value and where it came from (the manifest names ``source``)."""

    value: JsonValue  # the value itself (not in Terraform's JSON form: no template escapes)
    source: str  # "TF_VAR_env", "terraform.tfvars", "--var", or the --var-file path


def _unescape(value: JsonValue, rng: Range, diags: Diagnostics) -> JsonValue:
    """A file's value in JSON form -> the value; references and templates are not allowed."""
    if isinstance(value, str):
        if _INTERPOLATION.search(value):
            diags.error(
                "Variables not allowed",
                "Variables may not be used here.",
                rng,
            )
            return None
        return value.replace("$${", "${").replace("%%{", "%{")
    if isinstance(value, list):
        return [_unescape(v, rng, diags) for v in value]
    if isinstance(value, dict):
        return {k: _unescape(v, rng, diags) for k, v in value.items()}
    return value


def _read_file(
    path: Path,
    shown: str,
    source: str,
    into: dict[str, InputValue],
    diags: Diagnostics,
    *,
    inside: tuple[Path, ...] | None,
) -> None:
    """``addVarsFromFile``: every attribute of a .tfvars or .tfvars.json file.

    Read through the gate (issue 38, items 6 and 9): a regular file only (``--var-file
    /dev/zero`` or a FIFO is refused at once), of at most ``gate.CONFIG_LIMIT`` bytes; a file
    found in the root (``inside``) only when a symlink's target lies inside the root. A file named
    on the command line is the user's choice and is followed wherever it leads.
    """
    try:
        text = gate.read_bytes(path, inside=inside).decode("utf-8")
    except FileNotFoundError:
        diags.error("Failed to read variables file", f"Given variables file {shown} does not exist.")
        return
    except OSError as exc:
        diags.error(
            "Failed to read variables file",
            describe_os_error(
                exc, doing=f"read the variables file {printable(shown)}", path=printable(shown)
            ),
        )
        return
    except UnicodeDecodeError as exc:
        diags.error("Failed to read variables file", f"Error while reading {shown}: {exc}.")
        return
    is_json = shown.endswith(".json") or (not shown.endswith(".tfvars") and text.lstrip().startswith("{"))
    if is_json:
        _read_json(text, shown, source, into, diags)
        return
    # python-hcl2 and Lark (7 MB of a build's memory) are imported only when a value needs them.
    from flatten.syntax.hcl import parse_attributes

    body, file_diags = parse_attributes(text, shown)
    diags.extend(file_diags)
    for block in body.blocks:
        if block.type == "variable" and block.labels:
            name = block.labels[0]
            diags.error(
                "Variable declaration in .tfvars file",
                "A .tfvars file is used to assign values to variables that have already been declared "
                f'in .tf files, not to declare new variables. To declare variable "{name}", place this '
                f"block in one of your .tf files, such as variables.tf.\n\nTo set a value for this "
                f"variable in {shown}, use the definition syntax instead:\n    {name} = <value>",
                block.range,
            )
    for attr in body.attributes:
        into[attr.name] = InputValue(_unescape(attr.value, attr.expr.range, diags), source)


def _read_json(text: str, shown: str, source: str, into: dict[str, InputValue], diags: Diagnostics) -> None:
    """A .tfvars.json file: one JSON object, each property a value (strings are templates that
    may not interpolate, as in a .tfvars file)."""
    at = Range.point(shown)
    try:
        doc = json.loads(text.removeprefix("\ufeff"), parse_float=Decimal)
    except ValueError as exc:
        diags.error("Invalid JSON", f"{shown} is not valid JSON: {exc}.", at)
        return
    except RecursionError:  # issue 38, item 12: nested deeper than Python's json reads
        diags.error(
            "Invalid JSON",
            f"{shown} nests arrays or objects deeper than flatten reads (about 900 levels); no "
            "variable value needs that depth.",
            at,
        )
        return
    if not isinstance(doc, dict):
        diags.error(
            "Root value must be object", "The root value in a JSON-based configuration must be an object.", at
        )
        return
    for name, value in doc.items():
        try:
            into[name] = InputValue(_unescape(value, at, diags), source)
        except RecursionError:
            diags.error("Invalid JSON", f"The value of {name!r} in {shown} nests too deep to read.", at)


def _hcl_mode(decl: Block | None) -> bool:
    """Whether a string value for ``decl`` is parsed as an HCL expression (a complex type)."""
    type_attr = decl.body.attribute("type") if decl is not None else None
    if type_attr is None or not isinstance(type_attr.value, str):
        return False
    text = type_attr.value.removeprefix("${").removesuffix("}")
    try:
        return not isinstance(parse_type(text), Primitive)
    except TypeExprError:
        return False


def _from_string(name: str, raw: str, source: str, module: Module, diags: Diagnostics) -> InputValue | None:
    decl = next((b for b in module.blocks_of("variable") if b.labels[:1] == (name,)), None)
    if not _hcl_mode(decl):
        return InputValue(raw, source)
    from flatten.syntax.hcl import convert_expression  # as in _read_file

    value, expr_diags = convert_expression(raw)
    if expr_diags.has_errors:
        diags.extend(expr_diags)
        return None
    shown = Range.point(f"<value for var.{name}>")
    return InputValue(_unescape(value, shown, diags), source)


def root_inputs(root: Path, module: Module, *, options: Options) -> tuple[dict[str, InputValue], Diagnostics]:
    """Return the root variables' values from every source ``tofu init`` reads, by name.

    ``module`` is the root module (its declarations give each string value's parsing mode).
    Empty in the terraform dialect.
    """
    diags = Diagnostics()
    found: dict[str, InputValue] = {}
    if not options.dialect.allows("static_evaluation"):
        return found, diags
    for key, raw in options.variable_env:
        name = key.removeprefix("TF_VAR_")
        value = _from_string(name, raw, key, module, diags)
        if value is not None:
            found[name] = value
    try:
        listed = {e.name: e.kind for e in gate.list_dir(root)}
    except OSError:
        listed = {}  # the root's own loading reports an unreadable directory
    # A symlink is read (if its target is inside the root); a directory or a FIFO by such a name
    # is not a variables file Terraform would take, and the gate refuses the FIFO unread anyway.
    candidates = {name for name, kind in listed.items() if kind in ("file", "link", "other")}
    for name in _DEFAULT_FILES:
        if name in candidates:
            _read_file(root / name, name, name, found, diags, inside=(root,))
    for name in sorted(n for n in candidates if n.endswith(_AUTO_SUFFIXES)):
        _read_file(root / name, name, name, found, diags, inside=(root,))
    for kind, text in options.variables:
        if kind == "var-file":
            _read_file(Path(text), text, text, found, diags, inside=None)
            continue
        name, eq, raw = text.partition("=")
        if not eq:
            diags.error(
                "Invalid -var option",
                f"The given -var option {text!r} is not correctly specified. Must be a variable name and "
                'value separated by an equals sign, like --var="key=value".',
            )
            continue
        if name.endswith(" "):
            diags.error(
                "Invalid -var option",
                f"Variable name {name!r} is invalid due to trailing space. Did you mean "
                f'--var="{name.rstrip(" ")}={raw.lstrip(" ")}"?',
            )
            continue
        value = _from_string(name, raw, "--var", module, diags)
        if value is not None:
            found[name] = value
    return found, diags
