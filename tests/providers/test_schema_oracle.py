"""Terraform with a real provider as the oracle: the output passes the provider's own schema checks.

Some checks need a provider's schema (issue 14, item 3a): an attribute of list/set-of-object type
that native syntax lets users write as blocks (``aws_security_group``'s ``egress``). These tests
install hashicorp/aws from a filesystem mirror (``FLATTEN_TEST_PROVIDER_MIRROR``, default
``/opt/tf-plugins``) and skip, naming it, when there is none. Planning needs no AWS account: the
provider is configured with dummy credentials and every check that would call AWS skipped, and
the trees hold only resources that plan without API calls.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from support.files import write_tree
from support.oracle import Terraform, terraform, validate_json
from support.paths import SAMPLES

from flatten.build import build
from flatten.lang.options import Options
from flatten.stages.emit import write_tree as write_output

MIRROR = Path(os.environ.get("FLATTEN_TEST_PROVIDER_MIRROR", "/opt/tf-plugins"))
AWS = MIRROR / "registry.terraform.io" / "hashicorp" / "aws"

PROVIDER = """
terraform {
  required_providers {
    aws = { source = "hashicorp/aws", version = ">= 5.0" }
  }
}
provider "aws" {
  region                      = "us-east-1"
  access_key                  = "dummy"
  secret_key                  = "dummy"
  skip_credentials_validation = true
  skip_requesting_account_id  = true
  skip_metadata_api_check     = true
  skip_region_validation      = true
}
"""

# Attributes written as blocks (some arguments left out, which block form allows), next to
# real nested blocks and dynamic blocks of the same names.
ATTRIBUTE_BLOCKS = {
    "main.tf": PROVIDER
    + """
variable "ports" {
  type    = list(number)
  default = [80, 443]
}

resource "aws_security_group" "web" {
  name = "web"
  egress {
    from_port   = 0
    to_port     = 0
    protocol    = "-1"
    cidr_blocks = ["0.0.0.0/0"]
  }
  dynamic "ingress" {
    for_each = var.ports
    content {
      from_port   = ingress.value
      to_port     = ingress.value
      protocol    = "tcp"
      cidr_blocks = ["10.0.0.0/8"]
    }
  }
  ingress {
    from_port = 22
    to_port   = 22
    protocol  = "tcp"
    self      = true
  }
  timeouts {
    create = "5m"
  }
}

resource "aws_route_table" "rt" {
  vpc_id = "vpc-12345678"
  route {
    cidr_block = "0.0.0.0/0"
    gateway_id = "igw-12345678"
  }
}

resource "aws_network_acl" "acl" {
  vpc_id = "vpc-12345678"
  ingress {
    protocol   = "tcp"
    rule_no    = 100
    action     = "allow"
    cidr_block = "10.0.0.0/8"
    from_port  = 443
    to_port    = 443
  }
}
""",
}


@pytest.fixture(scope="module")
def aws(tmp_path_factory: pytest.TempPathFactory) -> tuple[Terraform, str]:
    """Terraform and a CLI configuration that installs hashicorp/aws from the mirror."""
    tf = terraform()
    if not AWS.is_dir():
        pytest.skip(
            f"no hashicorp/aws provider in a filesystem mirror at {MIRROR} (FLATTEN_TEST_PROVIDER_MIRROR)"
        )
    cache = tmp_path_factory.mktemp("plugin-cache")
    config = tmp_path_factory.mktemp("tfrc") / "mirror.tfrc"
    config.write_text(
        f'plugin_cache_dir = "{cache}"\n'
        "provider_installation {\n"
        f'  filesystem_mirror {{\n    path    = "{MIRROR}"\n'
        '    include = ["registry.terraform.io/hashicorp/aws"]\n  }\n'
        '  direct {\n    exclude = ["registry.terraform.io/hashicorp/aws"]\n  }\n}\n',
        encoding="utf-8",
    )
    return tf, str(config)


def _flatten(source: Path, out: Path) -> Path:
    result, diags = build(source, options=Options())
    assert not diags.has_errors, diags
    write_output(out, result.tree.files, result.tree.copies)
    return out


def _validate(tf: Terraform, config: str, directory: Path) -> dict[str, Any]:
    return validate_json(tf, directory, config=config, init_must_pass=True)


@pytest.mark.oracle
@pytest.mark.parametrize("sample", ["web-service", "multi-region"])
def test_samples_pass_the_providers_schema(sample: str, aws: tuple[Terraform, str], tmp_path: Path) -> None:
    tf, config = aws
    original = tmp_path / "original"
    shutil.copytree(SAMPLES / sample, original)
    assert _validate(tf, config, original)["valid"]
    verdict = _validate(tf, config, _flatten(original, tmp_path / "flat"))
    assert verdict["valid"], verdict["diagnostics"]


def _planned(tf: Terraform, config: str, directory: Path) -> Any:
    init = tf.run("init", "-backend=false", "-input=false", "-no-color", cwd=directory, config=config)
    assert init.returncode == 0, init.stderr
    plan = tf.run("plan", "-input=false", "-no-color", "-out=p.plan", cwd=directory, config=config)
    assert plan.returncode == 0, plan.stderr + plan.stdout
    show = json.loads(tf.run("show", "-json", "p.plan", cwd=directory, config=config).stdout)
    return show["planned_values"]


@pytest.mark.oracle
def test_attributes_written_as_blocks_plan_like_the_original(
    aws: tuple[Terraform, str], tmp_path: Path
) -> None:
    tf, config = aws
    original = write_tree(tmp_path / "original", ATTRIBUTE_BLOCKS)
    flat = _flatten(original, tmp_path / "flat")
    assert _planned(tf, config, flat) == _planned(tf, config, original)
