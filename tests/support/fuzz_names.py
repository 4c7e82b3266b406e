"""Fuzz kinds ``names`` and ``modules-json`` (issue 30): names from outside never reach a terminal.

``names``: trees whose directory names, file names, module call labels, block labels, sources,
strings and comments hold control characters (ANSI, OSC, BEL, CR, C1, bidi overrides, line
separators) and GitHub's command syntax (``::warning``, ``::stop-commands::``, ``%``, CR/LF).
``modules-json``: a root with remote calls and a crafted ``.terraform/modules/modules.json``
(NUL bytes, control characters, ``..``, absolute paths, the modules directory itself, links out
of it, wrong types, thousands of records, damaged bytes), built ``--offline``.

The invariant (:func:`check_names`): no exception; every text rendering a user sees (``build``'s
diagnostics, the GitHub annotations, ``graph`` as text, dot and mermaid, ``providers``) holds no
raw control character but newline and tab, and no line the Actions runner reads as a command
except flatten's own ``::error``/``::warning`` lines, whose properties hold no colon; a build with
errors writes nothing; no output file is ``modules.json`` or lies in the modules directory.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from pathlib import Path

from flatten import gate
from flatten.build import build
from flatten.lang.diagnostics import Diagnostics, render_text
from flatten.lang.options import Dialect, Options
from flatten.providers.audit import audit_text
from flatten.providers.checks import check_wiring
from flatten.reports import GraphFormat
from flatten.reports.base import find_base
from flatten.reports.github import render_github
from flatten.reports.graph_render import render_graph
from flatten.stages.graph import build_graph
from support.fuzzing import Link, TreeSpec

HOSTILE = (
    "\n::warning file=INJECTED.tf::FORGED",
    "\n::stop-commands::tok",
    "::error::x",
    "  ::notice::indented",
    "\x1b[31m",
    "\x1b[2J",
    "\x1b]8;;http://x\x07",
    "\x1b]0;title\x1b\\",
    "\x07",
    "\x08",
    "\r",
    "\r\n",
    "%0A",
    "%25",
    "%",
    ",",
    ":",
    "\u202e",
    "\u2066",
    "\u2028",
    "\x9b31m",
    "\x85",
    "\x7f",
    "\t",
    "\x0b\x0c",
)
PLAIN = ("a", "m", "web", "x_1", "é", "-", ".", " ", "db")

_RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_OWN_ANNOTATION = re.compile(r"::(error|warning) [^:\n]*::")


def hostile_text(rnd: random.Random, *, pieces: int = 4) -> str:
    return "".join(
        rnd.choice(HOSTILE if rnd.random() < 0.6 else PLAIN) for _ in range(rnd.randint(1, pieces))
    )


def _dirname(rnd: random.Random) -> str:
    """A name a directory or file can have: no slash, no NUL, not . or .., at most 200 bytes."""
    name = hostile_text(rnd).replace("/", "_").replace("\x00", "_")
    if name in (".", "..") or not name.strip("."):
        name = "d" + name
    return name.encode()[:200].decode("utf-8", "ignore") or "d"


def _hcl(text: str) -> str:
    """``text`` as an HCL quoted string (json's escapes are HCL's; ``${`` and ``%{`` doubled)."""
    return json.dumps(text).replace("${", "$${").replace("%{", "%%{")


def _module_body(rnd: random.Random) -> bytes:
    choice = rnd.random()
    if choice < 0.4:
        label, value = _hcl(hostile_text(rnd)), _hcl(hostile_text(rnd))
        text = f'resource "terraform_data" {label} {{\n  input = {value}\n}}\n'
    elif choice < 0.7:  # a syntax error on a line holding raw control characters (the snippet)
        text = f"locals {{\n  x = {hostile_text(rnd)} +\n}}\n"
    elif choice < 0.85:
        text = f"variable {_hcl(hostile_text(rnd))} {{\n  default = {_hcl(hostile_text(rnd))}\n}}\n"
    else:
        text = f'# {hostile_text(rnd)}\noutput "o" {{\n  value = {_hcl(hostile_text(rnd))}\n}}\n'
    return text.encode("utf-8", "surrogatepass")


def names_case(rnd: random.Random) -> TreeSpec:
    """A root calling one to three local modules whose directories, files and labels are hostile."""
    spec: TreeSpec = {}
    main = ""
    for i in range(rnd.randint(1, 3)):
        directory = _dirname(rnd)
        label = f"m{i}" if rnd.random() < 0.5 else hostile_text(rnd)
        source = "./" + directory if rnd.random() < 0.9 else hostile_text(rnd)
        main += f"module {_hcl(label)} {{\n  source = {_hcl(source)}\n}}\n"
        filename = rnd.choice(["main.tf", _dirname(rnd) + ".tf", "x.tf.json"])
        body = _module_body(rnd)
        if filename.endswith(".json"):
            body = json.dumps({"locals": {"v": hostile_text(rnd)}}).encode()
        spec[f"{directory}/{filename}"] = body
        if rnd.random() < 0.3:
            spec[f"{directory}/{_dirname(rnd)}"] = b"not configuration\n"  # copied beside the module
    if rnd.random() < 0.5:
        main += _module_body(rnd).decode("utf-8", "surrogatepass")
    spec["main.tf"] = main.encode("utf-8", "surrogatepass")
    return spec


_REMOTE = (
    ("git::https://example.com/a.git", None),
    ("example.com/ns/name/aws", "1.0.0"),
    ("https://example.com/x.tgz", None),
)


def _dir_value(rnd: random.Random, key: str) -> object:
    choices: list[object] = [
        f".terraform/modules/{key}",
        f".terraform/modules/{key}/sub",
        ".terraform/modules",
        ".terraform/modules/",
        ".terraform/modules/.",
        f".terraform/modules/{key}/..",
        ".",
        "..",
        "/etc",
        "/",
        f".terraform/modules/{key}\x00",
        "\x00",
        hostile_text(rnd),
        f".terraform/modules/{hostile_text(rnd)}",
        ".terraform/modules/" + "a/" * rnd.randint(1, 400),
        "x" * rnd.randint(1, 5000),
        ".terraform/modules/link",
        5,
        None,
        ["a"],
    ]
    return rnd.choice(choices)


def modules_json_case(rnd: random.Random) -> TreeSpec:
    """A root with remote calls and a crafted ``.terraform/modules/modules.json``."""
    spec: TreeSpec = {}
    main = ""
    records: list[object] = [{"Key": "", "Source": "", "Dir": "."}]
    for i in range(rnd.randint(1, 3)):
        name = f"m{i}"
        source, version = rnd.choice(_REMOTE)
        main += (
            f'module "{name}" {{\n  source = "{source}"\n'
            + (f'  version = "{version}"\n' if version else "")
            + "}\n"
        )
        # Mostly a valid package, so that what a record makes flatten vendor is seen in the output.
        valid = rnd.random() < 0.7
        spec[f".terraform/modules/{name}/main.tf"] = (
            b'output "o" {\n  value = 1\n}\n' if valid else _module_body(rnd)
        )
        for _ in range(rnd.randint(1, 2)):
            record: dict[str, object] = {
                "Key": name if rnd.random() < 0.9 else hostile_text(rnd),
                "Source": source if rnd.random() < 0.9 else hostile_text(rnd),
                "Dir": f".terraform/modules/{name}" if rnd.random() < 0.4 else _dir_value(rnd, name),
            }
            if rnd.random() < 0.5:
                record["Version"] = rnd.choice([version or "1.0.0", "", "9.9.9", 5, hostile_text(rnd)])
            records.append(record)
    if rnd.random() < 0.3:
        records += [
            {"Key": f"k{j}", "Source": "x", "Dir": f".terraform/modules/k{j}"}
            for j in range(rnd.randint(100, 3000))
        ]
    if rnd.random() < 0.2:
        records.append(rnd.choice([5, "x", None, [1], {"Key": 1}]))
    rnd.shuffle(records)
    doc: object = {"Modules": records} if rnd.random() < 0.95 else rnd.choice([records, 5, {"Modules": 5}])
    data = json.dumps(doc, ensure_ascii=rnd.random() < 0.5).encode("utf-8", "surrogatepass")
    if rnd.random() < 0.1:
        data = data[: rnd.randint(0, len(data))]
    spec[".terraform/modules/modules.json"] = data
    if rnd.random() < 0.3:
        spec[".terraform/modules/link"] = Link(rnd.choice(["/", "../..", "m0", "/etc"]))
    spec["main.tf"] = main.encode()
    return spec


def assert_terminal_safe(text: str, what: str) -> None:
    """No raw control character (but newline and tab) and no forged workflow command line."""
    found = _RAW.search(text)
    assert found is None, (
        f"{what}: raw {found[0]!r} in {text[max(0, found.start() - 80) : found.end() + 80]!r}"
    )
    for line in text.split("\n"):
        if line.lstrip().startswith("::"):
            assert _OWN_ANNOTATION.match(line), (
                f"{what}: a line the Actions runner reads as a command: {line!r}"
            )


def check_names(root: Path, dialect: Dialect) -> Diagnostics:
    """Build ``root`` offline and render everything a user sees; raise AssertionError when the
    invariant (module docstring) breaks."""
    options = Options(dialect=dialect, offline=True)
    result, diags = build(root, options=options)
    assert_terminal_safe(render_text(diags, root=root, read=gate.source_reader(root)), "build text")
    assert_terminal_safe(render_github(diags, find_base(root)), "annotations")
    if diags.has_errors:
        assert not result.tree.files, "output despite errors"
    for rel in result.tree.paths():
        assert not rel.endswith("modules.json") and ".terraform/modules" not in rel, f"vendored {rel}"
    graph, graph_diags = build_graph(root, options=options)
    for fmt in (GraphFormat.TEXT, GraphFormat.DOT, GraphFormat.MERMAID):
        assert_terminal_safe(render_graph(graph, fmt, root=root), f"graph {fmt.value}")
    wiring, wiring_diags = check_wiring(graph, graph_diags, options=options)
    assert_terminal_safe(audit_text(wiring, [*graph_diags, *wiring_diags]), "providers")
    return diags


def check_names_cli(root: Path, out: Path, dialect: Dialect) -> None:
    """The same tree through ``python -m flatten build --offline`` with GITHUB_ACTIONS=true."""
    import os

    env = {**os.environ, "GITHUB_ACTIONS": "true", "FLATTEN_PARSE_CACHE": "off"}
    env.pop("FLATTEN_TRACEBACK", None)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "flatten",
            "build",
            str(root),
            "--out",
            str(out),
            "--offline",
            "--dialect",
            dialect.value,
        ],
        capture_output=True,
        text=True,
        errors="surrogateescape",
        env=env,
        timeout=120,
    )
    assert proc.returncode in (0, 1), f"exit {proc.returncode}: {proc.stderr[-2000:]}"
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr[-2000:]
    assert_terminal_safe(proc.stdout + proc.stderr, "command line")
