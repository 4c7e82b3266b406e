"""Secrets never at rest (issue 30, item 4).

The cache is shared across CI branches and jobs (docs/reliability.md, "The cache"): a registry
token a server echoes back, or a URL password written in a module source, must not be stored in
it, nor in the output. Each build here plants one secret where a server (or the user) can put it,
through the command line over real loopback https, then every byte of the cache, the output and
what was printed is searched for it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.files import write_tree
from support.remote import CHILD
from support.servers import Registry, Reply, make_tar, needs_openssl, self_signed, serving

TOKEN = "s3cr3t-t0ken-9f8e7d"
PASSWORD = "pa55w0rd-4b3c2a"


def _everything(*dirs: Path) -> bytes:
    return b"".join(
        p.read_bytes() + p.name.encode() for d in dirs if d.exists() for p in d.rglob("*") if p.is_file()
    )


def _build(root: Path, tmp: Path, cert: Path, host: str) -> subprocess.CompletedProcess[bytes]:
    rc = tmp / "terraformrc"
    rc.write_text(f'credentials "{host}" {{\n  token = "{TOKEN}"\n}}\n')
    env = {
        **os.environ,
        "FLATTEN_CACHE_DIR": str(tmp / "cache"),
        "TF_CLI_CONFIG_FILE": str(rc),
        "SSL_CERT_FILE": str(cert),
        "FLATTEN_DOWNLOAD_TIMEOUT": "30",
    }
    env.pop("FLATTEN_TRACEBACK", None)
    return subprocess.run(
        [sys.executable, "-m", "flatten", "build", str(root), "--out", str(tmp / "out")],
        capture_output=True,
        env=env,
        timeout=300,
    )


def _registry_answer(reg: Registry, where: str) -> None:
    """Make the registry's download address for acme/m/aws 1.0.0 hold the token at ``where``."""
    archive = "/archives/acme-m-aws-1.0.0.tar.gz"
    location = {
        "subdir": f"{reg.url}{archive}//{TOKEN}",
        "query": f"{reg.url}{archive}?t={TOKEN}",
        "userinfo": f"https://{TOKEN}@{reg.host}{archive}",
        "redirect": f"{reg.url}/moved",
    }[where]
    if where == "redirect":
        reg.routes["/moved"] = Reply(302, headers={"Location": f"{reg.url}{archive}?t={TOKEN}"})
    reg.routes["/v1/modules/acme/m/aws/1.0.0/download"] = Reply(204, headers={"X-Terraform-Get": location})


@needs_openssl
@pytest.mark.parametrize("where", ["subdir", "query", "userinfo", "redirect"])
def test_a_token_the_registry_echoes_into_the_download_address_is_never_stored(
    tmp_path: Path, where: str
) -> None:
    cert, key = self_signed(tmp_path)
    with serving(Registry(token=TOKEN, tls=(cert, key))) as reg:
        assert isinstance(reg, Registry)
        reg.add("acme/m/aws", {"1.0.0": {**CHILD, f"{TOKEN}/main.tf": CHILD["main.tf"]}})
        _registry_answer(reg, where)
        main = f'module "m" {{\n  source  = "{reg.host}/acme/m/aws"\n  version = "1.0.0"\n  name = "x"\n}}\n'
        root = write_tree(tmp_path / "root", {"main.tf": main})
        proc = _build(root, tmp_path, cert, reg.host)
        assert any(r.headers.get("authorization") == f"Bearer {TOKEN}" for r in reg.log)  # it did travel
    assert b"Traceback" not in proc.stderr
    found = _everything(tmp_path / "cache", tmp_path / "out") + proc.stdout + proc.stderr
    assert TOKEN.encode() not in found, (where, proc.returncode, proc.stderr.decode())


@needs_openssl
def test_a_password_in_a_module_source_stays_out_of_every_cache(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    with serving(Registry(tls=(cert, key))) as srv:
        srv.routes["/app.tgz"] = Reply(200, make_tar(CHILD))
        source = f"https://ci:{PASSWORD}@{srv.host}/app.tgz"
        main = f'module "app" {{\n  source = "{source}"\n  name   = "x"\n}}\n'
        # Enough local modules that the parse and module caches are used, each calling the package.
        files = {"main.tf": main}
        for i in range(3):
            files["main.tf"] += f'module "local{i}" {{\n  source = "./m{i}"\n}}\n'
            files[f"m{i}/main.tf"] = main
        root = write_tree(tmp_path / "root", files)
        first = _build(root, tmp_path, cert, "unused.example.com")
        second = _build(root, tmp_path, cert, "unused.example.com")  # warm: reads what was stored
    assert first.returncode == 0 and second.returncode == 0, first.stderr.decode() + second.stderr.decode()
    assert (tmp_path / "cache").exists() and any((tmp_path / "cache").rglob("*"))
    found = _everything(tmp_path / "cache", tmp_path / "out") + first.stderr + second.stderr
    assert PASSWORD.encode() not in found
    assert (tmp_path / "out" / "main.tf.json").exists() or any((tmp_path / "out").rglob("*.tf.json"))
