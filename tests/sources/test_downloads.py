"""Downloads and credentials (docs/reliability.md, "Downloads and credentials"): tokens only over
https and to their own host, no URL userinfo anywhere it is shown or stored, complete bodies only,
deadlines on every request and download, redirects followed as Go's client does, server text
neutralised, and leftovers of killed downloads cleaned. Every peer is a real server on loopback.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.cli import run_flatten
from support.files import write_tree
from support.remote import CHILD, remote_root
from support.servers import HTTPServer, Registry, Reply, make_tar, serving
from support.sources import call, run, source_env, summaries

from flatten.lang.diagnostics import render_json, render_text
from flatten.sources.env import Secret, SourceEnv
from flatten.sources.transport import HttpClient

TOKEN = "tfe-T0KEN-abcdef0123456789"
PKG = {"main.tf": 'output "v" {\n  value = 1\n}\n'}


def flatten(*args: str | Path, tmp: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return run_flatten(*args, cache=tmp / "cache", timeout=300, env=env)


def everything_written(*dirs: Path) -> str:
    return "".join(p.read_text(errors="replace") for d in dirs for p in d.rglob("*") if p.is_file())


# -- item 5: credentials ------------------------------------------------------------------------


def test_a_token_never_travels_over_plain_http_even_to_its_own_host() -> None:
    with serving(HTTPServer()) as srv:
        srv.routes["/x"] = Reply(200, b"ok")
        tokens = {srv.host: Secret(TOKEN)}
        assert HttpClient(tokens=tokens).get(f"{srv.url}/x").body == b"ok"
        assert "authorization" not in srv.log[-1].headers
        # Only a host the caller explicitly allows (a loopback test registry) gets it over http.
        HttpClient(tokens=tokens, insecure_hosts=frozenset({srv.host})).get(f"{srv.url}/x")
        assert srv.log[-1].headers.get("authorization") == f"Bearer {TOKEN}"


def test_a_registry_pointing_downloads_at_plain_http_on_a_token_host_gets_no_token(tmp_path: Path) -> None:
    with serving(Registry(token=TOKEN)) as reg, serving(HTTPServer()) as files:
        assert isinstance(reg, Registry)
        files.routes["/pkg.tgz"] = Reply(200, make_tar(PKG))
        reg.add("acme/m/aws", {"1.0.0": PKG})
        reg.routes["/v1/modules/acme/m/aws/1.0.0/download"] = Reply(
            204, headers={"X-Terraform-Get": f"{files.url}/pkg.tgz"}
        )
        root = write_tree(tmp_path / "root", {"main.tf": call("m", f"{reg.host}/acme/m/aws", "1.0.0")})
        env = source_env(
            tmp_path,
            tokens={reg.host: Secret(TOKEN), files.host: Secret(TOKEN)},
            insecure_hosts=frozenset({reg.host}),
        )
        _, tree, diags = run(root, env)
    assert summaries(diags) == [] and tree is not None
    assert [r.headers.get("authorization") for r in files.log] == [None]


def test_userinfo_is_never_shown_by_offline_graph_providers_manifest_or_cache(tmp_path: Path) -> None:
    secrets = ("ghp_UserNameT0ken", "p@ss-w0rd")
    with serving(HTTPServer()) as srv:
        srv.routes["/a.tgz"] = Reply(200, make_tar(CHILD))
        srv.routes["/b.tgz"] = Reply(200, make_tar(CHILD))
        main = (
            f'module "a" {{\n  source = "http://{secrets[0]}@{srv.host}/a.tgz"\n  name = "x"\n}}\n'
            f'module "b" {{\n  source = "http://bob:{secrets[1]}@{srv.host}/b.tgz"\n  name = "x"\n}}\n'
        )
        root = write_tree(tmp_path / "src", {"main.tf": main})
        shown: list[str] = []
        for args in (
            ("build", root, "--out", tmp_path / "off", "--offline"),
            ("build", root, "--out", tmp_path / "off", "--offline", "--diagnostics-json"),
            ("build", root, "--out", tmp_path / "out"),
            *(("graph", root, "--format", fmt) for fmt in ("text", "dot", "mermaid", "json")),
            ("providers", root, "--json"),
            ("providers", root),
        ):
            proc = flatten(*args, tmp=tmp_path)
            assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
            shown += [proc.stdout, proc.stderr]
        assert sorted(set(srv.paths())) == ["/a.tgz", "/b.tgz"]
    # The download cache (not the parse caches, which hold the user's own files as they are).
    text = "".join(shown) + everything_written(tmp_path / "out", tmp_path / "cache" / "v1")
    assert "Module not installed" in text and "http://***@" in text
    for secret in (*secrets, "bob", "ss-w0rd"):
        assert secret not in text


def test_a_token_the_registry_echoes_back_and_its_control_characters_are_never_shown(tmp_path: Path) -> None:
    with serving(Registry(token=TOKEN)) as reg:
        assert isinstance(reg, Registry)
        reg.add("acme/m/aws", {"1.0.0": PKG})
        listing = {
            "modules": [{"versions": [{"version": v} for v in ("1.0.0", f"1.0.1+{TOKEN}", "9\x1b[2J\x07")]}]
        }
        reg.routes["/v1/modules/acme/m/aws/versions"] = Reply(200, json.dumps(listing).encode())
        root = write_tree(tmp_path / "root", {"main.tf": call("m", f"{reg.host}/acme/m/aws")})
        env = source_env(tmp_path, tokens={reg.host: Secret(TOKEN)}, insecure_hosts=frozenset({reg.host}))
        graph, tree, diags = run(root, env)
    assert tree is not None
    assert graph.node("module.m").package.version == "1.0.0"  # type: ignore[union-attr]
    assert summaries(diags) == ["Invalid response from remote module registry"] * 2
    shown = render_text(diags) + render_json(diags) + "".join(tree.content(p).decode() for p in tree.paths())
    assert TOKEN not in shown and "\x1b" not in shown and "\x07" not in shown
    assert "\\x1b[2J" in shown  # shown as an escape, so the user still sees what the server sent


# -- item 7: truncated downloads ----------------------------------------------------------------


def test_a_download_cut_short_is_an_error_and_never_cached(tmp_path: Path) -> None:
    # A plain tar cut at a member boundary reads as a valid, smaller archive: only the length tells.
    full = make_tar({"main.tf": PKG["main.tf"], "extra.tf": "locals {\n  x = 1\n}\n"}, mode="w")
    with serving(HTTPServer()) as srv:
        srv.routes["/m.tar"] = Reply(200, full[:1024], length=len(full))
        root = write_tree(tmp_path / "root", {"main.tf": call("m", f"{srv.url}/m.tar")})
        _, _, diags = run(root, source_env(tmp_path))
        assert summaries(diags) == ["Failed to download module"]
        assert f"cut short: 1024 of {len(full)} bytes" in diags[0].detail
        assert not list((tmp_path / "cache" / "v1" / "packages").glob("*"))
        srv.routes["/m.tar"] = Reply(200, full)  # the server is fixed: the next build gets it whole
        graph, _, diags = run(root, source_env(tmp_path))
    assert summaries(diags) == []
    assert (graph.node("module.m").directory / "extra.tf").is_file()  # type: ignore[operator]


# -- item 8: deadlines --------------------------------------------------------------------------


def test_registry_timeout_and_retry_follow_terraforms_variables(tmp_path: Path) -> None:
    env = SourceEnv.from_environ(
        {
            "TF_REGISTRY_CLIENT_TIMEOUT": "1",
            "TF_REGISTRY_DISCOVERY_RETRY": "2",
            "FLATTEN_DOWNLOAD_TIMEOUT": "0.5",
        },
        home=tmp_path,
    )
    assert (env.timeout, env.retries, env.download_timeout) == (1.0, 2, 0.5)
    # Terraform ignores what is not a whole number above zero, and keeps its defaults.
    bad = SourceEnv.from_environ(
        {
            "TF_REGISTRY_CLIENT_TIMEOUT": "0.5",
            "TF_REGISTRY_DISCOVERY_RETRY": "0",
            "FLATTEN_DOWNLOAD_TIMEOUT": "x",
        },
        home=tmp_path,
    )
    assert (bad.timeout, bad.retries, bad.download_timeout) == (10.0, 1, 600.0)
    with serving(Registry()) as reg:
        reg.routes["/.well-known/terraform.json"] = Reply(200, b"{}", delay=30)  # a silent socket
        root = write_tree(tmp_path / "root", {"main.tf": call("m", f"{reg.host}/acme/m/aws", "1.0.0")})
        env = source_env(
            tmp_path, timeout=1.0, retries=1, retry_wait=0.0, insecure_hosts=frozenset({reg.host})
        )
        _, _, diags = run(root, env)
        asked = reg.paths()
    assert summaries(diags) == ["Error accessing remote module registry"]
    assert reg.host in diags[0].detail and "TF_REGISTRY_CLIENT_TIMEOUT" in diags[0].detail
    assert "2 attempts" in diags[0].detail
    assert asked == ["/.well-known/terraform.json"] * 2  # one retry, as Terraform's default


@pytest.mark.parametrize("how", ["trickle", "silent"])
def test_a_slow_archive_server_cannot_hold_the_build(tmp_path: Path, how: str) -> None:
    body = make_tar(CHILD)
    # Without a deadline the trickle ends (a valid archive, after ~len(body) * 0.05 s) and the
    # build succeeds; the silent server answers after 60 s.
    reply = Reply(200, body, trickle=0.05) if how == "trickle" else Reply(200, body, delay=60)
    with serving(HTTPServer()) as srv:
        srv.routes["/app.tgz"] = reply
        root = remote_root(tmp_path, f"{srv.url}/app.tgz")
        proc = flatten("build", root, "--out", tmp_path / "out", tmp=tmp_path, FLATTEN_DOWNLOAD_TIMEOUT="1")
    assert proc.returncode == 1, proc.stderr
    assert "Error: Failed to download module" in proc.stderr
    assert srv.host in proc.stderr and "FLATTEN_DOWNLOAD_TIMEOUT" in proc.stderr
    assert not (tmp_path / "out").exists()


# -- item 11: redirects -------------------------------------------------------------------------


def test_redirects_are_followed_for_archives_and_registry_requests(tmp_path: Path) -> None:
    with serving(Registry()) as reg:
        assert isinstance(reg, Registry)
        reg.add("acme/m/aws", {"1.0.0": PKG})
        reg.routes["/moved/versions"] = reg.routes.pop("/v1/modules/acme/m/aws/versions")
        reg.routes["/v1/modules/acme/m/aws/versions"] = Reply(301, headers={"Location": "/moved/versions"})
        reg.routes["/v1/modules/acme/m/aws/1.0.0/download"] = Reply(
            204, headers={"X-Terraform-Get": "/hop/1.tgz"}
        )
        # A chain of redirects (absolute, relative; 302, 307, 308) ending at the archive.
        reg.routes["/hop/1.tgz"] = Reply(302, headers={"Location": f"{reg.url}/hop/2"})
        reg.routes["/hop/2"] = Reply(307, headers={"Location": "3"})
        reg.routes["/hop/3"] = Reply(308, headers={"Location": "/archives/acme-m-aws-1.0.0.tar.gz"})
        root = write_tree(tmp_path / "root", {"main.tf": call("m", f"{reg.host}/acme/m/aws", "1.0.0")})
        graph, _, diags = run(root, source_env(tmp_path, insecure_hosts=frozenset({reg.host})))
    assert summaries(diags) == []
    assert (graph.node("module.m").directory / "main.tf").is_file()  # type: ignore[operator]


def test_an_archive_link_that_redirects_builds_through_the_cli(tmp_path: Path) -> None:
    with serving(HTTPServer()) as srv:
        srv.routes["/codeload/app.tar.gz"] = Reply(200, make_tar(CHILD))
        srv.routes["/archive/app.tar.gz"] = Reply(302, headers={"Location": f"{srv.url}/codeload/app.tar.gz"})
        root = remote_root(tmp_path, f"{srv.url}/archive/app.tar.gz")
        proc = flatten("build", root, "--out", tmp_path / "out", tmp=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert srv.paths() == ["/archive/app.tar.gz", "/codeload/app.tar.gz"]


def test_credentials_follow_a_redirect_only_to_the_same_host(tmp_path: Path) -> None:
    with serving(Registry(token=TOKEN)) as reg, serving(HTTPServer()) as other:
        assert isinstance(reg, Registry)
        reg.add("acme/m/aws", {"1.0.0": PKG})
        listing = reg.routes["/v1/modules/acme/m/aws/versions"]
        reg.routes["/same/versions"] = listing
        reg.routes["/v1/modules/acme/m/aws/versions"] = Reply(302, headers={"Location": "/same/versions"})
        other.routes["/pkg.tgz"] = Reply(200, make_tar(PKG))
        reg.routes["/archives/acme-m-aws-1.0.0.tar.gz"] = Reply(
            302, headers={"Location": f"{other.url}/pkg.tgz"}
        )
        root = write_tree(tmp_path / "root", {"main.tf": call("m", f"{reg.host}/acme/m/aws", "1.0.0")})
        env = source_env(
            tmp_path,
            tokens={reg.host: Secret(TOKEN), other.host: Secret(TOKEN)},
            insecure_hosts=frozenset({reg.host, other.host}),
        )
        _, tree, diags = run(root, env)
    assert summaries(diags) == [] and tree is not None
    same = [r for r in reg.log if r.path == "/same/versions"]
    assert same and same[0].headers.get("authorization") == f"Bearer {TOKEN}"
    assert [r.headers.get("authorization") for r in other.log] == [None]


def test_a_redirect_loop_stops_after_ten_with_a_clear_error(tmp_path: Path) -> None:
    with serving(HTTPServer()) as srv:
        srv.routes["/loop.zip"] = Reply(302, headers={"Location": "/loop.zip"})
        root = remote_root(tmp_path, f"{srv.url}/loop.zip")
        proc = flatten("build", root, "--out", tmp_path / "out", tmp=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "redirected more than 10 times" in proc.stderr
    assert len(srv.log) == 11


# -- item 13: leftovers of a killed download ----------------------------------------------------


def test_leftovers_of_a_download_killed_outright_are_removed_once_stale(tmp_path: Path) -> None:
    tmp = tmp_path / "cache" / "v1" / "tmp"
    with serving(HTTPServer()) as srv:
        srv.routes["/slow.tgz"] = Reply(200, make_tar(CHILD), trickle=1.0)
        srv.routes["/app.tgz"] = Reply(200, make_tar(CHILD))
        env = {**os.environ, "FLATTEN_CACHE_DIR": str(tmp_path / "cache")}
        slow = remote_root(tmp_path / "slow", f"{srv.url}/slow.tgz")
        proc = subprocess.Popen(
            [sys.executable, "-m", "flatten", "build", str(slow), "--out", str(tmp_path / "o1")],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            for _ in range(600):  # until the download has started
                if srv.log and tmp.is_dir() and any(tmp.iterdir()):
                    break
                time.sleep(0.05)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        (killed,) = list(tmp.iterdir())
        fresh = tmp / "pkg-another-build-in-progress"
        fresh.mkdir()
        two_days = time.time() - 2 * 86400
        os.utime(killed, (two_days, two_days))
        proc2 = flatten(
            "build",
            remote_root(tmp_path / "ok", f"{srv.url}/app.tgz"),
            "--out",
            tmp_path / "o2",
            tmp=tmp_path,
        )
    assert proc2.returncode == 0, proc2.stderr
    assert not killed.exists()
    assert fresh.is_dir()  # a young directory may belong to a live download: kept


def test_credentials_stay_out_of_cache_keys(tmp_path: Path) -> None:
    # The entry is keyed by the URL without its userinfo: another password for the same archive
    # finds it, and no file of the cache, its name included, depends on the secret.
    with serving(HTTPServer()) as srv:
        srv.routes["/app.tgz"] = Reply(200, make_tar(PKG))
        for i, password in enumerate(("first-s3cret", "second-s3cret")):
            root = write_tree(
                tmp_path / f"r{i}", {"main.tf": call("m", f"http://bob:{password}@{srv.host}/app.tgz")}
            )
            _, _, diags = run(root, source_env(tmp_path))
            assert summaries(diags) == []
        assert srv.paths() == ["/app.tgz"]
    names = "".join(str(p) for p in (tmp_path / "cache").rglob("*"))
    assert "s3cret" not in names + everything_written(tmp_path / "cache")


def test_json_nested_past_the_recursion_limit_in_a_lock_or_credentials_file_is_ignored(
    tmp_path: Path,
) -> None:
    from flatten.sources.env import read_cli_credentials
    from flatten.sources.fetcher import read_lock

    deep = b"[" * 100_000 + b"]" * 100_000  # json.loads raises RecursionError, not ValueError
    assert read_lock(deep) == {}
    creds = tmp_path / "credentials.tfrc.json"
    creds.write_bytes(deep)
    assert read_cli_credentials(creds) == {}
