"""Many roots in one run: `flatten build ROOT... --out DIR`, graph and providers (docs/monorepo.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from support.files import write_tree

NET = 'variable "name" {}\n\nresource "terraform_data" "net" {\n  input = var.name\n}\n'


def flatten(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flatten", *map(str, args)], capture_output=True, text=True, cwd=cwd
    )


def call(name: str, source: str = "../../modules/net") -> str:
    return f'module "net" {{\n  source = "{source}"\n  name   = "{name}"\n}}\n'


def monorepo(base: Path) -> Path:
    """Three roots at two depths sharing ``modules/net``; ``live/eu/prod`` also has its own module."""
    return write_tree(
        base,
        {
            "modules/net/main.tf": NET,
            "modules/net/override.tf": 'resource "terraform_data" "net" {\n  triggers_replace = 1\n}\n',
            "live/prod/main.tf": call("prod"),
            "live/dev/main.tf": call("dev") + 'output "id" {\n  value = module.net\n}\n',
            "live/eu/prod/main.tf": call("eu", "../../../modules/net")
            + 'module "own" {\n  source = "./own"\n}\n',
            "live/eu/prod/own/main.tf": 'resource "terraform_data" "own" {}\n',
        },
    )


ROOTS = ("live/prod", "live/dev", "live/eu/prod")


def files_of(tree: Path) -> dict[str, bytes]:
    return {p.relative_to(tree).as_posix(): p.read_bytes() for p in sorted(tree.rglob("*")) if p.is_file()}


def test_several_roots_build_as_each_alone(tmp_path: Path) -> None:
    base = monorepo(tmp_path / "repo")
    proc = flatten("build", *ROOTS, "--out", tmp_path / "out", cwd=base)
    assert proc.returncode == 0, proc.stderr
    # Each root in OUT/<its path relative to the roots' common parent (live)>, byte for byte what
    # building it alone writes.
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["dev", "eu", "prod"]
    for root in ROOTS:
        alone = tmp_path / "alone" / root
        single = flatten("build", root, "--out", alone, cwd=base)
        assert single.returncode == 0, single.stderr
        rel = root.removeprefix("live/")
        assert files_of(tmp_path / "out" / rel) == files_of(alone), root
    # Messages in root order; no progress line when stderr is not a terminal.
    lines = proc.stderr.splitlines()
    assert [line.split(":")[1].strip() for line in lines[:3]] == list(ROOTS)
    assert lines[-1] == "flatten: all 3 roots built"
    assert "\r" not in proc.stderr
    # Rebuilding into the same DIR: an output that already holds the same bytes is left as it
    # is, one that differs (edited by hand here) is replaced.
    (tmp_path / "out/dev/flatten.manifest.json").write_text("{}")
    again = flatten("build", *ROOTS, "--out", tmp_path / "out", cwd=base)
    assert again.returncode == 0, again.stderr
    assert "flatten: live/prod: 3 files in " in again.stderr and "/out/prod up to date" in again.stderr
    assert "flatten: live/dev: wrote 3 files to " in again.stderr
    assert files_of(tmp_path / "out" / "dev") == files_of(tmp_path / "alone" / "live/dev")


def test_several_roots_keep_no_build_record(tmp_path: Path) -> None:
    """A record stands for one root's build (flatten/shell/replay.py); a many-root run builds."""
    # Roots whose modules are inside them: a single build of such a root is recorded.
    own = 'module "own" {\n  source = "./own"\n  name   = "x"\n}\n'
    base = write_tree(
        tmp_path / "repo",
        {f"{r}/{f}": t for r in ("a", "b") for f, t in (("main.tf", own), ("own/main.tf", NET))},
    )
    old = time.time() - 60  # records are only written for inputs that cannot still be changing
    for path in [base, *base.rglob("*")]:
        os.utime(path, (old, old))
    builds = Path(os.environ["FLATTEN_CACHE_DIR"]) / "builds"
    assert flatten("build", "a", "b", "--out", tmp_path / "out", cwd=base).returncode == 0
    assert not builds.exists() or not any(builds.iterdir())
    assert flatten("build", "a", "--out", tmp_path / "alone", cwd=base).returncode == 0
    # The single-root build did record (two records: its --out's, and the one a build into a new
    # --out replays from; flatten/shell/replay.py).
    assert len(list(builds.iterdir())) == 2


def test_one_root_with_errors_does_not_stop_the_others(tmp_path: Path) -> None:
    base = monorepo(tmp_path / "repo")
    (base / "live/dev/main.tf").write_text(call("dev") + 'resource "terraform_data" "x" {\n  input = \n}\n')
    proc = flatten("build", *ROOTS, "--out", tmp_path / "out", cwd=base)
    assert proc.returncode == 1
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["eu", "prod"]
    assert "Error: Invalid expression" in proc.stderr
    assert '  on main.tf line 6, in resource "terraform_data" "x", in root live/dev:' in proc.stderr
    assert proc.stderr.splitlines()[-1] == "flatten: 1 of 3 roots failed: live/dev"
    # The order of the report is the roots' order, whichever build finished first.
    assert proc.stderr.index("live/prod: wrote") < proc.stderr.index("in root live/dev")
    assert proc.stderr.index("in root live/dev") < proc.stderr.index("live/eu/prod: wrote")


def test_json_gives_one_object_per_root(tmp_path: Path) -> None:
    base = monorepo(tmp_path / "repo")
    (base / "live/dev/main.tf").write_text('module "net" {\n  source = "../../modules/net"\n}\n')
    single = flatten("build", "live/dev", "--out", tmp_path / "single", "--format", "json", cwd=base)
    assert single.returncode == 1
    one = json.loads(single.stdout)
    assert isinstance(one, dict)  # a single root keeps terraform validate -json's object
    for flag in (("--format", "json"), ("--diagnostics-json",)):
        proc = flatten("build", *ROOTS, "--out", tmp_path / "out", *flag, cwd=base)
        assert proc.returncode == 1
        doc = json.loads(proc.stdout)
        assert [item["root"] for item in doc] == list(ROOTS)
        assert {k: v for k, v in doc[1].items() if k != "root"} == one
        assert [item["valid"] for item in doc] == [True, False, True]


def test_sarif_and_junit_have_one_run_or_case_per_root(tmp_path: Path) -> None:
    base = monorepo(tmp_path / "repo")
    (base / "live/dev/main.tf").write_text('module "net" {\n  source = "../../modules/net"\n}\n')
    sarif = flatten("build", *ROOTS, "--out", tmp_path / "out", "--format", "sarif", cwd=base)
    assert sarif.returncode == 1
    runs = json.loads(sarif.stdout)["runs"]
    assert [r["automationDetails"]["id"] for r in runs] == [f"flatten/{r}/" for r in ROOTS]
    assert [len(r["results"]) for r in runs] == [0, 1, 0]
    junit = flatten("build", *ROOTS, "--out", tmp_path / "out", "--format", "junit", cwd=base)
    assert junit.returncode == 1
    import xml.etree.ElementTree as ET

    suite = ET.fromstring(junit.stdout).find("testsuite")
    assert suite is not None and suite.get("tests") == "3" and suite.get("failures") == "1"
    cases = suite.findall("testcase")
    # A root without findings is one passing case; a finding is a case named by root and place
    # (no git repository here: the place is relative to the root).
    assert [c.get("name") for c in cases] == [ROOTS[0], f"{ROOTS[1]}: main.tf:1", ROOTS[2]]
    assert [len(c.findall("failure")) for c in cases] == [0, 1, 0]


def test_roots_and_outputs_that_collide_are_refused(tmp_path: Path) -> None:
    base = monorepo(tmp_path / "repo")
    write_tree(base, {"live/net/main.tf": call("net")})
    out = tmp_path / "out"
    refused = {
        "twice": ("live/prod", "live/dev", "./live/prod", "--out", out),
        "nested": ("live/eu", "live/eu/prod", "--out", out),
        "out inside a root": ("live/prod", "live/dev", "--out", base / "live/prod/flat"),
        # live/net's output, modules/net, would replace the directory of the shared module.
        "out over a module": ("live/prod", "live/net", "--out", base / "modules"),
        # live/prod's output would be live/prod itself.
        "out is a root": ("live/prod", "live/dev", "--out", base / "live"),
    }
    for what, args in refused.items():
        proc = flatten("build", *args, cwd=base)
        assert proc.returncode == 2, (what, proc.stderr)
        assert proc.stderr.startswith("Error: "), what
        assert not out.exists(), what
    assert "is given twice" in flatten("build", *refused["twice"], cwd=base).stderr
    assert "is inside ROOT live/eu" in flatten("build", *refused["nested"], cwd=base).stderr
    assert "overlaps the module directory" in flatten("build", *refused["out over a module"], cwd=base).stderr
    assert sorted(files_of(base / "modules")) == ["net/main.tf", "net/override.tf"]


def test_check_over_several_roots(tmp_path: Path) -> None:
    base = monorepo(tmp_path / "repo")
    out = tmp_path / "out"
    assert flatten("build", *ROOTS, "--out", out, cwd=base).returncode == 0
    fresh = flatten("build", *ROOTS, "--out", out, "--check", cwd=base)
    assert fresh.returncode == 0, fresh.stderr
    assert fresh.stderr.splitlines()[-1] == "flatten: all 3 roots up to date"
    before = files_of(out)
    (base / "live/dev/main.tf").write_text(call("development"))
    stale = flatten("build", *ROOTS, "--out", out, "--check", cwd=base)
    assert stale.returncode == 1
    assert "Error: Output is out of date" in stale.stderr
    assert ", in root live/dev:" in stale.stderr
    # Details are wrapped at the terminal width (80 when piped), so compare the words.
    assert "main.tf.json is not what the build writes now" in " ".join(stale.stderr.split())
    assert stale.stderr.splitlines()[-1] == "flatten: 1 of 3 roots not up to date: live/dev"
    assert "live/prod:" not in stale.stderr
    assert files_of(out) == before  # --check writes nothing


def test_options_apply_to_every_root(tmp_path: Path) -> None:
    base = monorepo(tmp_path / "repo")
    out = tmp_path / "out"
    proc = flatten("build", *ROOTS, "--out", out, "--inline", "--provenance", cwd=base)
    assert proc.returncode == 0, proc.stderr
    for root in ROOTS:
        alone = flatten(
            "build", root, "--out", tmp_path / "alone" / root, "--inline", "--provenance", cwd=base
        )
        assert alone.returncode == 0, alone.stderr
        assert files_of(out / root.removeprefix("live/")) == files_of(tmp_path / "alone" / root)
    usage = flatten("build", *ROOTS, "--out", out, "--module", "module.net", cwd=base)
    assert usage.returncode == 2


def test_graph_and_providers_take_several_roots(tmp_path: Path) -> None:
    base = monorepo(tmp_path / "repo")
    graph = flatten("graph", "live/prod", "live/eu/prod", cwd=base)
    assert graph.returncode == 0, graph.stderr
    alone = flatten("graph", "live/eu/prod", cwd=base).stdout
    assert graph.stdout.startswith("# live/prod\n(root)")
    assert graph.stdout.endswith("# live/eu/prod\n" + alone)
    doc = json.loads(flatten("graph", "live/prod", "live/eu/prod", "-f", "json", cwd=base).stdout)
    assert [d["root"] for d in doc] == ["live/prod", "live/eu/prod"]
    assert [c["address"] for c in doc[1]["children"]] == ["module.net", "module.own"]

    (base / "live/dev/main.tf").write_text('module "net" {\n  source = "../../modules/net"\n}\n')
    providers = flatten("providers", *ROOTS, "--json", "--format", "json", cwd=base)
    assert providers.returncode == 1
    report = json.loads(providers.stderr)  # with a machine --format, the report goes to stderr
    assert [r["root"] for r in report] == list(ROOTS)
    diags = json.loads(providers.stdout)
    assert [(d["root"], d["valid"]) for d in diags] == [(r, r != "live/dev") for r in ROOTS]
    text = flatten("providers", "live/prod", "live/dev", cwd=base)
    assert text.stdout.startswith("# live/prod\n")
    assert "\n# live/dev\n" in text.stdout
    refused = flatten("providers", "live/prod", "live/dev", "--explain", "terraform_data.net", cwd=base)
    assert refused.returncode == 2


def test_progress_on_a_terminal(tmp_path: Path) -> None:
    """On a terminal, stderr shows "[k/3] ROOT" as roots finish; piped, none (the other tests)."""
    import pty

    base = monorepo(tmp_path / "repo")
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "flatten", "build", *ROOTS, "--out", str(tmp_path / "out")],
        cwd=base,
        stdout=subprocess.DEVNULL,
        stderr=slave,
    )
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the pty closes when the process ends
            break
        if not chunk:
            break
        seen += chunk
    assert proc.wait() == 0
    os.close(master)
    text = seen.decode()
    assert "[3/3] " in text and "[1/3] " in text
    assert text.rstrip().endswith("flatten: all 3 roots built")
