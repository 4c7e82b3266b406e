"""A remote child module and a root that calls it by URL: the smallest tree that downloads something."""

from __future__ import annotations

from pathlib import Path

from support.files import write_tree

# A child module with one required variable and one output: what the remote archives hold.
CHILD = {"main.tf": 'variable "name" {\n  type = string\n}\n\noutput "id" {\n  value = var.name\n}\n'}


def remote_root(tmp_path: Path, url: str) -> Path:
    main = f'module "app" {{\n  source = "{url}"\n  name   = "x"\n}}\n'
    return write_tree(tmp_path / "src", {"main.tf": main})
