"""flatten: one canonical .tf.json tree that Terraform loads exactly as it loads the original."""

from __future__ import annotations

__version__ = "0.1.0"
