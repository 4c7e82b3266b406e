"""Provider ``for_each`` under ``--inline`` in the OpenTofu dialect (issue 29 item 3).

A call passed one instance of a ``for_each`` provider is inlined with that instance: its
resources name ``terraform.by_region["us-west-2"]`` in the caller; so is each instance of a call
with a literal ``for_each`` passed ``terraform.by_region[each.key]``. A call whose instance key
does not read the same in the caller (``var.region``) stays a call, with a warning, and the
build still succeeds. Messages name OpenTofu in the opentofu dialect.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from support.files import write_tree

_ROOT = """
terraform {
  required_providers {
    terraform = { source = "terraform.io/builtin/terraform" }
  }
}
variable "region" {
  type    = string
  default = "us-east-1"
}
provider "terraform" {
  alias    = "by_region"
  for_each = toset(["us-east-1", "us-west-2"])
}
module "one" {
  source    = "./one"
  providers = { terraform = terraform.by_region["us-west-2"] }
}
module "two" {
  source    = "./one"
  for_each  = toset(["us-east-1", "us-west-2"])
  providers = { terraform = terraform.by_region[each.key] }
}
"""
_ONE = """
terraform {
  required_providers {
    terraform = { source = "terraform.io/builtin/terraform" }
  }
}
resource "terraform_data" "r" {}
"""


def _flatten(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "flatten", *args], capture_output=True, text=True)


def test_one_instance_is_inlined_with_its_key(tmp_path: Path) -> None:
    src = write_tree(tmp_path / "src", {"main.tf": _ROOT, "one/main.tf": _ONE})
    out = tmp_path / "out"
    done = _flatten("build", "--inline", "--dialect", "opentofu", "--out", str(out), str(src))
    assert done.returncode == 0, done.stderr
    main = json.loads((out / "main.tf.json").read_text())
    assert main["resource"]["terraform_data"]["one__r"]["provider"] == 'terraform.by_region["us-west-2"]'
    # A call with a literal for_each is one call per instance, each given its own instance.
    assert "module" not in main
    assert (
        main["resource"]["terraform_data"]["two__us-east-1__r"]["provider"]
        == 'terraform.by_region["us-east-1"]'
    )
    assert (
        main["resource"]["terraform_data"]["two__us-west-2__r"]["provider"]
        == 'terraform.by_region["us-west-2"]'
    )
    assert 'module.two["us-east-1"].terraform_data.r' in [m["from"] for m in main["moved"]]
    assert "Warning" not in done.stderr
    # The output is a valid configuration for OpenTofu's provider checks too.
    again = _flatten("build", "--dialect", "opentofu", "--out", str(tmp_path / "again"), str(out))
    assert again.returncode == 0, again.stderr
    assert "Error" not in again.stderr


def test_a_key_that_does_not_read_the_same_keeps_the_call(tmp_path: Path) -> None:
    root = _ROOT.replace('by_region["us-west-2"]', "by_region[var.region]")
    src = write_tree(tmp_path / "src", {"main.tf": root, "one/main.tf": _ONE})
    out = tmp_path / "out"
    done = _flatten("build", "--inline", "--dialect", "opentofu", "--out", str(out), str(src))
    assert done.returncode == 0, done.stderr
    assert "Warning: Module call not inlined" in done.stderr
    assert "module.one stays a module call because" in done.stderr
    main = json.loads((out / "main.tf.json").read_text())
    assert main["module"]["one"]["providers"] == {"terraform": "terraform.by_region[var.region]"}


def test_wiring_check_names_opentofu(tmp_path: Path) -> None:
    # The last check's message (a graph whose kept call lost its configuration alias entry).
    from flatten.inline import _check
    from flatten.lang.dialect import Dialect
    from flatten.lang.options import Options
    from flatten.providers import wire_providers
    from flatten.stages.graph import build_graph

    aliases = (
        "terraform {\n  required_providers {\n    terraform = {\n"
        '      source = "terraform.io/builtin/terraform"\n'
        "      configuration_aliases = [terraform.log]\n    }\n  }\n}\n"
    )
    write_tree(
        tmp_path,
        {
            "main.tf": 'provider "terraform" {\n  alias = "log"\n}\nmodule "b" {\n  source = "./b"\n}\n'
            + aliases.replace("      configuration_aliases = [terraform.log]\n", ""),
            "b/main.tf": aliases + 'resource "terraform_data" "b" {\n  provider = terraform.log\n}\n',
        },
    )
    options = Options(dialect=Dialect.OPENTOFU)
    graph, _ = build_graph(tmp_path, options=options)
    wiring, _ = wire_providers(graph, options=options, validate=False)
    diags, _ = _check(wiring, graph, [], options)
    assert diags.errors, "the check found nothing"
    assert all("OpenTofu would reject" in d.detail and "Terraform" not in d.detail for d in diags.errors)
