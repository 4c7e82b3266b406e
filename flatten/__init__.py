"""flatten: one canonical .tf.json tree that Terraform loads exactly as it loads the original.

The library API (every other module of the package is internal)::

    from pathlib import Path

    import flatten

    result, diags = flatten.build("infra")      # a str or path-like; options default to Options()
    result, diags = flatten.build(Path("infra"), options=flatten.Options(dialect=flatten.Dialect.OPENTOFU))
    for diag in diags:          # flatten.Diagnostic: Terraform's severity, summary, detail, range
        print(diag.severity, diag.summary)
    if not diags.has_errors:    # flatten.Diagnostics: a list, with has_errors, errors, warnings
        files = result.files    # flatten.BuildResult: relative path -> bytes, in memory only

``build`` never writes to disk (the ``flatten`` command writes ``result.tree`` atomically).
The names load on first use, so ``import flatten`` (and ``flatten --version``) stays instant.
"""

from __future__ import annotations

# ``python -m flatten`` and the ``flatten`` script import this package before __main__ can install
# its handlers: a Ctrl-C during these imports ends the program quietly with 130, as one later does,
# instead of a traceback. Imported as a library, the interrupt is the caller's and is re-raised.
try:
    import importlib
    import sys
    import types
    from typing import TYPE_CHECKING

    from flatten.lang.release import __version__
except KeyboardInterrupt:  # pragma: no cover - timing; tests/reliability/test_interrupt.py
    import os as _os
    import sys as _sys

    if _sys.argv[:1] == ["-m"] or _os.path.basename(_sys.argv[0] if _sys.argv else "") == "flatten":
        _sys.stderr.write("flatten: interrupted\n")
        _os._exit(130)
    raise

if TYPE_CHECKING:
    from flatten.build import BuildResult, build
    from flatten.lang.diagnostics import Diagnostic, Diagnostics
    from flatten.lang.options import Dialect, Options

__all__ = ["BuildResult", "Diagnostic", "Diagnostics", "Dialect", "Options", "__version__", "build"]


def __getattr__(name: str) -> object:
    """Import a public name from its module on first use (PEP 562): the pipeline's import costs
    most of a replayed build's start-up, which needs none of it."""
    if name in ("build", "BuildResult"):
        home = "flatten.build"
    elif name in ("Diagnostic", "Diagnostics"):
        home = "flatten.lang.diagnostics"
    elif name in ("Dialect", "Options"):
        home = "flatten.lang.options"
    else:
        raise AttributeError(f"module 'flatten' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)


def __dir__() -> list[str]:
    """The public API only (PEP 562): not the helpers this module imports, nor submodules."""
    return sorted(__all__)


class _Package(types.ModuleType):
    """The package module, keeping ``flatten.build`` the function.

    Importing the submodule ``flatten.build`` (the pipeline) sets the package attribute of the
    same name to that module; refused here, the attribute stays unset and ``__getattr__`` keeps
    answering with the function (the module stays reachable through ``sys.modules``).
    """

    def __setattr__(self, name: str, value: object) -> None:
        if name == "build" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
