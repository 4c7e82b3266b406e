"""Diagnostics for the tools CI systems already read: SARIF, JUnit XML, GitHub annotations.

``diagnostics.py`` renders Terraform's own forms (text, ``validate -json``); this package renders
the same ``Diagnostics`` for code-scanning, test-report and workflow-annotation consumers. Each
renderer is a pure function of the diagnostics and a ``SourceBase`` (where the root sits in its
repository), so output is byte-identical across runs and machines for the same checkout.
Submodules are imported only when their format is asked for (every plain build pays for imports).
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["AffectedFormat", "GraphFormat", "ReportFormat"]


class ReportFormat(StrEnum):
    """How ``build`` and ``providers`` print diagnostics."""

    TEXT = "text"
    JSON = "json"
    SARIF = "sarif"
    JUNIT = "junit"


class GraphFormat(StrEnum):
    """How ``graph`` prints the module tree (flatten.reports.graph_render); here, so that the
    command line names it without importing the renderer."""

    TEXT = "text"
    DOT = "dot"
    MERMAID = "mermaid"
    JSON = "json"


class AffectedFormat(StrEnum):
    """How ``flatten affected`` prints its answer (flatten.reports.affected)."""

    TEXT = "text"
    JSON = "json"
    GITHUB_MATRIX = "github-matrix"
    ATLANTIS = "atlantis"
