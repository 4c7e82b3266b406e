"""Terraform as the oracle for provider wiring.

For every sample and every Terraform-dialect test tree: (a) the verdict (accept, or reject with
the same error summaries) of ``terraform get`` + ``terraform providers`` (both load and validate
the configuration; provider schemas are not needed) agrees with ``flatten build``; (b) the
requirement tree ``terraform providers`` prints agrees with ``flatten providers --json``. For the
tree that uses only the builtin ``terraform`` provider, ``terraform validate`` accepts it and the
``provider_config_key`` of every resource in ``terraform show -json`` of a plan matches flatten's
resolution, for the original and for the ``--explicit-providers`` output. Skips only when
Terraform is unavailable.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from support.cases import case_dirs
from support.oracle import terraform
from support.paths import DATA as TEST_DATA
from support.paths import SAMPLES

from flatten.build import build
from flatten.lang.options import Options
from flatten.providers import ProviderWiring, wire_providers
from flatten.providers.audit import audit_json
from flatten.stages.graph import build_graph

DATA = TEST_DATA / "providers"
TREES = sorted(case_dirs(SAMPLES) + [p for p in case_dirs(DATA) if not p.name.startswith("tofu-")])
ANSI = re.compile(r"\x1b\[[0-9;]*m")
BUILTIN = DATA / "oracle-builtin"


def _copy(src: Path, tmp: Path) -> Path:
    dest = tmp / src.name
    shutil.copytree(src, dest)
    return dest


def _errors(text: str) -> set[str]:
    out = set()
    for line in ANSI.sub("", text).splitlines():
        m = re.search(r"Error: (.+?)\s*$", line)
        if m:
            out.add(m.group(1))
    return out


def _tree(stdout: str) -> dict[str, set[str]]:
    """Parse ``terraform providers``: module address -> required provider FQNs."""
    out: dict[str, set[str]] = {}
    stack: list[tuple[int, str]] = []
    for raw in ANSI.sub("", stdout).splitlines():
        if raw.strip() == ".":
            out[""] = set()
            stack = [(-1, "")]
            continue
        m = re.match(r"^([│ \u00a0]*)[├└]── (.*)$", raw)
        if not m or not stack:
            continue
        depth = len(m.group(1)) // 4
        item = m.group(2)
        while stack and stack[-1][0] >= depth:
            stack.pop()
        parent = stack[-1][1] if stack else ""
        if item.startswith("provider["):
            out.setdefault(parent, set()).add(item[len("provider[") : item.index("]")])
        elif item.startswith("module."):
            name = item.split()[0]
            address = f"{parent}.{name}" if parent else name
            out.setdefault(address, set())
            stack.append((depth, address))
    return out


@pytest.mark.parametrize("root", TREES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_verdict_and_requirement_tree(root: Path, tmp_path: Path) -> None:
    tf = terraform()
    work = _copy(root, tmp_path)
    got = tf.run("get", cwd=work)
    res = tf.run("providers", cwd=work) if got.returncode == 0 else got
    tf_errors = _errors(got.stderr + got.stdout) | _errors(res.stderr)
    _, diags = build(root, options=Options())
    ours = {d.summary for d in diags.errors}
    assert (res.returncode != 0) == diags.has_errors, (res.stderr, diags)
    assert ours == tf_errors
    if diags.has_errors:
        return
    options = Options()
    graph, _ = build_graph(root, options=options)
    wiring, wdiags = wire_providers(graph, options=options)
    doc = audit_json(wiring, wdiags)
    mine = {
        m["address"]: {r["provider"] for r in m["requirements"]}  # type: ignore[index]
        for m in doc["modules"]  # type: ignore[union-attr]
    }
    theirs = _tree(res.stdout)
    assert {k: v for k, v in mine.items() if v} == {k: v for k, v in theirs.items() if v}


def _config_keys(wiring: ProviderWiring) -> dict[str, str]:
    """flatten's resolution in ``provider_config_key`` form: ``[module.x:]local[.alias]``."""
    out: dict[str, str] = {}
    for res in wiring.resources():
        config = res.config
        assert config is not None
        decl = wiring.decls[config.module]
        name = next(
            (r.name for r in decl.requirements if r.provider == config.provider), config.provider.type
        )
        key = name + (f".{config.alias}" if config.alias else "")
        out[res.address] = f"{config.module_address}:{key}" if config.module else key
    return out


def _plan_keys(tf, work: Path) -> dict[str, str]:  # type: ignore[no-untyped-def]
    assert tf.run("init", "-backend=false", "-input=false", cwd=work).returncode == 0
    validate = tf.run("validate", "-json", cwd=work)
    assert json.loads(validate.stdout)["valid"], validate.stdout
    plan = tf.run("plan", "-input=false", "-out=tf.plan", cwd=work)
    assert plan.returncode == 0, plan.stderr
    show = json.loads(tf.run("show", "-json", "tf.plan", cwd=work).stdout)
    out: dict[str, str] = {}

    def walk(module: dict, prefix: str) -> None:  # type: ignore[type-arg]
        for r in module.get("resources", []):
            out[prefix + r["address"]] = r["provider_config_key"]
        for name, call in module.get("module_calls", {}).items():
            walk(call["module"], f"{prefix}module.{name}.")

    walk(show["configuration"]["root_module"], "")
    return out


def test_builtin_provider_config_keys(tmp_path: Path) -> None:
    tf = terraform()
    options = Options()
    graph, _ = build_graph(BUILTIN, options=options)
    wiring, diags = wire_providers(graph, options=options)
    assert not diags
    assert _plan_keys(tf, _copy(BUILTIN, tmp_path)) == _config_keys(wiring)


def test_explicit_providers_plan_the_same(tmp_path: Path) -> None:
    tf = terraform()
    options = Options()
    graph, _ = build_graph(BUILTIN, options=options)
    wiring, _ = wire_providers(graph, options=options)
    result, diags = build(BUILTIN, options=Options(explicit_providers=True))
    assert not diags.has_errors
    out = tmp_path / "explicit"
    for rel, data in result.files.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(data)
    text = (out / "main.tf.json").read_text()
    assert '"providers"' in text
    assert _plan_keys(tf, out) == _config_keys(wiring)


CONSTRAINTS = {
    "main.tf": """
terraform {
  required_providers {
    aws    = { source = "hashicorp/aws", version = ">= 2.23, < 6, != 3.1" }
    null   = { source = "hashicorp/null", version = "~> 3" }
    random = { version = "3.1" }
    tls    = { version = "~>4.0.1, >=1" }
  }
}
module "m" {
  source = "./m"
}
""",
    "m/main.tf": """
terraform {
  required_providers {
    aws = { source = "hashicorp/aws", version = "~> 5.0, >= 5.0.0, ~> 5.1.2-beta.1" }
  }
}
""",
}


def test_constraints_are_shown_as_terraform_providers_shows_them(tmp_path: Path) -> None:
    """Issue 14 item 10: normalised, deduplicated, sorted (providerreqs.VersionConstraintsString)."""
    tf = terraform()
    root = tmp_path / "root"
    for rel, text in CONSTRAINTS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    assert tf.run("get", cwd=root).returncode == 0
    res = tf.run("providers", cwd=root)
    assert res.returncode == 0, res.stderr
    theirs = {
        m.group(1): m.group(2)
        for m in re.finditer(r"provider\[(\S+)\] (.+)$", ANSI.sub("", res.stdout), re.MULTILINE)
        if "hashicorp/aws" not in m.group(1)  # aws appears twice: checked below per module
    }
    aws = re.findall(r"provider\[registry.terraform.io/hashicorp/aws\] (.+)$", res.stdout, re.MULTILINE)

    options = Options()
    graph, _ = build_graph(root, options=options)
    wiring, wdiags = wire_providers(graph, options=options)
    doc = audit_json(wiring, wdiags)
    mine = {
        (m["address"], r["provider"]): r["version"]  # type: ignore[index]
        for m in doc["modules"]  # type: ignore[union-attr]
        for r in m["requirements"]  # type: ignore[index]
    }
    for provider, version in theirs.items():
        assert mine[("", provider)] == version
    assert aws == [
        mine[("", "registry.terraform.io/hashicorp/aws")],
        mine[("module.m", "registry.terraform.io/hashicorp/aws")],
    ]
