"""One deadline for a whole build's downloads, over every transport (issue 30, item 1).

Over https the watchdog used to shut down the raw socket, which the ``SSLSocket`` had taken over:
a TLS read stayed blocked and a server trickling one byte at a time held the build for as long as
it liked. The servers here are real loopback https servers with a self-signed certificate made at
test time (the openssl command), trusted through ``SSL_CERT_FILE``.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from support.cli import run_flatten
from support.files import write_tree
from support.remote import CHILD, remote_root
from support.servers import (
    OPENSSL,
    HTTPServer,
    Registry,
    Reply,
    make_tar,
    needs_openssl,
    self_signed,
    serving,
)


def _flatten(*args: str | Path, tmp: Path, **env: str) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    proc = run_flatten(*args, cache=tmp / "cache", timeout=300, env=env)
    return proc, time.monotonic() - started


@needs_openssl
def test_a_trickling_https_server_cannot_hold_the_build(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    body = make_tar(CHILD)
    # Without a working deadline the TLS read only ends with the trickle (len(body) * 0.1 s, over
    # 15 s): the build failed, but late (the issue saw 45 s and 150 s against limits of 10 and 20).
    assert len(body) * 0.1 > 15
    with serving(HTTPServer(tls=(cert, key))) as srv:
        srv.routes["/app.tgz"] = Reply(200, body, trickle=0.1)
        root = remote_root(tmp_path, f"{srv.url}/app.tgz")
        proc, took = _flatten(
            "build", root, "--out", tmp_path / "out", tmp=tmp_path,
            FLATTEN_DOWNLOAD_TIMEOUT="1", SSL_CERT_FILE=str(cert),
        )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "Error: Failed to download module" in proc.stderr
    assert srv.host in proc.stderr and "FLATTEN_DOWNLOAD_TIMEOUT" in proc.stderr
    assert not (tmp_path / "out").exists()
    assert took < 10, took  # the 1 s limit, plus start-up on a loaded machine


@needs_openssl
def test_the_https_server_is_trusted_and_builds_when_fast(tmp_path: Path) -> None:
    """The control: the same server, not slow, builds (so the failure above is the deadline)."""
    cert, key = self_signed(tmp_path)
    with serving(HTTPServer(tls=(cert, key))) as srv:
        srv.routes["/app.tgz"] = Reply(200, make_tar(CHILD))
        root = remote_root(tmp_path, f"{srv.url}/app.tgz")
        proc, _ = _flatten(
            "build", root, "--out", tmp_path / "out", tmp=tmp_path,
            FLATTEN_DOWNLOAD_TIMEOUT="5", SSL_CERT_FILE=str(cert),
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr


@needs_openssl
def test_a_trickling_https_registry_stops_at_its_client_timeout(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    with serving(Registry(tls=(cert, key))) as reg:
        assert isinstance(reg, Registry)
        reg.add("acme/m/aws", {"1.0.0": {"main.tf": 'output "v" {\n  value = 1\n}\n'}})
        listing = json.dumps({"modules": [{"versions": [{"version": "1.0.0"}]}]}).encode() + b" " * 200
        assert len(listing) * 0.1 > 20  # a whole answer, after 20 s
        reg.routes["/v1/modules/acme/m/aws/versions"] = Reply(200, listing, trickle=0.1)
        main = f'module "m" {{\n  source  = "{reg.host}/acme/m/aws"\n  version = "1.0.0"\n}}\n'
        root = write_tree(tmp_path / "root", {"main.tf": main})
        proc, took = _flatten(
            "build", root, "--out", tmp_path / "out", tmp=tmp_path,
            TF_REGISTRY_CLIENT_TIMEOUT="1", TF_REGISTRY_DISCOVERY_RETRY="1", SSL_CERT_FILE=str(cert),
        )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "TF_REGISTRY_CLIENT_TIMEOUT" in proc.stderr and reg.host in proc.stderr
    assert took < 15, took  # two attempts of 1 s and the wait between them, not 2 x 20 s


@pytest.mark.parametrize("tls", [False, True], ids=["http", "https"])
def test_one_deadline_covers_all_the_downloads_of_a_build(tmp_path: Path, tls: bool) -> None:
    """Two packages fetched one after the other (the first calls the second), each 1.5 s: each
    alone is under the 2.5 s limit, together they are not. The limit is the build's."""
    if tls and OPENSSL is None:
        pytest.skip("the openssl command is not installed")
    cert_key = self_signed(tmp_path) if tls else None
    with serving(HTTPServer(tls=cert_key)) as srv:
        second = make_tar(CHILD)
        first = make_tar(
            {"main.tf": f'module "inner" {{\n  source = "{srv.url}/second.tgz"\n  name   = "y"\n}}\n'
             'variable "name" {\n  type = string\n}\n'}
        )  # fmt: skip
        srv.routes["/first.tgz"] = Reply(200, first, delay=1.5)
        srv.routes["/second.tgz"] = Reply(200, second, delay=1.5)
        root = remote_root(tmp_path, f"{srv.url}/first.tgz")
        env = {"FLATTEN_DOWNLOAD_TIMEOUT": "2.5"}
        if cert_key is not None:
            env["SSL_CERT_FILE"] = str(cert_key[0])
        proc, _ = _flatten("build", root, "--out", tmp_path / "out", tmp=tmp_path, **env)
        asked = srv.paths()
    assert asked[:1] == ["/first.tgz"]
    assert proc.returncode == 1, proc.stderr
    assert "FLATTEN_DOWNLOAD_TIMEOUT" in proc.stderr and '"inner"' in proc.stderr
