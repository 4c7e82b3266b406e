"""Re-run a script under the project's virtual environment when another Python started it.

The measuring scripts import flatten and its dependencies, or start ``sys.executable -m flatten``:
under a Python without them (``scripts/difftest`` typed at a shell runs the machine's python3)
every build would fail the same way, and a differential run would count those failures as
disagreements, or a comparison of two revisions as identical. ``ensure()`` makes the
environment once (scripts/_venv.sh, as scripts/test does) and replaces the process with the
same command under its Python; under that Python it does nothing.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def ensure() -> None:
    """Return under a Python that has flatten's dependencies; else re-run the script under one."""
    if all(importlib.util.find_spec(name) is not None for name in ("hcl2", "typer")):
        return
    # The path as an argument, not inside the command's text: a quote in it stays a quote.
    subprocess.run(["bash", "-c", 'source "$1"', "bash", str(REPO / "scripts" / "_venv.sh")], check=True)
    python = Path(os.environ.get("FLATTEN_VENV", REPO / ".venv")) / "bin" / "python"
    os.execv(python, [str(python), *sys.argv])
