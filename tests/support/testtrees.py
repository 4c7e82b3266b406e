"""Generated roots with ``terraform test`` files: runs that pass and runs that fail, for comparing
``terraform test`` on a root and on its flattened output (issue 27, item 4).

``generate_root(seed)`` returns the files of one workspace (relative path -> text) and the root's
directory in it. Every tree uses only ``terraform_data``, locals, variables and outputs (nothing to
download). What varies with the seed: the root inside the workspace or in ``live/`` with a module
in ``../shared`` (the output then holds the root in ``live/``), a module called through a symlink
(its output place differs from the source a run names), test files in the root or in ``tests/``,
native or JSON syntax, and runs of several kinds: assertions that hold or fail, on outputs of the
root and its modules; a run applying a helper module under ``tests/`` and later runs reading its
outputs; a run applying the module under test directly (``module { source = ... }``);
``expect_failures`` on a variable's validation that is, or is not, violated; a file read through
a path relative to the working directory; a ``tests/`` directory that also holds configuration
(a debug root ``tests/debug.tf`` calling ``../``, or a module the root calls as ``./tests``).
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

from support.oracle import Terraform

__all__ = ["ParityRoot", "generate_root", "run_results", "terraform_test", "write_workspace"]

_WORDS = ("alpha", "bravo", "cedar", "delta", "ember", "fjord", "gamma", "heron")


@dataclass(frozen=True)
class ParityRoot:
    """A workspace's files, the root module's directory in it ("" or "live"), the symlinks to make
    (link path -> target, relative), and how many runs its test files hold."""

    files: dict[str, str]
    root: str
    links: dict[str, str]
    runs: int


def _condition(expr: str, syntax: str) -> str:
    return expr if syntax == "hcl" else "${" + expr + "}"


def _runs(rng: random.Random, name: str, module_src: str, helper: bool) -> list[dict[str, object]]:
    """A test file's runs as data: each ``{"name", "command", "variables", "asserts", "module",
    "expect_failures"}``."""
    runs: list[dict[str, object]] = []
    if helper:
        runs.append({"name": "setup", "command": "apply", "module": "./tests/helper", "asserts": []})
    for i in range(rng.randint(2, 4)):
        kind = rng.choice(("pass", "fail", "module", "expect_ok", "expect_bad", "file", "helper"))
        value = rng.choice(_WORDS)
        run: dict[str, object] = {"name": f"r{i}_{kind}", "command": rng.choice(("plan", "apply"))}
        if kind == "pass":
            run["variables"] = {"name": value}
            run["asserts"] = [f'output.child == "{value.upper()}"', f"output.size == {len(value)}"]
        elif kind == "fail":
            run["variables"] = {"name": value}
            run["asserts"] = [f'output.child == "{value}"']
        elif kind == "module":
            run["module"] = module_src
            run["variables"] = {"x": value}
            good = rng.random() < 0.5
            run["asserts"] = [f'output.out == "{value.upper() if good else value}"']
        elif kind == "expect_ok":
            run["command"] = "plan"
            run["variables"] = {"name": "much-too-long-a-name"}
            run["expect_failures"] = ["var.name"]
            run["asserts"] = []
        elif kind == "expect_bad":
            run["command"] = "plan"
            run["variables"] = {"name": value}
            run["expect_failures"] = ["var.name"]
            run["asserts"] = []
        elif kind == "file":
            run["variables"] = {"name": name}
            good = rng.random() < 0.5
            rhs = 'trimspace(file("./testdata/expected.txt"))'
            run["asserts"] = [f"output.child {'==' if good else '!='} {rhs}"]
        else:
            if not helper:
                run["asserts"] = ["output.size > 0"]
            else:
                good = rng.random() < 0.5
                run["asserts"] = [f'run.setup.prefix == "{"pre" if good else "post"}"']
        runs.append(run)
    if not any("module" in r and r["module"] == module_src for r in runs):
        # Every file runs the module under test directly once: the source that needs rewriting
        # when the module's output place differs (a symlink, a root in live/).
        value = rng.choice(_WORDS)
        runs.append(
            {
                "name": "direct",
                "command": "plan",
                "module": module_src,
                "variables": {"x": value},
                "asserts": [f'output.out == "{value.upper()}"'],
            }
        )
    # A run whose expect_failures does not happen stops the file (Terraform skips the runs after
    # it): those go last, so the other runs are compared on their own results.
    return sorted(runs, key=lambda r: (r["name"] != "setup", str(r["name"]).endswith("expect_bad")))


def _native(runs: list[dict[str, object]]) -> str:
    out: list[str] = []
    for run in runs:
        out.append(f'run "{run["name"]}" {{')
        out.append(f"  command = {run['command']}")
        if "module" in run:
            out.append(f'  module {{\n    source = "{run["module"]}"\n  }}')
        variables = run.get("variables")
        if isinstance(variables, dict):
            out.append("  variables {")
            out.extend(f'    {k} = "{v}"' for k, v in variables.items())
            out.append("  }")
        if "expect_failures" in run:
            out.append(f"  expect_failures = [{', '.join(run['expect_failures'])}]")  # type: ignore[arg-type]
        for condition in run.get("asserts", ()):  # type: ignore[attr-defined]
            out.append(f'  assert {{\n    condition     = {condition}\n    error_message = "no"\n  }}')
        out.append("}\n")
    return "\n".join(out)


def _json(runs: list[dict[str, object]]) -> str:
    doc: dict[str, object] = {}
    for run in runs:
        body: dict[str, object] = {"command": run["command"]}
        if "module" in run:
            body["module"] = {"source": run["module"]}
        if "variables" in run:
            body["variables"] = run["variables"]
        if "expect_failures" in run:
            body["expect_failures"] = run["expect_failures"]
        asserts = run.get("asserts") or []
        if asserts:
            body["assert"] = [{"condition": _condition(c, "json"), "error_message": "no"} for c in asserts]  # type: ignore[attr-defined]
        doc.setdefault("run", {})[str(run["name"])] = body  # type: ignore[index]
    return json.dumps(doc, indent=2) + "\n"


def generate_root(seed: int) -> ParityRoot:
    """Return the workspace of ``seed`` (see the module docstring)."""
    rng = random.Random(seed)
    live = rng.random() < 0.3
    root = "live" if live else ""
    linked = not live and rng.random() < 0.4
    pre = "live/" if live else ""
    child_dir = "shared/child" if live else ("modules/real" if linked else "modules/child")
    child_src = "../shared/child" if live else ("./linked" if linked else "./modules/child")
    name = rng.choice(_WORDS)
    files: dict[str, str] = {
        f"{pre}main.tf": (
            'variable "name" {\n  type    = string\n  default = "' + name + '"\n'
            "  validation {\n    condition     = length(var.name) < 12\n"
            '    error_message = "The name is too long."\n  }\n}\n\n'
            f'module "child" {{\n  source = "{child_src}"\n  x      = var.name\n}}\n\n'
            'resource "terraform_data" "r" {\n  input = var.name\n}\n\n'
            'output "child" {\n  value = module.child.out\n}\n\n'
            'output "size" {\n  value = length(terraform_data.r.input)\n}\n'
        ),
        f"{child_dir}/main.tf": (
            'variable "x" {\n  type = string\n}\n\n'
            'resource "terraform_data" "c" {\n  input = var.x\n}\n\n'
            'output "out" {\n  value = upper(var.x)\n}\n'
        ),
        f"{pre}testdata/expected.txt": name.upper() + "\n",
    }
    links = {"linked": "modules/real"} if linked else {}
    helper = rng.random() < 0.6
    if helper:
        files[f"{pre}tests/helper/main.tf"] = (
            'resource "terraform_data" "h" {\n  input = "pre"\n}\n\n'
            'output "prefix" {\n  value = terraform_data.h.output\n}\n'
        )
    total = 0
    for n in range(rng.randint(1, 2)):
        syntax = "json" if rng.random() < 0.3 else "hcl"
        where = rng.choice(("", "tests/"))
        runs = _runs(rng, name, child_src, helper)
        total += len(runs)
        files[f"{pre}{where}t{n}.tftest.{syntax}"] = _native(runs) if syntax == "hcl" else _json(runs)
    # Drawn last, so the trees of earlier seeds stay as they were: a tests/ directory that holds
    # configuration too (issue 39 item 0), as a debug root calling "../" or as a module the root calls.
    shape = rng.random()
    if shape < 0.45:
        if shape < 0.25:
            files[f"{pre}tests/debug.tf"] = 'module "dbg" {\n  source = "../"\n  name   = "dbg"\n}\n'
        else:
            files[f"{pre}tests/main.tf"] = 'output "t" {\n  value = 1\n}\n'
            files[f"{pre}main.tf"] += '\nmodule "t" {\n  source = "./tests"\n}\n'
        if not any(rel.startswith(f"{pre}tests/t") for rel in files):
            first = next(rel for rel in files if rel.startswith(f"{pre}t0.tftest."))
            files[f"{pre}tests/{first[len(pre) :]}"] = files.pop(first)
    return ParityRoot(files=files, root=root, links=links, runs=total)


_FILE_LINE = re.compile(r"^(\S+\.(?:tftest|tofutest)\.(?:hcl|json))\.\.\. ")
_RUN_LINE = re.compile(r'^\s+run "([^"]+)"\.\.\. (pass|fail|skip|error)')


def run_results(text: str) -> list[tuple[str, str, str]]:
    """Return ``(test file, run, status)`` for each run ``terraform test -no-color`` reported."""
    results: list[tuple[str, str, str]] = []
    current = ""
    for line in text.splitlines():
        m = _FILE_LINE.match(line)
        if m:
            current = m.group(1)
            continue
        m = _RUN_LINE.match(line)
        if m:
            results.append((current, m.group(1), m.group(2)))
    return results


def write_workspace(tree: ParityRoot, where: Path) -> Path:
    """Write ``tree`` under ``where`` (links included) and return its root module's directory."""
    for rel, text in tree.files.items():
        path = where / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for link, target in tree.links.items():
        (where / link).symlink_to(target, target_is_directory=True)
    return where / tree.root if tree.root else where


def terraform_test(tf: Terraform, directory: Path) -> tuple[list[tuple[str, str, str]], str]:
    """Run ``terraform init`` and ``terraform test`` in ``directory``: the runs' results and the
    whole output (for messages)."""
    init = tf.run("init", "-backend=false", "-input=false", "-no-color", cwd=directory)
    if init.returncode != 0:
        return [], init.stdout + init.stderr
    test = tf.run("test", "-no-color", cwd=directory)
    return run_results(test.stdout), test.stdout + test.stderr
