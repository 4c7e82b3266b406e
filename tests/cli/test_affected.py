"""`flatten affected`: which roots a change affects (issue 43, docs/monorepo.md).

Real git repositories in temporary directories; Terraform (terraform_data trees, offline) is the
oracle for "the plan changes": the old side's output is applied, the new side's planned against
that state, and `plan -detailed-exitcode` says whether anything would change.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from support.files import write_tree
from support.oracle import terraform
from support.servers import Registry, git, make_repo, needs_git, needs_openssl, self_signed, serving

pytestmark = needs_git

NET = """variable "name" {}

resource "terraform_data" "net" {
  input = templatefile("${path.module}/nat.tftpl", { name = var.name })
}

output "id" {
  value = terraform_data.net.output
}
"""
DNS = 'variable "zone" {}\n\nresource "terraform_data" "dns" {\n  input = var.zone\n}\n'


def root_calling(module: str, name: str) -> str:
    return (
        f'module "{module}" {{\n  source = "../../modules/{module}"\n'
        f'  {"name" if module == "net" else "zone"} = "{name}"\n}}\n'
        f'output "out" {{\n  value = module.{module}\n}}\n'
    )


def flatten(
    *args: str | Path, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flatten", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        timeout=600,
    )


def repo(tmp_path: Path, files: dict[str, str | bytes] | None = None) -> Path:
    """A git repository with three roots: two call modules/net, one modules/dns."""
    base = write_tree(
        tmp_path / "repo",
        files
        or {
            "modules/net/main.tf": NET,
            "modules/net/nat.tftpl": "nat for ${name}\n",
            "modules/dns/main.tf": DNS,
            "live/prod/main.tf": root_calling("net", "prod"),
            "live/dev/main.tf": root_calling("net", "dev"),
            "live/web/main.tf": root_calling("dns", "example.com"),
        },
    )
    git("init", "--quiet", "--initial-branch=main", cwd=base)
    commit(base, "base")
    return base


def commit(base: Path, message: str) -> None:
    git("add", "-A", cwd=base)
    git("commit", "--quiet", "--allow-empty", "-m", message, cwd=base)


def affected_json(base: Path, *args: str, env: dict[str, str] | None = None) -> dict[str, dict[str, object]]:
    proc = flatten("affected", "--format", "json", *args, cwd=base, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return {r["root"]: r for r in json.loads(proc.stdout)["roots"]}


def planned(base: Path, *args: str) -> list[str]:
    proc = flatten("affected", *args, cwd=base)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


# -- the oracle ---------------------------------------------------------------------------------


def plan_changes(old_out: Path, new_out: Path, work: Path) -> bool:
    """Whether Terraform's plan of ``new_out`` against the state of applying ``old_out`` changes
    anything (resources or outputs)."""
    tf = terraform()
    state = work / "state"
    shutil.copytree(old_out, state)
    root = state / json.loads((old_out / "flatten.manifest.json").read_text()).get("root", ".")
    assert tf.run("init", "-input=false", cwd=root).returncode == 0
    applied = tf.run("apply", "-auto-approve", "-input=false", cwd=root)
    assert applied.returncode == 0, applied.stderr
    kept = root / "terraform.tfstate"
    saved = kept.read_bytes()
    shutil.rmtree(state)
    shutil.copytree(new_out, state)
    new_root = state / json.loads((new_out / "flatten.manifest.json").read_text()).get("root", ".")
    (new_root / "terraform.tfstate").write_bytes(saved)
    assert tf.run("init", "-input=false", cwd=new_root).returncode == 0
    plan = tf.run("plan", "-detailed-exitcode", "-input=false", "-lock=false", cwd=new_root)
    assert plan.returncode in (0, 2), plan.stderr
    return plan.returncode == 2


def build_at(base: Path, ref: str | None, root: str, out: Path) -> Path:
    """Build ``root`` as it is at ``ref`` (None: the working tree) into ``out``."""
    source = base
    if ref is not None:
        source = out.parent / f"src-{out.name}"
        source.mkdir(parents=True)
        tar = subprocess.run(["git", "-C", str(base), "archive", ref], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(source)], input=tar, check=True)
    proc = flatten("build", root, "--out", out, cwd=source)
    assert proc.returncode == 0, proc.stderr
    return out


# -- item 1: --since REF ------------------------------------------------------------------------


def test_since_lists_exactly_the_roots_whose_plan_changes(tmp_path: Path) -> None:
    base = repo(tmp_path)
    # A template only live/prod and live/dev read (through templatefile), and a comment in the
    # module live/web calls.
    (base / "modules/net/nat.tftpl").write_text("nat gateway for ${name}\n")
    (base / "modules/dns/main.tf").write_text("# the zone of the site\n" + DNS.replace("\n\n", "\n\n\n"))
    assert planned(base, "--since", "HEAD") == ["live/dev", "live/prod"]
    for root in ("live/prod", "live/dev", "live/web"):
        old = build_at(base, "HEAD", root, tmp_path / "o" / root.replace("/", "-") / "old")
        new = build_at(base, None, root, tmp_path / "o" / root.replace("/", "-") / "new")
        assert plan_changes(old, new, tmp_path / "tf" / root) is (root != "live/web"), root


def test_since_never_touches_the_working_tree_or_the_repository(tmp_path: Path) -> None:
    base = repo(tmp_path)
    (base / "modules/net/nat.tftpl").write_text("changed ${name}\n")
    (base / "untracked.txt").write_text("x")

    def everything() -> dict[str, tuple[bytes, int]]:
        return {
            str(p.relative_to(base)): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(base.rglob("*"))
            if p.is_file() and "index" not in p.name
        }

    before = everything()
    assert planned(base, "--since", "HEAD~0") == ["live/dev", "live/prod"]
    assert everything() == before
    assert not (base / ".git" / "worktrees").exists()
    assert git("worktree", "list", cwd=base).count("\n") == 0  # only the main worktree


def test_since_any_revision_spelling_and_a_bad_one_is_a_usage_error(tmp_path: Path) -> None:
    base = repo(tmp_path)
    (base / "modules/dns/main.tf").write_text(DNS.replace("var.zone", '"fixed"'))
    commit(base, "dns")
    git("branch", "before", "HEAD~1", cwd=base)
    assert planned(base, "--since", "HEAD~1") == ["live/web"]
    assert planned(base, "--since", "before") == ["live/web"]
    assert planned(base, "--since", "HEAD") == []
    bad = flatten("affected", "--since", "no-such-branch", cwd=base)
    assert bad.returncode == 2 and "no such commit" in bad.stderr and "Traceback" not in bad.stderr
    neither = flatten("affected", cwd=base)
    assert neither.returncode == 2 and "--since" in neither.stderr


def test_roots_are_found_as_directories_no_other_one_calls_and_added_or_removed_are_listed(
    tmp_path: Path,
) -> None:
    base = repo(tmp_path)
    shutil.rmtree(base / "live/dev")
    write_tree(base, {"live/new/main.tf": root_calling("dns", "new.example")})
    found = affected_json(base, "--since", "HEAD", "--verbose")
    assert sorted(found) == ["live/dev", "live/new", "live/prod", "live/web"]  # modules/* are called
    assert found["live/dev"]["status"] == "removed" and found["live/dev"]["plan"] is False
    assert found["live/new"]["status"] == "added" and found["live/new"]["plan"] is True
    assert found["live/prod"]["status"] == "unaffected"
    # Given roots: only those.
    assert planned(base, "--since", "HEAD", "live/new", "live/prod") == ["live/new"]


# -- item 2: why --------------------------------------------------------------------------------


def test_why_names_the_changed_file_the_call_path_and_the_changed_blocks(tmp_path: Path) -> None:
    base = repo(tmp_path)
    write_tree(base, {"modules/net/inner/main.tf": 'resource "terraform_data" "deep" {\n  input = 1\n}\n'})
    (base / "modules/net/main.tf").write_text(NET + 'module "inner" {\n  source = "./inner"\n}\n')
    commit(base, "inner")
    (base / "modules/net/inner/main.tf").write_text('resource "terraform_data" "deep" {\n  input = 2\n}\n')
    (base / "live/prod/main.tf").write_text(
        root_calling("net", "prod") + 'variable "region" {\n  default = "eu"\n}\n'
    )
    found = affected_json(base, "--since", "HEAD", "live/prod")["live/prod"]
    causes = {c["file"]: c["chain"] for c in found["causes"]}  # type: ignore[union-attr]
    assert causes["modules/net/inner/main.tf"] == [
        "live/prod",
        "module.net (modules/net)",
        "module.net.module.inner (modules/net/inner)",
    ]
    assert causes["live/prod/main.tf"] == ["live/prod"]
    blocks = {(b["address"], b["kind"], b["change"]) for b in found["blocks"]}  # type: ignore[union-attr]
    assert blocks == {
        ("module.net.module.inner.terraform_data.deep", "resource", "changed"),
        ("var.region", "variable", "added"),
    }
    text = flatten("affected", "--since", "HEAD", "live/prod", cwd=base)
    assert (
        "live/prod <- module.net (modules/net) <- module.net.module.inner (modules/net/inner) "
        "<- modules/net/inner/main.tf" in text.stderr
    )
    assert "changed resource: module.net.module.inner.terraform_data.deep" in text.stderr


def test_verbose_gives_each_unaffected_root_its_reason(tmp_path: Path) -> None:
    base = repo(tmp_path)
    # Formatting and a comment in modules/dns; an override that sets the value the base file sets.
    (base / "modules/dns/main.tf").write_text(
        "# zone\n" + DNS.replace("input = var.zone", "input    =    var.zone")
    )
    (base / "modules/net/override.tf").write_text(
        'resource "terraform_data" "net" {\n'
        '  input = templatefile("${path.module}/nat.tftpl", { name = var.name })\n}\n'
    )
    quiet = flatten("affected", "--since", "HEAD", cwd=base)
    assert quiet.stdout == "" and "unaffected" not in quiet.stderr
    loud = flatten("affected", "--since", "HEAD", "--verbose", cwd=base)
    assert loud.stdout == ""
    assert "live/web: unaffected: comment and formatting only" in loud.stderr
    assert "live/prod: unaffected: override leaves the value as it was" in loud.stderr
    for root in ("live/web", "live/prod"):
        old = build_at(base, "HEAD", root, tmp_path / "o" / root.replace("/", "-") / "old")
        new = build_at(base, None, root, tmp_path / "o" / root.replace("/", "-") / "new")
        assert not plan_changes(old, new, tmp_path / "tf" / root), root


# -- item 3: formats ----------------------------------------------------------------------------


def test_github_matrix_and_atlantis_formats(tmp_path: Path) -> None:
    base = repo(tmp_path)
    write_tree(base, {"live/prod/terraform.tfvars": 'unused = "x"\n'})
    commit(base, "tfvars")
    (base / "live/prod/terraform.tfvars").write_text('unused = "y"\n')
    proc = flatten("affected", "--since", "HEAD", "--format", "github-matrix", cwd=base)
    assert proc.stdout == '{"include":[{"root":"live/prod"}]}\n'
    atlantis = flatten("affected", "--format", "atlantis", cwd=base).stdout
    assert atlantis.startswith("version: 3\n")
    prod = atlantis.split('- name: "live-prod"')[1].split("- name:")[0]
    assert '  dir: "live/prod"' in prod
    for path in ("main.tf", "terraform.tfvars", "../../modules/net/main.tf", "../../modules/net/nat.tftpl"):
        assert f'    - "{path}"\n' in prod
    assert "modules/dns" not in prod


# -- item 4: remote modules ---------------------------------------------------------------------


def _registry_env(tmp_path: Path, cert: Path) -> dict[str, str]:
    return {"SSL_CERT_FILE": str(cert), "FLATTEN_DOWNLOAD_TIMEOUT": "60"}


def _pkg(value: str) -> dict[str, str | bytes]:
    return {"main.tf": f'resource "terraform_data" "r" {{\n  input = "{value}"\n}}\n'}


@needs_openssl
def test_a_constraint_that_selects_another_package_affects_and_one_that_does_not_is_unaffected(
    tmp_path: Path,
) -> None:
    cert, key = self_signed(tmp_path)
    with serving(Registry(tls=(cert, key))) as reg:
        assert isinstance(reg, Registry)
        reg.add("acme/m/aws", {"1.0.0": _pkg("one"), "1.0.1": _pkg("one"), "2.0.0": _pkg("two")})

        def call(constraint: str) -> str:
            return f'module "m" {{\n  source  = "{reg.host}/acme/m/aws"\n  version = "{constraint}"\n}}\n'

        base = repo(tmp_path, {"live/a/main.tf": call("1.0.0"), "live/b/main.tf": call("1.0.0")})
        env = _registry_env(tmp_path, cert)
        (base / "live/a/main.tf").write_text(call("2.0.0"))  # another package, other contents
        (base / "live/b/main.tf").write_text(call("1.0.1"))  # another version, the same contents
        found = affected_json(base, "--since", "HEAD", "--verbose", env=env)
        assert found["live/a"]["status"] == "affected"
        assert found["live/a"]["packages"] == [f"module.m: {reg.host}/acme/m/aws 1.0.0 -> 2.0.0"]
        assert found["live/b"]["status"] == "unaffected", (
            found["live/b"]["files"],
            found["live/b"]["blocks"],
        )
        assert found["live/b"]["reason"] == "its remote modules resolve to packages with the same contents"


@needs_openssl
def test_a_registry_answer_that_selects_a_new_version_affects_against_base_out(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    with serving(Registry(tls=(cert, key))) as reg:
        assert isinstance(reg, Registry)
        reg.add("acme/m/aws", {"1.0.0": _pkg("one")})
        root = write_tree(
            tmp_path / "root",
            {"main.tf": f'module "m" {{\n  source  = "{reg.host}/acme/m/aws"\n  version = ">= 1.0"\n}}\n'},
        )
        env = _registry_env(tmp_path, cert)
        built = flatten("build", ".", "--out", tmp_path / "flat", cwd=root, env=env)
        assert built.returncode == 0, built.stderr
        assert planned_with(root, env, "--base-out", str(tmp_path / "flat"), ".") == []
        reg.add("acme/m/aws", {"1.0.0": _pkg("one"), "1.1.0": _pkg("newer")})
        found = affected_json(root, "--base-out", str(tmp_path / "flat"), ".", env=env)["."]
        assert found["status"] == "affected"
        assert found["packages"] == [f"module.m: {reg.host}/acme/m/aws 1.0.0 -> 1.1.0"]


def planned_with(base: Path, env: dict[str, str], *args: str) -> list[str]:
    proc = flatten("affected", *args, cwd=base, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_a_changed_git_ref_affects(tmp_path: Path) -> None:
    history = [(_pkg("one"), "v1"), (_pkg("two"), "v2"), (_pkg("two") | {"x": ""}, "v3")]
    bare, _ = make_repo(tmp_path, "mod", history)
    git("tag", "v4", "v3", cwd=tmp_path / "mod-work")  # another name of v3's commit
    git("push", "--quiet", str(bare), "v4", cwd=tmp_path / "mod-work")

    def call(ref: str) -> str:
        return f'module "m" {{\n  source = "git::file://{bare}?ref={ref}"\n}}\n'

    local = 'module "dns" {\n  source = "../../modules/dns"\n  zone   = "z"\n}\n'
    base = repo(
        tmp_path,
        {
            "live/a/main.tf": call("v1"),
            "live/b/main.tf": call("v2"),
            # The root module lies below the output's top (a local module outside it): the
            # vendored package is named relative to it ("./modules/_remote/...").
            "live/c/main.tf": call("v3") + local,
            "modules/dns/main.tf": DNS,
        },
    )
    (base / "live/a/main.tf").write_text(call("v2"))
    (base / "live/b/main.tf").write_text(call("v3"))  # a file beside the module: copied, so affected
    (base / "live/c/main.tf").write_text(call("v4") + local)  # another ref, the same files
    found = affected_json(base, "--since", "HEAD", "--verbose")
    assert found["live/a"]["status"] == "affected"
    blocks = [(b["address"], b["change"]) for b in found["live/a"]["blocks"]]  # type: ignore[union-attr]
    assert blocks == [("module.m.terraform_data.r", "changed")]
    assert found["live/b"]["status"] == "affected"
    assert [f["path"] for f in found["live/b"]["files"]] == ["modules/_remote/@module.m/x"]  # type: ignore[union-attr]
    assert found["live/c"]["status"] == "unaffected", found["live/c"]["files"]


def test_offline_says_which_roots_it_could_not_decide(tmp_path: Path) -> None:
    bare, _ = make_repo(tmp_path, "mod", [(_pkg("one"), "v1"), (_pkg("two"), "v2")])
    base = repo(
        tmp_path,
        {
            "live/a/main.tf": f'module "m" {{\n  source = "git::file://{bare}?ref=v1"\n}}\n',
            "live/b/main.tf": 'resource "terraform_data" "b" {}\n',
        },
    )
    (base / "live/a/main.tf").write_text(f'module "m" {{\n  source = "git::file://{bare}?ref=v2"\n}}\n')
    (base / "live/b/main.tf").write_text('resource "terraform_data" "b" {\n  input = 1\n}\n')
    found = affected_json(base, "--since", "HEAD", "--offline")
    assert found["live/a"]["status"] == "undecided" and found["live/a"]["plan"] is True
    assert "not installed" in str(found["live/a"]["reason"])
    assert found["live/b"]["status"] == "affected"
    text = flatten("affected", "--since", "HEAD", "--offline", cwd=base)
    assert "live/a: undecided:" in text.stderr and text.stdout.splitlines() == ["live/a", "live/b"]


# -- item 5: errors never hide a root ------------------------------------------------------------


def test_a_root_failing_on_either_side_is_affected_with_its_diagnostics(tmp_path: Path) -> None:
    base = repo(tmp_path)
    (base / "live/web/main.tf").write_text('module "dns" {\n  source = "../../modules/dns"\n')  # broken now
    found = affected_json(base, "--since", "HEAD")
    assert found["live/web"]["status"] == "affected" and found["live/web"]["failed"] == "working tree"
    assert found["live/web"]["diagnostics"]
    commit(base, "broken")
    (base / "live/web/main.tf").write_text(root_calling("dns", "example.com"))  # fixed: broken at HEAD
    found = affected_json(base, "--since", "HEAD")
    assert found["live/web"]["status"] == "affected" and found["live/web"]["failed"] == "tree at HEAD"
    assert found["live/web"]["diagnostics"]
    # A module deleted that roots call: both callers listed, with the error.
    shutil.rmtree(base / "modules/net")
    text = flatten("affected", "--since", "HEAD", cwd=base)
    assert text.stdout.splitlines() == ["live/dev", "live/prod", "live/web"]
    assert "Error:" in text.stderr


# -- --base-out ---------------------------------------------------------------------------------


def test_base_out_compares_with_a_committed_output_without_git(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        "modules/net/main.tf": NET,
        "modules/net/nat.tftpl": "nat for ${name}\n",
        "live/prod/main.tf": root_calling("net", "prod"),
        "live/dev/main.tf": root_calling("net", "dev"),
    }
    base = write_tree(tmp_path / "plain", files)  # no git anywhere
    built = flatten("build", "live/prod", "live/dev", "--out", tmp_path / "flat", cwd=base)
    assert built.returncode == 0, built.stderr
    assert planned(base, "--base-out", str(tmp_path / "flat")) == []
    (base / "live/dev/main.tf").write_text(root_calling("net", "development"))
    found = affected_json(base, "--base-out", str(tmp_path / "flat"))
    assert found["live/dev"]["status"] == "affected" and found["live/prod"]["status"] == "unaffected"
    assert [b["address"] for b in found["live/dev"]["blocks"]] == ["module.net"]  # type: ignore[union-attr]


def test_the_build_at_ref_shares_the_content_addressed_cache(tmp_path: Path) -> None:
    base = repo(tmp_path)
    cache = Path(os.environ["FLATTEN_CACHE_DIR"])
    built = flatten("build", "live/prod", "live/dev", "live/web", "--out", tmp_path / "flat", cwd=base)
    assert built.returncode == 0, built.stderr

    def entries(kind: str) -> set[str]:
        return {p.name for p in (cache / kind).iterdir()} if (cache / kind).is_dir() else set()

    parsed, modules = entries("parse"), entries("modules")
    assert parsed and modules
    (base / "modules/net/main.tf").write_text(
        NET.replace("terraform_data.net.output", "terraform_data.net.id")
    )
    roots = ("live/prod", "live/dev", "live/web")  # given: finding roots loads directories on its own
    assert planned(base, "--since", "HEAD", *roots) == ["live/prod", "live/dev"]
    # The tree at REF lies elsewhere, but every unchanged file and module it loads has the key
    # the working tree's build gave it: only the edited file and its module are new entries.
    assert len(entries("parse") - parsed) == 1
    assert len(entries("modules") - modules) == 1


def test_committed_links_out_of_the_repository_do_not_stop_the_tree_at_ref(tmp_path: Path) -> None:
    base = write_tree(
        tmp_path / "repo", {"modules/net/main.tf": DNS, "live/web/main.tf": root_calling("dns", "z")}
    )
    (base / "modules/net").rename(base / "modules/dns")
    (base / "modules/dns/passwd").symlink_to("/etc/passwd")  # hostile: never read on either side
    (base / "modules/dns/up").symlink_to("../../..")
    (base / "modules/alias").symlink_to("dns")  # inside the tree: kept
    (base / "live/web/main.tf").write_text(root_calling("dns", "z").replace("modules/dns", "modules/alias"))
    git("init", "--quiet", "--initial-branch=main", cwd=base)
    commit(base, "links")
    (base / "modules/dns/main.tf").write_text("# c\n" + DNS)
    proc = flatten("affected", "--since", "HEAD", "--verbose", cwd=base)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    assert "live/web: unaffected: comment and formatting only" in proc.stderr
