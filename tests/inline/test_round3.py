"""Issue 42: inlining linear in counted calls, no refusal of a valid provider tree, every file read.

Each promise is checked the way a user relies on it: Terraform applies the original, plans the
``--inline`` output against that state, and sees only moves (``support/inline_check.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.inline import inline_build
from support.inline_check import check_tree
from support.inline_shapes import counted_tree
from support.inline_trees import tree
from support.oracle import terraform

import flatten.inline._rewrite as rewrite_module


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


# -- item 1: a counted or for_each call is split in proportion to what it touches ------------------


def _rewrites(tmp_path: Path, n: int, monkeypatch: pytest.MonkeyPatch) -> int:
    """How many bodies inlining ``counted_tree(n)`` rewrites (every rewrite goes through rewrite_body)."""
    root = tmp_path / f"t{n}"
    _write(root, counted_tree(n))
    calls = 0
    real = rewrite_module.rewrite_body

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(rewrite_module, "rewrite_body", counting)
    result, _files, diags = inline_build(root)
    monkeypatch.undo()
    assert not diags.has_errors, diags
    assert len(result.inlined) == n
    return calls


def test_splitting_counted_calls_is_linear(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Before issue 42 each split rewrote every block of the caller: twice the calls, about four
    # times the rewrites (100 calls: 1,872; 200: 6,853). Now each call's own blocks and one pass
    # over the caller: a fixed number of rewrites per call (352 and 702).
    small, large = _rewrites(tmp_path, 100, monkeypatch), _rewrites(tmp_path, 200, monkeypatch)
    assert large <= 2.2 * small, (small, large)
    assert large <= 5 * 200, large


@pytest.mark.oracle
def test_counted_shape_plans_only_moves(tmp_path: Path) -> None:
    # The bench's counted shape (count, for_each, a provider alias passed to undeclared modules,
    # depends_on a counted call, outputs read through [0] and ["a"]), whole tree inlined.
    outcomes = check_tree(counted_tree(41), tmp_path, terraform(), modules=False)
    assert [o.kind for o in outcomes] == ["ok"], outcomes


# -- item 2: a kept call moved up gets nothing its caller would type differently --------------------

_ALIAS_TO_KEPT = {
    "main.tf": """
provider "terraform" {
  alias = "audit"
}
module "a" {
  source    = "./a"
  providers = { terraform = terraform.audit }
}
""",
    "a/main.tf": """
locals {
  names = ["x", "y"]
}
module "k" {
  source   = "../k"
  for_each = toset(local.names)
}
""",
    "k/main.tf": 'resource "terraform_data" "r" {}\n',
}


def test_kept_call_moved_up_gets_no_required_providers(tmp_path: Path) -> None:
    _write(tmp_path, _ALIAS_TO_KEPT)
    result, files, diags = inline_build(tmp_path)
    assert not diags.has_errors, [str(d) for d in diags]
    root = json.loads(files["main.tf.json"])
    assert root["module"]["a__k"]["for_each"] == "${toset(local.a__names)}"
    assert root["module"]["a__k"]["providers"] == {"terraform": "terraform.audit"}
    assert root["moved"] == [{"from": "module.a.module.k", "to": "module.a__k"}]
    assert "terraform" not in json.loads(files["k/main.tf.json"])  # no required_providers added
    assert result.inlined == ("module.a",)


@pytest.mark.oracle
def test_kept_for_each_call_under_passed_alias_plans_only_moves(tmp_path: Path) -> None:
    outcomes = check_tree(_ALIAS_TO_KEPT, tmp_path, terraform())
    assert {o.mode: o.kind for o in outcomes} == {
        "whole": "ok",
        "module.a": "ok",
        "module.a.module.k": "refused",
    }


# -- item 3: a file read through path.module goes where the inlined configuration looks ------------

_STATE = {
    "version": 4,
    "terraform_version": "1.11.4",
    "serial": 1,
    "lineage": "0b7f9a2e-0000-4000-8000-000000000042",
    "outputs": {"v": {"value": "hello", "type": "string"}},
    "resources": [],
    "check_results": None,
}

_READS = {
    "main.tf": """
module "inner" {
  source = "./modules/inner"
}
output "s" {
  value = module.inner.s
}
""",
    "modules/inner/main.tf": """
data "terraform_remote_state" "s" {
  backend = "local"
  config  = { path = "${path.module}/snap.tfstate" }
}
resource "terraform_data" "r" {
  input = [data.terraform_remote_state.s.outputs.v, file("${path.module}/.hidden.json")]
}
output "s" {
  value = terraform_data.r.output
}
""",
    "modules/inner/snap.tfstate": json.dumps(_STATE, indent=2) + "\n",
    "modules/inner/.hidden.json": '{"k": 1}\n',
}


def test_files_read_through_path_module_are_copied(tmp_path: Path) -> None:
    _write(tmp_path, _READS)
    result, files, diags = inline_build(tmp_path)
    assert not diags.has_errors, [str(d) for d in diags]
    assert result.inlined == ("module.inner",)
    assert files["modules/inner/snap.tfstate"] == _READS["modules/inner/snap.tfstate"].encode()
    assert files["modules/inner/.hidden.json"] == b'{"k": 1}\n'


@pytest.mark.oracle
def test_state_snapshot_read_through_path_module_plans_only_moves(tmp_path: Path) -> None:
    outcomes = check_tree(_READS, tmp_path, terraform())
    assert {o.mode: o.kind for o in outcomes} == {"whole": "ok", "module.inner": "ok"}


@pytest.mark.oracle
@pytest.mark.parametrize("seed", [0])
def test_tree_without_required_providers_plans_only_moves(seed: int, tmp_path: Path) -> None:
    # inline-check --bare's seed 0: the root passes terraform.src to modules that declare no
    # provider, and a for_each known only at plan time keeps a call below one of them. Before
    # issue 42 the whole tree was refused ("Provider type mismatch").
    outcomes = check_tree(tree(seed, providers="bare"), tmp_path, terraform(), modules=False)
    assert [o.kind for o in outcomes] == ["ok"], outcomes


def test_split_undone_when_an_instance_cannot_be_inlined(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The instances are inlined into the caller in place; when one cannot be, the journal undoes
    # what the others wrote, and the call stays a call exactly as written.
    import flatten.inline as inline_module

    _write(
        tmp_path,
        {
            "main.tf": """
module "a" {
  source = "./m"
  v      = "a"
}
module "x" {
  source = "./m"
  count  = 2
  v      = "x${count.index}"
}
module "z" {
  source = "./m"
  v      = module.x[1].o
}
output "o" {
  value = [module.a.o, module.x[0].o, module.z.o]
}
""",
            "m/main.tf": 'variable "v" {}\nresource "terraform_data" "r" {\n  input = var.v\n}\n'
            'output "o" {\n  value = terraform_data.r.output\n}\n',
        },
    )
    real = inline_module.inline_call

    def refuse_second(ctx, host, name, child, origin=None):  # type: ignore[no-untyped-def]
        return "refused for the test" if name == "x__1" else real(ctx, host, name, child, origin)

    monkeypatch.setattr(inline_module, "inline_call", refuse_second)
    result, files, diags = inline_build(tmp_path)
    assert not diags.has_errors, [str(d) for d in diags]
    assert result.inlined == ("module.a", "module.z")
    assert [(k.address, k.reason) for k in result.kept] == [("module.x", "refused for the test")]
    root = json.loads(files["main.tf.json"])
    assert sorted(root["module"]) == ["x"]
    assert root["module"]["x"]["count"] == 2
    assert sorted(root["resource"]["terraform_data"]) == ["a__r", "z__r"]
    assert not any("x__" in name for name in root["locals"])
    assert root["locals"]["z__var__v"] == "${module.x[1].o}"
    assert root["output"]["o"]["value"] == ["${local.a__out__o}", "${module.x[0].o}", "${local.z__out__o}"]
