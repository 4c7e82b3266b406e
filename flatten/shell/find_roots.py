"""Finding the root modules under a directory (``flatten affected`` without ROOT).

A root is a directory holding configuration files (``.tf``, ``.tf.json``; with OpenTofu also
``.tofu``, ``.tofu.json``) that no other such directory under the same top calls as a local
module (``source = "../modules/net"``). That is the rule terragrunt-atlantis-config and Atlantis'
own autodetection follow for plain Terraform: a directory somebody calls is a module, the others
are where ``terraform plan`` runs. Hidden directories (``.terraform``, ``.git``) and symlinked ones are
never searched. A module's ``examples/`` directories are roots by this rule, which is what they are.
Local calls are read from each directory's merged module (a literal ``source`` string), loaded
through the memo, so the builds that follow find them already loaded.
"""

from __future__ import annotations

import os
from pathlib import Path

from flatten import gate
from flatten.lang.options import Options
from flatten.stages.memo import Memo

__all__ = ["find_roots"]


def find_roots(top: Path, *, options: Options, memo: Memo) -> list[Path]:
    """Return every root module directory under ``top`` (absolute, sorted)."""
    from flatten.stages.load import load_module

    suffixes = options.dialect.values.config_suffixes
    candidates: list[Path] = []
    pending = [top]
    while pending:  # listed through the gate: symlinked directories are not followed
        current = pending.pop()
        try:
            entries = gate.list_dir(current)
        except OSError:
            continue
        if any(
            e.kind == "file" and e.name.endswith(suffixes) and not e.name.startswith(".") for e in entries
        ):
            candidates.append(current)
        pending.extend(
            current / e.name for e in reversed(entries) if e.kind == "dir" and not e.name.startswith(".")
        )
    called: set[str] = set()
    for directory in candidates:
        loaded, _ = load_module(directory, root=directory, options=options, memo=memo)
        for block in loaded.module.blocks_of("module"):
            attr = block.body.attribute("source")
            value = attr.value if attr is not None else None
            if isinstance(value, str) and value.startswith(("./", "../")):
                called.add(os.path.realpath(os.path.normpath(directory / value)))
    return sorted(c for c in candidates if os.path.realpath(c) not in called)
