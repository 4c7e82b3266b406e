"""Files of the other dialect: what an output holds where a module has ``.tofu`` files.

Rule for the whole file: a module directory with ``.tofu``/``.tofu.json`` files loads differently
in the two engines (Terraform ignores those files; OpenTofu reads them, and ``X.tofu`` hides
``X.tf``: spec §1). The output is built for one engine and must never load differently in it,
nor load silently in the other:

* terraform dialect: the ``.tofu`` files are not copied (copied, OpenTofu would read them beside
  the flattened ``main.tf.json``, which they no longer shadow: duplicates, or worse, a mix of the
  two views), and ``flatten-terraform-only.tofu.json`` sets a ``required_version`` no OpenTofu
  satisfies. Terraform never reads a ``.tofu.json`` file; OpenTofu (1.8+, the first to read
  ``.tofu`` files) stops with "Incompatible module" at that file, whose comment says why.
* opentofu dialect: the ``main.tf.json`` holds OpenTofu's view, which Terraform would load as if
  it were its own; ``flatten-opentofu-only.tf.json`` sets a ``required_version`` no Terraform
  satisfies ("Unsupported Terraform Core version"). OpenTofu 1.12+ ignores ``required_version``
  in ``.tf`` files; for 1.8-1.11, which did not, the empty ``flatten-opentofu-only.tofu.json``
  shadows it.

A module without ``.tofu`` files loads the same in both engines as far as file selection goes:
it gets no guard. Flattening an output again writes the same guards (a fixed point).
"""

from __future__ import annotations

import os
from pathlib import Path

from flatten import gate
from flatten.lang.model import JsonValue
from flatten.lang.options import Dialect

__all__ = ["guard_files", "is_foreign"]

_TOFU_SUFFIXES = (".tofu", ".tofu.json")


def is_foreign(name: str, dialect: Dialect) -> bool:
    """Whether ``name`` is a configuration file only the other engine reads (never copied)."""
    suffixes = dialect.values.foreign_suffixes
    return bool(suffixes) and name.endswith(suffixes) and not name.startswith((".", "~"))


def _has_tofu_files(directory: Path) -> bool:
    try:
        listed = gate.list_dir(directory)
    except OSError:
        return False
    # A link is a file here if it leads to one (what Terraform's reader would take).
    return any(
        e.name.endswith(_TOFU_SUFFIXES)
        and not e.name.startswith(".")
        and (e.kind == "file" or (e.kind == "link" and os.path.isfile(directory / e.name)))
        for e in listed
    )


def guard_files(directory: Path, dialect: Dialect) -> dict[str, JsonValue]:
    """Return the guard files (name -> JSON document) for a module directory's output."""
    if not _has_tofu_files(directory):
        return {}
    other = "OpenTofu" if dialect.product == "Terraform" else "Terraform"
    note = (
        f"flatten built this directory for {dialect.product} (--dialect {dialect.value}) from a module "
        f"with .tofu files, which {dialect.product} and {other} load differently. This file stops "
        f"{other} from loading it: build the original with --dialect "
        f"{'opentofu' if other == 'OpenTofu' else 'terraform'} for {other}."
    )
    docs: dict[str, JsonValue] = {}
    for name, constraint in dialect.values.guard_files:
        doc: dict[str, JsonValue] = {"//": note}
        if constraint is not None:
            doc["terraform"] = {"required_version": constraint}
        docs[name] = doc
    return docs
