"""The inline promise on generated trees: an applied state plans only moves after ``--inline``.

Each tree (``tests/support/inline_trees.py``: ``terraform_data`` modules with typed variables,
objects with ``optional()`` defaults, reused directories, ``count`` calls) is applied with
Terraform, built with ``flatten build --inline`` as a whole and with ``--module`` on each call,
and planned against the applied state. Every run must plan only ``no-op`` actions with equal
outputs, or be refused by flatten with an error (for example ``--module`` on a call with
``count``). The long run of the same check is ``scripts/inline-check``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from oracle import terraform
from support.inline_check import check_tree
from support.inline_trees import tree


@pytest.mark.oracle
@pytest.mark.parametrize("seed", [0, 1, 3])
def test_applied_tree_plans_only_moves(seed: int, tmp_path: Path) -> None:
    outcomes = check_tree(tree(seed), tmp_path, terraform())
    assert outcomes[0].kind != "invalid", outcomes[0].detail
    bad = [o for o in outcomes if o.kind not in ("ok", "refused")]
    assert not bad, bad
    assert outcomes[0].kind == "ok", outcomes[0]  # the whole tree inlines
