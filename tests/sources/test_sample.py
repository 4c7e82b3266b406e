"""samples/remote end to end: three loopback servers (registry, git daemon, HTTP archive), a build with
downloads, and Terraform as the oracle on the vendored tree; the offline build from the sample's own
``.terraform/modules`` gives the same modules."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.oracle import terraform
from support.paths import SAMPLES
from support.servers import HTTPServer, Registry, Reply, git, git_daemon, make_tar, needs_git, serving
from support.sources import run, source_env, summaries

from flatten.lang.options import Options
from flatten.stages.emit import MANIFEST_NAME, write_tree
from flatten.stages.graph import build_graph
from flatten.stages.layout import layout_tree

SAMPLE = SAMPLES / "remote"
INSTALLED = SAMPLE / ".terraform" / "modules"


def package_files(directory: Path) -> dict[str, str | bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in directory.rglob("*") if p.is_file()}


def all_sources(tree_files: dict[str, bytes]) -> list[str]:
    out = []
    for rel, data in tree_files.items():
        if rel.endswith(".tf.json"):
            for call in json.loads(data).get("module", {}).values():
                out.append(call["source"])
                assert "version" not in call
    return out


@needs_git
@pytest.mark.oracle
def test_remote_sample_builds_from_loopback_servers(tmp_path: Path) -> None:
    # The git repository, tagged v1.0.0, with a later commit that must not be used.
    work = tmp_path / "repos" / "storage-work"
    shutil.copytree(INSTALLED / "storage", work)
    git("init", "--quiet", "--initial-branch=main", cwd=work)
    git("add", "-A", cwd=work)
    git("commit", "--quiet", "-m", "v1", cwd=work)
    git("tag", "v1.0.0", cwd=work)
    (work / "later.tf").write_text('output "later" {\n  value = 2\n}\n')
    git("add", "-A", cwd=work)
    git("commit", "--quiet", "-m", "later", cwd=work)
    git("clone", "--quiet", "--bare", str(work), str(tmp_path / "repos" / "storage.git"), cwd=tmp_path)
    shutil.rmtree(work)

    network = package_files(INSTALLED / "network")
    with (
        serving(Registry()) as reg,
        serving(HTTPServer()) as files,
        git_daemon(tmp_path / "repos") as git_url,
    ):
        assert isinstance(reg, Registry)
        broken = {"main.tf": "this is not valid {"}
        reg.add("acme/network/aws", {"1.0.0": broken, "1.2.0": network, "2.0.0": broken})
        files.routes["/archives/dns.tar.gz"] = Reply(200, make_tar(package_files(INSTALLED / "dns")))
        root = tmp_path / "original"
        shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns(".terraform"))
        text = (root / "main.tf").read_text()
        text = text.replace("127.0.0.1:18080", reg.host).replace("git://127.0.0.1:18081", git_url)
        (root / "main.tf").write_text(text.replace("127.0.0.1:18082", files.host))

        graph, tree, diags = run(root, source_env(tmp_path, insecure_hosts=frozenset({reg.host})))
        assert summaries(diags) == []
        assert tree is not None
        assert f"{git_url.removeprefix('git://')}" not in "".join(str(p) for p in tree.paths())
        assert graph.node("module.network").package.version == "1.2.0"  # type: ignore[union-attr]
        assert "/archives/dns.tar.gz" in files.paths()

    out = tmp_path / "flat"
    write_tree(out, tree.files, tree.copies)
    produced = {rel: tree.content(rel) for rel in tree.paths()}
    assert sorted(p for p in produced if p.startswith("modules/_remote/")) == [
        "modules/_remote/acme-network-aws-1.2.0/main.tf.json",
        "modules/_remote/acme-network-aws-1.2.0/modules/common/main.tf.json",
        "modules/_remote/acme-network-aws-1.2.0/modules/subnets/main.tf.json",
        "modules/_remote/dns/modules/record/main.tf.json",
        "modules/_remote/dns/modules/zone/main.tf.json",
        "modules/_remote/dns/modules/zone/templates/record.tpl",
        "modules/_remote/storage-v1.0.0/main.tf.json",
    ]
    assert all(s.startswith(("./", "../")) for s in all_sources(produced))
    manifest = json.loads(produced[MANIFEST_NAME])
    packages = {m["module"]: m["package"] for m in manifest["modules"] if "package" in m}
    assert packages["module.network"]["version"] == "1.2.0"
    assert len(packages["module.storage"]["commit"]) == 40
    assert packages["module.dns"]["subdir"] == "modules/zone"

    # The oracle: Terraform installs the vendored tree with local sources only.
    tf = terraform()
    get = tf.run("get", "-no-color", cwd=out)
    assert get.returncode == 0, get.stderr + get.stdout
    providers = tf.run("providers", "-no-color", cwd=out)
    assert providers.returncode == 0, providers.stderr
    assert "module.subnets" in providers.stdout and "module.record" in providers.stdout

    # The committed sample builds offline from its .terraform/modules, to the same module files.
    offline_root = tmp_path / "installed"
    shutil.copytree(SAMPLE, offline_root, symlinks=True)
    options = Options(offline=True)
    graph2, diags2 = build_graph(offline_root, options=options)
    assert summaries(diags2) == []
    offline = layout_tree(graph2, root=offline_root, options=options)
    assert {r: offline.content(r) for r in offline.paths() if r != MANIFEST_NAME} == {
        r: d for r, d in produced.items() if r != MANIFEST_NAME
    }
