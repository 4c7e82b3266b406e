"""Provider wiring (spec §4): addresses, resolution, validation, the audit report and rewriting.

The public entry points are ``wire_providers`` (resolve and validate), ``audit_report`` /
``audit_json`` / ``explain`` (the ``flatten providers`` report) and ``make_explicit`` (the
``build --explicit-providers`` rewrite).
"""

from __future__ import annotations

from .addresses import ConfigAddr, ConfigRef, Provider
from .wiring import Binding, How, ModuleWiring, ProviderWiring, ResourceWiring, wire_providers

__all__ = [
    "Binding",
    "ConfigAddr",
    "ConfigRef",
    "How",
    "ModuleWiring",
    "Provider",
    "ProviderWiring",
    "ResourceWiring",
    "wire_providers",
]
