"""flatten's own version: a leaf, so that every layer can name it without importing the package API."""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.2.0"
