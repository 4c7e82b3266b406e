"""Names from outside never reach a terminal or a CI log raw (issue 30, items 3 and 5).

A directory named with a newline and ``::warning ...`` forges a GitHub annotation, and
``::stop-commands::<token>`` switches flatten's own annotations off; ANSI, OSC and BEL sequences
drive the terminal. Every text command and format goes through ``flatten/lang/printable.py``.
A crafted ``.terraform/modules/modules.json`` under ``--offline`` is a diagnostic or is ignored,
never a traceback, and never makes flatten vendor the modules directory itself.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.files import write_tree

from flatten.lang.printable import printable

# A directory name carrying every attack at once: a forged annotation, the command that stops
# annotations, an ANSI colour, an OSC hyperlink, BEL, a carriage return and a bidi override.
EVIL = (
    "m\n::warning file=INJECTED.tf::INJECTED-ANNOTATION\n::stop-commands::tok"
    "\x1b[31mRED\x1b]8;;http://x\x07\r\u202e"
)
_RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _hcl(text: str) -> str:
    """``text`` as an HCL string literal (json's escapes are HCL's for these characters)."""
    return json.dumps(text)


def _cli(*args: str | Path, tmp: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "FLATTEN_CACHE_DIR": str(tmp / "cache"), **(env or {})}
    full.pop("FLATTEN_TRACEBACK", None)
    full.pop("GITHUB_ACTIONS", None)
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "flatten", *map(str, args)],
        capture_output=True,
        text=True,
        env=full,
        timeout=120,
    )


def _assert_safe(text: str) -> None:
    """No raw control character, and no line the Actions runner would read as a command but
    flatten's own ``::error``/``::warning`` annotations (whose properties are escaped)."""
    assert not _RAW.search(text.replace("\n", "").replace("\t", "")), repr(text)
    for line in text.split("\n"):
        if line.lstrip().startswith("::"):
            assert re.match(r"::(error|warning) [^:]*::", line), repr(line)
    assert "\n::stop-commands" not in text and "\n::warning file=INJECTED" not in text


def _tree(tmp_path: Path, module_body: str) -> Path:
    root = tmp_path / "root"
    write_tree(
        root,
        {
            "main.tf": f'module "m" {{\n  source = {_hcl("./" + EVIL)}\n}}\n',
            f"{EVIL}/main.tf": module_body,
        },
    )
    return root


def test_printable_escapes_controls_and_command_lines() -> None:
    assert printable("a\nb") == "a\\x0ab"
    assert printable("a\nb", lines=True) == "a\nb"
    assert printable("x\n  ::stop-commands::t", lines=True) == "x\n  \\x3a:stop-commands::t"
    assert printable("\x1b]8;;u\x07\u202e\x9b") == "\\x1b]8;;u\\x07\\u202e\\x9b"
    assert printable("plain: a::b") == "plain: a::b"  # "::" inside a line is not a command


def test_a_hostile_directory_name_cannot_forge_annotations_or_drive_the_terminal(tmp_path: Path) -> None:
    root = _tree(tmp_path, 'resource "terraform_data" "x" {\n  input = \n}\n')
    proc = _cli("build", root, "--out", tmp_path / "out", tmp=tmp_path, env={"GITHUB_ACTIONS": "true"})
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "INJECTED" in proc.stderr  # the name is shown, escaped
    _assert_safe(proc.stdout + proc.stderr)
    # flatten's own annotation is still there, on one line
    assert sum(line.startswith("::error ") for line in proc.stderr.splitlines()) >= 1


@pytest.mark.parametrize(
    "args",
    [
        ("graph",),
        ("graph", "--format", "dot"),
        ("graph", "--format", "mermaid"),
        ("providers",),
    ],
    ids=lambda a: "-".join(a),
)
def test_graph_and_providers_escape_hostile_names(tmp_path: Path, args: tuple[str, ...]) -> None:
    root = _tree(tmp_path, 'resource "terraform_data" "x" {}\n')
    proc = _cli(*args, root, tmp=tmp_path, env={"GITHUB_ACTIONS": "true"})
    assert proc.returncode == 0, proc.stderr
    assert "INJECTED" in proc.stdout
    _assert_safe(proc.stdout + proc.stderr)


# -- modules.json (item 5) ------------------------------------------------------------------------


def _installed(tmp_path: Path, records: list[dict[str, str]]) -> Path:
    root = tmp_path / "root"
    write_tree(
        root,
        {
            "main.tf": 'module "a" {\n  source = "git::https://example.com/a.git"\n}\n',
            ".terraform/modules/a/main.tf": 'resource "terraform_data" "a" {}\n',
        },
    )
    doc = {"Modules": [{"Key": "", "Source": "", "Dir": "."}, *records]}
    (root / ".terraform/modules/modules.json").write_text(json.dumps(doc), encoding="utf-8")
    return root


_A = {"Key": "a", "Source": "git::https://example.com/a.git"}


@pytest.mark.parametrize(
    "directory",
    [
        ".terraform/modules/a\x00x",
        ".terraform/modules/\n\x1b[31m::warning file=x::forged",
        "\x00",
    ],
    ids=["nul", "controls", "only-nul"],
)
def test_a_crafted_dir_in_modules_json_is_a_diagnostic_not_a_traceback(
    tmp_path: Path, directory: str
) -> None:
    root = _installed(tmp_path, [{**_A, "Dir": directory}])
    proc = _cli(
        "build", root, "--out", tmp_path / "out", "--offline", tmp=tmp_path, env={"GITHUB_ACTIONS": "true"}
    )
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "Module not installed" in proc.stderr or "Invalid module installation" in proc.stderr
    _assert_safe(proc.stdout + proc.stderr)


@pytest.mark.parametrize(
    "directory", [".terraform/modules", ".terraform/modules/", ".terraform/modules/a/.."]
)
def test_modules_json_pointing_at_the_modules_directory_itself_is_refused(
    tmp_path: Path, directory: str
) -> None:
    root = _installed(tmp_path, [{**_A, "Dir": directory}])
    out = tmp_path / "out"
    proc = _cli("build", root, "--out", out, "--offline", tmp=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "Invalid module installation" in proc.stderr
    assert not out.exists()


def test_only_the_records_a_build_asks_for_are_resolved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """100,000 records cost a JSON parse, not 100,000 path resolutions (0.5 ms each: 16k records
    took 19 s, 300k never finished)."""
    from flatten.sources import installed as installed_module

    records = [{"Key": f"k{i}", "Source": "x", "Dir": f".terraform/modules/k{i}/d"} for i in range(100_000)]
    root = _installed(tmp_path, [{**_A, "Dir": ".terraform/modules/a"}, *records])
    resolved: list[str] = []
    real = os.path.realpath
    monkeypatch.setattr(installed_module.os.path, "realpath", lambda p: resolved.append(str(p)) or real(p))
    installed = installed_module.read_installed(root, ".terraform")
    # The gate resolves modules.json itself (a link out of the modules directory is refused),
    # never a record.
    modules = os.path.realpath(root / ".terraform" / "modules")
    assert len(installed) == 100_001
    assert [p for p in resolved if p not in (modules, os.path.join(modules, "modules.json"))] == []
    resolved.clear()
    record = installed.get("a")
    assert record is not None and record.directory.name == "a" and record.escapes is None
    assert len(resolved) == 2  # the record's directory and the modules directory, once
