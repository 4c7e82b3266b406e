"""Provider addresses: fully-qualified provider names, local references and configuration addresses.

Rule for the whole file: an address is a value, printed exactly as Terraform prints it (spec §4.1).
A provider's FQN is ``hostname/namespace/type``; the default hostname depends on the dialect
(``registry.terraform.io`` or ``registry.opentofu.org``); the local name ``terraform`` implies the
builtin ``terraform.io/builtin/terraform``. A configuration address is ``(module path, FQN,
alias)`` and prints as ``module.a.provider["registry.terraform.io/hashicorp/aws"].west``.

Source strings are parsed by ``flatten.stages.decode.parse_provider_source`` (the decoder reports their
errors); this module only builds values from them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from flatten.lang.model import module_address
from flatten.lang.options import Dialect
from flatten.stages.decode import ProviderAddressError, parse_provider_part, parse_provider_source

__all__ = [
    "BUILTIN_HOST",
    "ConfigAddr",
    "ConfigRef",
    "InvalidReference",
    "Naming",
    "Provider",
    "implied_local_name",
    "parse_config_ref",
]

BUILTIN_HOST = "terraform.io"
# Either engine's default registry, for display (flatten/lang/dialect.py).
_DEFAULT_HOSTS = frozenset(d.values.registry_host for d in Dialect)


@dataclass(frozen=True, slots=True, order=True)
class Provider:
    """A fully-qualified provider name: ``hostname/namespace/type``."""

    hostname: str
    namespace: str
    type: str

    def __str__(self) -> str:
        return f"{self.hostname}/{self.namespace}/{self.type}"

    @property
    def is_builtin(self) -> bool:
        return self.hostname == BUILTIN_HOST and self.namespace == "builtin"

    def for_display(self) -> str:
        """Return the short form Terraform shows: ``hashicorp/aws`` on a default host."""
        if self.hostname in _DEFAULT_HOSTS:
            return f"{self.namespace}/{self.type}"
        return str(self)


@dataclass(frozen=True, slots=True)
class Naming:
    """The dialect's provider naming rules: default host, implied and default providers."""

    dialect: Dialect

    @property
    def default_host(self) -> str:
        return self.dialect.values.registry_host

    def default(self, name: str) -> Provider:
        """``NewDefaultProvider``: ``<default host>/hashicorp/<name>`` (no builtin special case)."""
        return Provider(self.default_host, "hashicorp", name)

    def implied(self, name: str) -> Provider:
        """``ImpliedProviderForUnqualifiedType``: ``terraform`` is builtin, others are default."""
        if name == "terraform":
            return Provider(BUILTIN_HOST, "builtin", "terraform")
        return self.default(name)

    def is_default(self, provider: Provider) -> bool:
        return provider.hostname == self.default_host and provider.namespace == "hashicorp"

    def parse_source(self, source: str) -> Provider | None:
        """Return the provider a ``required_providers`` source names, or None when it is invalid."""
        try:
            host, namespace, type_ = parse_provider_source(source, dialect=self.dialect)
        except ProviderAddressError:
            return None
        return Provider(host, namespace, type_)


@dataclass(frozen=True, slots=True, order=True)
class ConfigAddr:
    """An absolute provider configuration address: module path, provider and alias."""

    module: tuple[str, ...]
    provider: Provider
    alias: str = ""

    def __str__(self) -> str:
        prefix = module_address(self.module)
        text = f'provider["{self.provider}"]' + (f".{self.alias}" if self.alias else "")
        return f"{prefix}.{text}" if prefix else text

    @property
    def module_address(self) -> str:
        return module_address(self.module)

    def with_module(self, module: tuple[str, ...]) -> ConfigAddr:
        return ConfigAddr(module, self.provider, self.alias)


@dataclass(frozen=True, slots=True, order=True)
class ConfigRef:
    """A local reference to a configuration: ``name``, ``name.alias`` or (OpenTofu) ``name.alias[key]``."""

    name: str
    alias: str = ""
    key: str | None = None  # the instance key expression's source text, brackets excluded

    @property
    def compact(self) -> str:
        """``name`` or ``name.alias`` (the key of provider-configuration maps)."""
        return f"{self.name}.{self.alias}" if self.alias else self.name

    def __str__(self) -> str:
        return self.compact + (f"[{self.key}]" if self.key is not None else "")


class InvalidReference(ValueError):
    """A provider reference that is not ``name[.alias][[key]]``."""


_REF = re.compile(r"^\s*([^\s.\[\]]+)(?:\.([^\s.\[\]]+))?\s*(?:\[(.*)\])?\s*$", re.DOTALL)


def parse_config_ref(value: object) -> ConfigRef:
    """Return the reference a ``provider`` argument or ``providers`` map item holds.

    Values are in Terraform JSON form (a bare string); a ``"${...}"`` wrapper is tolerated.

    >>> parse_config_ref("aws.west")
    ConfigRef(name='aws', alias='west', key=None)
    >>> str(parse_config_ref("null.blah[each.key]"))
    'null.blah[each.key]'
    """
    if not isinstance(value, str):
        raise InvalidReference("a provider reference must be a string")
    text = value.strip()
    if text.startswith("${") and text.endswith("}"):
        text = text[2:-1]
    match = _REF.match(text)
    if match is None:
        raise InvalidReference(f"{value!r} is not a provider configuration reference")
    name, alias, key = match.group(1), match.group(2) or "", match.group(3)
    return ConfigRef(name, alias, key.strip() if key is not None else None)


def implied_local_name(resource_type: str) -> str:
    """Return the provider local name a resource type implies: the text before the first ``_``.

    >>> implied_local_name("google_beta_x"), implied_local_name("null")
    ('google', 'null')
    """
    return resource_type.split("_", 1)[0]


def valid_local_name(name: str) -> str | None:
    """Return why ``name`` is not a valid provider local name, or None when it is."""
    try:
        parse_provider_part(name)
    except ProviderAddressError as exc:
        return str(exc)
    return None
