"""Remote modules end to end: fetching through the graph, package-aware vendoring, the cache,
``modules.json`` reuse, ``--offline`` and ``--locked`` (spec §5.7)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from support.files import write_tree
from support.servers import HTTPServer, Registry, Reply, make_repo, make_tar, make_zip, needs_git, serving
from support.sources import call, run, source_env, summaries

from flatten.lang.diagnostics import Diagnostics
from flatten.lang.options import Options
from flatten.sources.fetcher import read_lock
from flatten.stages.emit import MANIFEST_NAME
from flatten.stages.layout import OutputTree

PACKAGE = {
    "modules/app/main.tf": call("net", "../net") + 'output "o" {\n  value = module.net.id\n}\n',
    "modules/app/files/init.sh": "#!/bin/sh\n",
    "modules/net/main.tf": 'output "id" {\n  value = "net"\n}\n',
    "main.tf": 'output "root" {\n  value = 1\n}\n',
}


def test_registry_package_vendored_with_structure(tmp_path: Path) -> None:
    with serving(Registry()) as reg:
        assert isinstance(reg, Registry)
        reg.add("acme/stack/aws", {"1.0.0": PACKAGE, "1.2.0": PACKAGE, "2.0.0": PACKAGE})
        root = write_tree(
            tmp_path / "root", {"main.tf": call("app", f"{reg.host}/acme/stack/aws//modules/app", "~> 1.0")}
        )
        env = source_env(tmp_path, insecure_hosts=frozenset({reg.host}))
        graph, tree, diags = run(root, env)
        assert summaries(diags) == []
        assert tree is not None
        app = graph.node("module.app")
        assert app.package is not None and app.package.version == "1.2.0"
        assert graph.node("module.app.module.net").package.subdir == "modules/net"  # type: ignore[union-attr]
        assert sorted(tree.paths()) == [
            MANIFEST_NAME,
            "main.tf.json",
            "modules/_remote/acme-stack-aws-1.2.0/modules/app/files/init.sh",
            "modules/_remote/acme-stack-aws-1.2.0/modules/app/main.tf.json",
            "modules/_remote/acme-stack-aws-1.2.0/modules/net/main.tf.json",
        ]
        main = json.loads(tree.content("main.tf.json"))
        assert main["module"]["app"] == {"source": "./modules/_remote/acme-stack-aws-1.2.0/modules/app"}
        app_json = json.loads(tree.content("modules/_remote/acme-stack-aws-1.2.0/modules/app/main.tf.json"))
        assert app_json["module"]["net"]["source"] == "../net"
        manifest = json.loads(tree.content(MANIFEST_NAME))
        entry = next(m for m in manifest["modules"] if m["module"] == "module.app")
        assert entry["package"]["version"] == "1.2.0"
        assert entry["package"]["address"] == f"{reg.host}/acme/stack/aws"
        assert entry["package"]["digest"].startswith("sha256:")
        assert str(tmp_path) not in tree.content(MANIFEST_NAME).decode()


def test_package_escape_is_an_error(tmp_path: Path) -> None:
    with serving(Registry()) as reg:
        assert isinstance(reg, Registry)
        reg.add("acme/esc/aws", {"1.0.0": {"main.tf": call("up", "../outside")}})
        root = write_tree(tmp_path / "root", {"main.tf": call("m", f"{reg.host}/acme/esc/aws", "1.0.0")})
        _, tree, diags = run(root, source_env(tmp_path, insecure_hosts=frozenset({reg.host})))
        assert tree is None
        assert summaries(diags) == ["Local module path escapes module package"]
        assert diags[0].module == "module.m"
        assert "module.m.module.up" in diags[0].detail


def test_http_archive_with_archive_param_and_subdir(tmp_path: Path) -> None:
    with serving(HTTPServer()) as srv:
        srv.routes["/dl/pkg"] = Reply(200, make_tar({"x/main.tf": call("y", "../y"), "y/main.tf": ""}))
        root = write_tree(tmp_path / "root", {"main.tf": call("m", f"{srv.url}/dl/pkg//x?archive=tar.gz")})
        graph, tree, diags = run(root, source_env(tmp_path))
        assert summaries(diags) == []
        assert tree is not None
        assert "modules/_remote/pkg/y/main.tf.json" in tree.paths()
        assert graph.node("module.m").package.address == f"{srv.url}/dl/pkg?archive=tar.gz"  # type: ignore[union-attr]


def test_http_x_terraform_get_indirection_and_checksum(tmp_path: Path) -> None:
    import hashlib

    data = make_tar({"main.tf": ""})
    digest = hashlib.sha256(data).hexdigest()
    with serving(HTTPServer()) as srv:
        srv.routes["/mod"] = Reply(200, b"", {"X-Terraform-Get": f"./pkg.tgz?checksum=sha256:{digest}"})
        srv.routes["/pkg.tgz"] = Reply(200, data)
        root = write_tree(tmp_path / "root", {"main.tf": call("m", f"{srv.url}/mod")})
        _, _, diags = run(root, source_env(tmp_path))
        assert summaries(diags) == []
        srv.routes["/mod"] = Reply(200, b"", {"X-Terraform-Get": "./pkg.tgz?checksum=sha256:" + "0" * 64})
        _, _, diags = run(root, source_env(tmp_path / "fresh"))
        assert summaries(diags) == ["Failed to download module"]
        assert "checksums did not match" in diags[0].detail


def test_subdir_not_found(tmp_path: Path) -> None:
    with serving(HTTPServer()) as srv:
        srv.routes["/p.zip"] = Reply(200, make_tar({"main.tf": ""}, mode="w"))
        srv.routes["/p.tar"] = Reply(200, make_tar({"main.tf": ""}, mode="w"))
        root = write_tree(tmp_path / "root", {"main.tf": call("m", f"{srv.url}/p.tar//nope")})
        _, _, diags = run(root, source_env(tmp_path))
        assert summaries(diags) == ["Module subdirectory not found"]


def test_unsupported_getter_is_a_clear_error(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "root", {"main.tf": call("m", "s3::https://s3.amazonaws.com/bucket/x.zip")})
    _, _, diags = run(root, source_env(tmp_path))
    assert summaries(diags) == ["Failed to download module"]
    assert "cannot download s3" in diags[0].detail


def test_second_build_uses_the_cache(tmp_path: Path) -> None:
    with serving(Registry()) as reg:
        assert isinstance(reg, Registry)
        reg.add("acme/c/aws", {"1.0.0": {"main.tf": ""}})
        with serving(HTTPServer()) as srv:
            srv.routes["/a.zip"] = Reply(200, make_zip({"main.tf": ""}))
            root = write_tree(
                tmp_path / "root",
                {"main.tf": call("r", f"{reg.host}/acme/c/aws", "1.0.0") + call("z", f"{srv.url}/a.zip")},
            )
            env = source_env(tmp_path, insecure_hosts=frozenset({reg.host}))
            _, first, diags = run(root, env)
            assert summaries(diags) == []
            _, second, diags = run(root, env)
            assert summaries(diags) == []
            assert first is not None and second is not None
            assert first.files == second.files
            assert srv.paths() == ["/a.zip"]
            downloads = [p for p in reg.paths() if p.endswith(("/download", ".tar.gz"))]
            assert downloads == ["/v1/modules/acme/c/aws/1.0.0/download", "/archives/acme-c-aws-1.0.0.tar.gz"]


def test_concurrent_builds_share_the_cache(tmp_path: Path) -> None:
    import time

    def slow(req: object) -> Reply:
        time.sleep(0.3)
        return Reply(200, make_tar({"main.tf": 'output "x" {\n  value = 1\n}\n', "data/f.txt": "x" * 10000}))

    with serving(HTTPServer()) as srv:
        srv.routes["/slow.tgz"] = slow
        roots = [
            write_tree(tmp_path / f"root{i}", {"main.tf": call("m", f"{srv.url}/slow.tgz")}) for i in range(4)
        ]
        env = source_env(tmp_path)
        outcomes: list[tuple[Diagnostics, OutputTree | None]] = []

        def build(root: Path) -> None:
            _, tree, diags = run(root, env)
            outcomes.append((diags, tree))

        threads = [threading.Thread(target=build, args=(r,)) for r in roots]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert [summaries(d) for d, _ in outcomes] == [[]] * 4
        trees = [t for _, t in outcomes]
        assert all(t is not None and t.files == trees[0].files for t in trees)  # type: ignore[union-attr]
        assert srv.paths() == ["/slow.tgz"]  # one download; the others waited on the lock
        entries = list((tmp_path / "cache" / "v1" / "packages").iterdir())
        assert len(entries) == 1 and (entries[0] / "meta.json").is_file()
        assert list((tmp_path / "cache" / "v1" / "tmp").iterdir()) == []


def test_concurrent_processes_share_the_cache(tmp_path: Path) -> None:
    import subprocess
    import sys

    with serving(HTTPServer()) as srv:
        srv.routes["/p.tgz"] = lambda req: (
            __import__("time").sleep(0.3),
            Reply(200, make_tar({"main.tf": ""})),
        )[1]
        root = write_tree(tmp_path / "root", {"main.tf": call("m", f"{srv.url}/p.tgz")})
        script = (
            "import sys; from pathlib import Path\n"
            "from flatten.stages.graph import build_graph\nfrom flatten.lang.options import Options\n"
            "from flatten.sources.env import SourceEnv\nfrom flatten.sources.fetcher import RemoteFetcher\n"
            "from flatten.shell import cache_auth\n"
            "env = SourceEnv(cache_dir=Path(sys.argv[2]))\n"
            "g, d = build_graph(Path(sys.argv[1]), options=Options(), "
            "fetcher=RemoteFetcher(Path(sys.argv[1]), options=Options(), env=env, cache_auth=cache_auth))\n"
            "sys.exit(1 if d.has_errors else 0)\n"
        )
        procs = [
            subprocess.Popen([sys.executable, "-c", script, str(root), str(tmp_path / "cache")])
            for _ in range(3)
        ]
        assert [p.wait(timeout=60) for p in procs] == [0, 0, 0]
        assert srv.paths() == ["/p.tgz"]


@needs_git
def test_git_file_package_with_sibling_and_commit(tmp_path: Path) -> None:
    bare, shas = make_repo(
        tmp_path / "repos",
        "infra",
        [
            ({"modules/a/main.tf": call("b", "../b"), "modules/b/main.tf": ""}, "v1.0.0"),
            ({"README.md": "x"}, None),
        ],
    )
    root = write_tree(tmp_path / "root", {"main.tf": call("a", f"git::file://{bare}//modules/a?ref=v1.0.0")})
    graph, tree, diags = run(root, source_env(tmp_path))
    assert summaries(diags) == []
    assert tree is not None
    pkg = graph.node("module.a").package
    assert pkg is not None and pkg.commit == shas[0] and pkg.subdir == "modules/a"
    assert "modules/_remote/infra-v1.0.0/modules/b/main.tf.json" in tree.paths()
    manifest = json.loads(tree.content(MANIFEST_NAME))
    assert {m["module"]: m["package"]["commit"] for m in manifest["modules"] if "package" in m} == {
        "module.a": shas[0],
        "module.a.module.b": shas[0],
    }


def test_modules_json_reuse_and_offline(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "root",
        {
            "main.tf": call("vpc", "acme/vpc/aws//modules/x", "~> 1.0")
            + call("g", "git::https://example.com/r.git"),
            ".terraform/modules/vpc/modules/x/main.tf": call("y", "../y"),
            ".terraform/modules/vpc/modules/y/main.tf": "",
            ".terraform/modules/g/main.tf": "",
            ".terraform/modules/modules.json": json.dumps(
                {
                    "Modules": [
                        {"Key": "", "Source": "", "Dir": "."},
                        {
                            "Key": "vpc",
                            "Source": "registry.terraform.io/acme/vpc/aws//modules/x",
                            "Version": "1.3.0",
                            "Dir": ".terraform/modules/vpc/modules/x",
                        },
                        {
                            "Key": "g",
                            "Source": "git::https://example.com/r.git",
                            "Dir": ".terraform/modules/g",
                        },
                    ]
                }
            ),
        },
    )
    graph, tree, diags = run(root, source_env(tmp_path), Options(offline=True))
    assert summaries(diags) == []
    assert graph.node("module.vpc").package.version == "1.3.0"  # type: ignore[union-attr]
    assert graph.node("module.vpc.module.y").package.subdir == "modules/y"  # type: ignore[union-attr]
    assert tree is not None
    assert "modules/_remote/acme-vpc-aws-1.3.0/modules/y/main.tf.json" in tree.paths()
    # The same layout from another data directory (TF_DATA_DIR).
    (root / ".terraform").rename(root / "tfdata")
    text = (root / "tfdata/modules/modules.json").read_text().replace(".terraform/", "tfdata/")
    (root / "tfdata/modules/modules.json").write_text(text)
    _, _, diags = run(root, source_env(tmp_path, data_dir="tfdata"), Options(offline=True))
    assert summaries(diags) == []
    # A version that no longer satisfies the constraint is not reused; offline says how to fix it.
    (root / "main.tf").write_text(call("vpc", "acme/vpc/aws//modules/x", "~> 2.0"))
    _, _, diags = run(root, source_env(tmp_path, data_dir="tfdata"), Options(offline=True))
    assert summaries(diags) == ["Module not installed"]
    assert "terraform init" in diags[0].detail and "--offline" in diags[0].detail


def test_offline_never_touches_the_network(tmp_path: Path) -> None:
    with serving(Registry()) as reg:
        assert isinstance(reg, Registry)
        reg.add("acme/c/aws", {"1.0.0": {"main.tf": ""}})
        root = write_tree(tmp_path / "root", {"main.tf": call("r", f"{reg.host}/acme/c/aws", "1.0.0")})
        _, _, diags = run(
            root, source_env(tmp_path, insecure_hosts=frozenset({reg.host})), Options(offline=True)
        )
        assert summaries(diags) == ["Module not installed"]
        assert reg.log == []


def test_locked_refuses_a_changed_resolution(tmp_path: Path) -> None:
    with serving(Registry()) as reg:
        assert isinstance(reg, Registry)
        reg.add("acme/l/aws", {"1.0.0": {"main.tf": ""}})
        root = write_tree(tmp_path / "root", {"main.tf": call("r", f"{reg.host}/acme/l/aws", ">= 1.0")})
        env = source_env(tmp_path, insecure_hosts=frozenset({reg.host}))
        _, tree, diags = run(root, env)
        assert tree is not None
        manifest = tree.content(MANIFEST_NAME)
        _, again, diags = run(root, env, Options(locked=True), lock=manifest)
        assert summaries(diags) == [] and again is not None and again.files == tree.files
        reg.add("acme/l/aws", {"1.0.0": {"main.tf": ""}, "1.1.0": {"main.tf": "# new\n"}})
        reg.routes["/v1/modules/acme/l/aws/versions"] = Reply(
            200,
            json.dumps({"modules": [{"versions": [{"version": "1.0.0"}, {"version": "1.1.0"}]}]}).encode(),
        )
        _, _, diags = run(
            root,
            source_env(tmp_path / "c2", insecure_hosts=frozenset({reg.host})),
            Options(locked=True),
            lock=manifest,
        )
        assert summaries(diags) == ["Module resolution differs from the lock"]
        assert "version 1.0.0 → 1.1.0" in diags[0].detail
        _, _, diags = run(root, env, Options(locked=True), lock=None)
        assert summaries(diags) == ["Module not in the lock"]


def test_parallel_prefetch_resolves_siblings(tmp_path: Path) -> None:
    with serving(HTTPServer()) as srv:
        for i in range(5):
            srv.routes[f"/m{i}.tgz"] = Reply(200, make_tar({"main.tf": f"# {i}\n"}))
        root = write_tree(
            tmp_path / "root", {"main.tf": "".join(call(f"m{i}", f"{srv.url}/m{i}.tgz") for i in range(5))}
        )
        graph, _, diags = run(root, source_env(tmp_path))
        assert summaries(diags) == []
        assert sorted(srv.paths()) == [f"/m{i}.tgz" for i in range(5)]
        assert [n.address for n in graph.walk()] == ["", *(f"module.m{i}" for i in range(5))]


def test_progress_is_quiet_without_a_stream_and_draws_on_one(tmp_path: Path) -> None:
    import io

    from flatten.sources.progress import Progress

    buf = io.StringIO()
    p = Progress(buf)
    p.begin("x")
    p.end("x", ok=True)
    assert "downloading x" in buf.getvalue()
    Progress().begin("quiet")  # no stream: nothing drawn, nothing raised


@pytest.mark.parametrize("bad", ["not json", json.dumps({"modules": [{"module": "m", "package": "x"}]})])
def test_read_lock_tolerates_garbage(bad: str) -> None:
    assert read_lock(bad) == {}


def test_diagnostics_in_a_package_name_the_package_not_the_cache(tmp_path: Path) -> None:
    with serving(HTTPServer()) as srv:
        srv.routes["/bad.tgz"] = Reply(200, make_tar({"sub/main.tf": "resource {"}))
        root = write_tree(tmp_path / "root", {"main.tf": call("m", f"{srv.url}/bad.tgz//sub")})
        _, _, diags = run(root, source_env(tmp_path))
    assert diags.has_errors
    assert all(d.module == "module.m" for d in diags)
    assert {d.range.filename for d in diags if d.range} == {f"{srv.url}/bad.tgz//sub/main.tf"}
    assert not any(str(tmp_path) in (d.detail + (d.range.filename if d.range else "")) for d in diags)
