"""The build pipeline: files -> parsed modules -> merged modules -> emitted tree (in memory).

``build`` runs every stage, gathers their diagnostics, and returns the output tree as bytes
keyed by relative path. It never writes to disk (the CLI does that, atomically) and never
returns output when an error diagnostic exists.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from flatten import __version__
from flatten.diagnostics import Diagnostics
from flatten.emit import MANIFEST_NAME, dumps, module_json
from flatten.load import load_dir
from flatten.merge import merge_module
from flatten.model import JsonValue, Module
from flatten.options import Options

__all__ = ["BuildResult", "build", "load_module"]


@dataclass(frozen=True, slots=True)
class BuildResult:
    """What a build produced: the output files, and the merged modules they came from."""

    files: Mapping[str, bytes] = field(default_factory=dict)
    modules: tuple[Module, ...] = ()


def load_module(directory: Path, *, root: Path, options: Options) -> tuple[Module, Diagnostics]:
    """Return the module in ``directory`` with its override files merged, and all diagnostics."""
    diags = Diagnostics()
    files, load_diags = load_dir(directory, root=root, options=options)
    diags.extend(load_diags)
    rel = directory.relative_to(root).as_posix() if directory != root else "."
    module, merge_diags = merge_module(files, directory=rel, options=options)
    diags.extend(merge_diags)
    return module, diags


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def build(root: Path, *, options: Options) -> tuple[BuildResult, Diagnostics]:
    """Return the canonical output tree for the module at ``root``, and every diagnostic.

    On any error diagnostic the result holds no files.
    """
    root = root.absolute()
    module, diags = load_module(root, root=root, options=options)
    if diags.has_errors:
        return BuildResult(modules=(module,)), diags
    main = dumps(module_json(module, provenance=options.provenance)).encode("utf-8")
    manifest: dict[str, JsonValue] = {
        "flatten_version": __version__,
        "dialect": options.dialect.value,
        "modules": [
            {
                "path": "",
                "directory": ".",
                "source": ".",
                "output": "main.tf.json",
                "digest": _digest(main),
            }
        ],
    }
    files = {"main.tf.json": main, MANIFEST_NAME: dumps(manifest).encode("utf-8")}
    return BuildResult(files=files, modules=(module,)), diags
