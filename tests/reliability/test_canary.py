"""The canary property on every command (issue 38): tests/support/canary.py.

A deterministic sample here (every target with one kind and one command each, rotating, and
every command once per kind on a cache, an OUT and a ROOT target); scripts/fuzz ``--kinds
canary`` runs random cases by the thousand (docs/reliability.md, "The gate").
"""

from __future__ import annotations

import itertools
import os
import shutil
from pathlib import Path

import pytest
from support import canary
from support.remote import CHILD
from support.servers import HTTPServer, Reply, make_tar

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero and FIFOs")


def _cases() -> list[canary.Case]:
    kinds = itertools.cycle(canary.KINDS)
    commands = itertools.cycle(canary.COMMANDS)
    cases = [canary.Case(target, next(kinds), next(commands)) for target in canary.TARGETS]
    for kind in canary.KINDS:
        targets = itertools.cycle(("cache/v1/packages", "out/main.tf.json", "root/.terraformignore"))
        cases += [canary.Case(next(targets), kind, command) for command in canary.COMMANDS]
    return cases


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> object:
    srv = HTTPServer()
    srv.routes["/app.tgz"] = Reply(200, make_tar(CHILD))
    box = tmp_path_factory.mktemp("canary-template") / "t"
    try:
        yield canary.prime(box, srv.url)
    finally:
        srv.close()


@pytest.mark.parametrize("case", _cases(), ids=lambda c: c.name)
def test_the_canary_survives_every_command(template: Path, tmp_path: Path, case: canary.Case) -> None:
    if case.command == "affected --since" and shutil.which("git") is None:
        pytest.skip("the git binary is not installed (affected --since reads the tree at REF from git)")
    canary.run_case(template, tmp_path / "box", case)
