"""The command line's remote-source and inline modes, end to end through ``python -m flatten``.

Remote modules come from an HTTP archive server on loopback (the real download path: fetch,
safe extraction, the content-addressed cache); every run gets its own cache directory so
nothing is written outside the test's temporary directory.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli import run_flatten
from support.files import write_tree
from support.paths import SAMPLES
from support.remote import CHILD, remote_root
from support.servers import HTTPServer, Reply, make_tar, serving

from flatten import cli
from flatten.stages.emit import MANIFEST_NAME


def flatten(*args: str | Path, tmp: Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return run_flatten(*args, cache=tmp / "cache", cwd=cwd)


def test_build_downloads_remote_archive_and_vendors_it(tmp_path: Path) -> None:
    with serving(HTTPServer()) as srv:
        srv.routes["/app.tgz"] = Reply(200, make_tar(CHILD))
        root = remote_root(tmp_path, f"{srv.url}/app.tgz")
        out = tmp_path / "out"
        proc = flatten("build", root, "--out", out, tmp=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert srv.paths() == ["/app.tgz"]
    # Piped stderr: no progress line, only the summary.
    assert "\r" not in proc.stderr and "downloading" not in proc.stderr
    doc = json.loads((out / "main.tf.json").read_text())
    source = doc["module"]["app"]["source"]
    assert source.startswith("./modules/_remote/")
    assert json.loads((out / source / "main.tf.json").read_text())["output"]["id"] == {"value": "${var.name}"}
    manifest = json.loads((out / MANIFEST_NAME).read_text())
    (entry,) = [m for m in manifest["modules"] if m["module"] == "module.app"]
    assert entry["package"]["address"].endswith("/app.tgz")
    assert entry["package"]["digest"].startswith("sha256:")


def test_offline_refuses_to_download(tmp_path: Path) -> None:
    with serving(HTTPServer()) as srv:
        srv.routes["/app.tgz"] = Reply(200, make_tar(CHILD))
        root = remote_root(tmp_path, f"{srv.url}/app.tgz")
        proc = flatten("build", root, "--out", tmp_path / "out", "--offline", tmp=tmp_path)
        assert srv.paths() == []
    assert proc.returncode == 1
    assert "Error: Module not installed" in proc.stderr
    assert "--offline" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_locked_accepts_the_same_resolution_and_refuses_a_change(tmp_path: Path) -> None:
    with serving(HTTPServer()) as srv:
        srv.routes["/app.tgz"] = Reply(200, make_tar(CHILD))
        srv.routes["/app2.tgz"] = Reply(200, make_tar({**CHILD, "extra.tf": ""}))
        root = remote_root(tmp_path, f"{srv.url}/app.tgz")
        out = tmp_path / "out"
        # No manifest yet: --locked has nothing to compare with and refuses.
        first = flatten("build", root, "--out", out, "--locked", tmp=tmp_path)
        assert first.returncode == 1 and "Module not in the lock" in first.stderr
        assert flatten("build", root, "--out", out, tmp=tmp_path).returncode == 0
        before = (out / "main.tf.json").read_bytes()
        again = flatten("build", root, "--out", out, "--locked", tmp=tmp_path)
        assert again.returncode == 0, again.stderr
        (root / "main.tf").write_text((root / "main.tf").read_text().replace("app.tgz", "app2.tgz"))
        changed = flatten("build", root, "--out", out, "--locked", tmp=tmp_path)
    assert changed.returncode == 1
    assert "Error: Module resolution differs from the lock" in changed.stderr
    assert (out / "main.tf.json").read_bytes() == before


def test_graph_and_providers_follow_remote_modules(tmp_path: Path) -> None:
    with serving(HTTPServer()) as srv:
        srv.routes["/app.tgz"] = Reply(200, make_tar(CHILD))
        root = remote_root(tmp_path, f"{srv.url}/app.tgz")
        graph = flatten("graph", root, "--format", "json", tmp=tmp_path)
        assert graph.returncode == 0, graph.stderr
        assert "module.app" in graph.stdout
        offline = flatten("graph", root, "--offline", tmp=tmp_path)
    # The package is in the download cache now, but --offline reads only .terraform/modules.
    assert offline.returncode == 1 and "Module not installed" in offline.stderr


INLINE_SRC = {
    "main.tf": (
        'module "app" {\n  source = "./app"\n  name   = "web"\n}\n\n'
        'module "many" {\n  source = "./app"\n  count  = length(["a", "b"])\n'
        '  name   = "n${count.index}"\n}\n\n'
        'output "id" {\n  value = module.app.id\n}\n'
    ),
    "app/main.tf": (
        'variable "name" {\n  type = string\n}\n\n'
        'resource "terraform_data" "this" {\n  input = var.name\n}\n\n'
        'output "id" {\n  value = terraform_data.this.output\n}\n'
    ),
}


def test_inline_writes_one_module_with_moved_blocks(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "src", INLINE_SRC)
    out = tmp_path / "out"
    proc = flatten("build", root, "--out", out, "--inline", tmp=tmp_path)
    assert proc.returncode == 0, proc.stderr
    # A call whose count is not a literal stays a call, and says why (a literal count is inlined).
    assert "Warning: Module call not inlined" in proc.stderr and "module.many" in proc.stderr
    doc = json.loads((out / "main.tf.json").read_text())
    assert list(doc["module"]) == ["many"]
    moved = doc["moved"] if isinstance(doc["moved"], list) else [doc["moved"]]
    assert {"from": "module.app.terraform_data.this", "to": "terraform_data.app__this"} in moved
    assert "app__this" in doc["resource"]["terraform_data"]


def test_inline_one_module_and_its_errors(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "src", INLINE_SRC)

    def inline(out: str, *args: str) -> subprocess.CompletedProcess[str]:
        return flatten("build", root, "--out", tmp_path / out, *args, tmp=tmp_path)

    one = inline("one", "--inline", "--module", "module.app")
    assert one.returncode == 0, one.stderr
    assert "Module call not inlined" not in one.stderr
    kept = inline("kept", "--inline", "--module", "module.many")
    assert kept.returncode == 1
    assert "Error: Module call not inlined" in kept.stderr and "count" in kept.stderr
    missing = inline("m", "--inline", "--module", "module.nope")
    assert missing.returncode == 1 and "Error: No such module call" in missing.stderr
    usage = inline("u", "--module", "module.app")
    assert usage.returncode == 2 and "--module only applies with --inline" in usage.stderr


def test_inline_with_explicit_providers(tmp_path: Path) -> None:
    root = SAMPLES / "multi-region"
    out = tmp_path / "out"
    proc = flatten("build", root, "--out", out, "--inline", "--explicit-providers", tmp=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((out / "main.tf.json").read_text())
    assert "module" not in doc
    providers = {r.get("provider") for t in doc["resource"].values() for r in t.values()}
    assert {"aws.usw2", "aws.euw1"} <= providers


def test_internal_error_is_one_paragraph_and_exit_3(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = write_tree(tmp_path / "src", {"main.tf": ""})

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(importlib.import_module("flatten.build"), "build", broken)
    monkeypatch.delenv("FLATTEN_TRACEBACK", raising=False)
    monkeypatch.setattr(sys, "argv", ["flatten", "build", str(root), "--out", str(tmp_path / "out")])
    with pytest.raises(SystemExit) as exc:
        cli.main()
    assert exc.value.code == cli.INTERNAL_ERROR
    err = capsys.readouterr().err
    assert "flatten: internal error: RuntimeError: boom" in err
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_userinfo_in_an_archive_url_is_basic_auth_and_never_shown(tmp_path: Path) -> None:
    password = "s3cr3tpw"
    expected = "Basic " + __import__("base64").b64encode(f"bob:{password}".encode()).decode()
    with serving(HTTPServer()) as srv:
        srv.routes["/app.tgz"] = lambda req: (
            Reply(200, make_tar(CHILD)) if req.headers.get("authorization") == expected else Reply(401)
        )
        root = remote_root(tmp_path, f"http://bob:{password}@{srv.host}/app.tgz")
        out = tmp_path / "out"
        proc = flatten("build", root, "--out", out, tmp=tmp_path)
        assert proc.returncode == 0, proc.stderr
        srv.routes["/app.tgz"] = Reply(401)
        (root / "main.tf").write_text((root / "main.tf").read_text().replace("app.tgz", "other.tgz"))
        failed = flatten("build", root, "--out", tmp_path / "out2", tmp=tmp_path)
    assert failed.returncode == 1 and "Traceback" not in failed.stderr
    shown = (
        proc.stderr
        + failed.stderr
        + "".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())
    )
    assert password not in shown
    assert "http://***@" in (out / MANIFEST_NAME).read_text()  # the whole userinfo, user name too
