"""flatten's own version: a leaf, so that every layer can name it without importing the package API.

A release commit holds the release (``0.2.0``, tagged ``v0.2.0``); every other commit holds the
next development version (``0.2.1.dev0``, PEP 440), so a build from a branch never claims to be a
release (scripts/release writes both).
"""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.2.1.dev0"
