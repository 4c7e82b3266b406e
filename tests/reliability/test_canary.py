"""The canary property on every command (issue 38): tests/support/canary.py.

A deterministic sample here (every target with one kind and one command each, rotating, and
every command once per kind on a cache, an OUT and a ROOT target); scripts/fuzz ``--kinds
canary`` runs random cases by the thousand (docs/reliability.md, "The gate").
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import canary
from support.files import write_tree
from support.oracle import terraform

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
    canary.warm()  # each command a forked child of this process (canary.run_case ``forked``)
    base = tmp_path_factory.mktemp("canary-template")
    with canary.serving(base) as (url, git_url):
        yield canary.prime(base / "t", url, git_url)


@pytest.mark.parametrize("case", _cases(), ids=lambda c: c.name)
def test_the_canary_survives_every_command(template: Path, tmp_path: Path, case: canary.Case) -> None:
    if case.command == "affected --since" and shutil.which("git") is None:
        pytest.skip("the git binary is not installed (affected --since reads the tree at REF from git)")
    canary.run_case(template, tmp_path / "box", case, forked=True)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the edited module is parsed in a forked child")
def test_the_edited_case_rebuilds_from_the_previous_build(
    template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The EDITED command's cases reach what they are for: the flatten program finds the alias of
    # the build before the edit and forks the edited module's parse before typer is imported
    # (incremental.rebuild_early), which reads the previous version and the new one, each in a
    # child of its own (fanout.run_all; written to the log from that forked child).
    from flatten.shell import fanout, incremental

    log = tmp_path / "log"
    real_early, real_all = incremental.rebuild_early, fanout.run_all

    def early(*args: object, **kwargs: object) -> object:
        with open(log, "a") as f:
            f.write(f"early typer={'typer' in sys.modules}\n")
        return real_early(*args, **kwargs)  # type: ignore[arg-type]

    def apart(count: int, job: object, **kwargs: object) -> object:
        with open(log, "a") as f:
            f.write("apart\n")
        return real_all(count, job, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(incremental, "rebuild_early", early)
    monkeypatch.setattr(fanout, "run_all", apart)
    case = canary.Case("cache/v1/tmp", "symlink", canary.EDITED)  # packages only: none here
    assert canary.run_case(template, tmp_path / "box", case, forked=True) == 0
    lines = log.read_text().splitlines()
    assert "early typer=True" in lines and "apart" in lines, lines


def test_a_module_directory_linked_out_of_the_root_is_read_where_terraform_reads_it(tmp_path: Path) -> None:
    """The policy for the canary's MODULE_DIRS (docs/reliability.md, "Symlinked module
    directories"): ``./m`` a symlink to a directory outside ROOT is the module, as for Terraform
    (``terraform get`` records the link's target as its Dir: internal/initwd/module_install.go),
    and flatten writes it where that Dir puts it; a link inside that module leading out of it is
    neither read nor copied, and the canary is unchanged."""
    tf = terraform()
    box = tmp_path
    canary_dir = canary.canary(box)
    before = canary.snapshot(canary_dir)
    root = write_tree(box / "root", {"main.tf": 'module "m" {\n  source = "./m"\n}\n'})
    (root / "m").symlink_to(canary_dir, target_is_directory=True)
    got = tf.run("get", cwd=root)
    assert got.returncode == 0, got.stderr
    modules = json.loads((root / ".terraform" / "modules" / "modules.json").read_text())
    assert {r["Key"]: r["Dir"] for r in modules["Modules"]}["m"] == str(canary_dir)

    proc = subprocess.run(
        [sys.executable, "-m", "flatten", "build", str(root), "--out", str(box / "out")],
        capture_output=True,
        text=True,
        env=canary.environ(box),
        timeout=canary.DEADLINE,
    )
    assert proc.returncode == 0, proc.stderr
    main = json.loads((box / "out" / "root" / "main.tf.json").read_text())
    assert main["module"]["m"]["source"] == "../canary"  # Terraform's Dir, relative to ROOT
    assert canary.SECRET in (box / "out" / "canary" / "main.tf.json").read_text()  # the module, read
    assert "Module file not copied" in proc.stderr and "notes.txt" in proc.stderr
    for path in (box / "out").rglob("*"):
        assert path.is_dir() or canary.ELSEWHERE.encode() not in path.read_bytes(), path
    assert canary.snapshot(canary_dir) == before
