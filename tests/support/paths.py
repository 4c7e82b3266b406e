"""Where things are: the checkout, the test data, the samples and the shared conformance material.

Test modules live at different depths (tests/<area>/), so none of them finds these from its own
``__file__``; they all take them from here.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
DATA = TESTS / "data"
SAMPLES = REPO / "samples"
# Conformance cases and Terraform's conversion expressions, beside the checkout (a worktree
# elsewhere names it with FLATTEN_SHARED).
SHARED = Path(os.environ.get("FLATTEN_SHARED") or REPO.parent / "shared")
