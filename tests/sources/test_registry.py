"""The registry protocol on loopback: discovery, versions, newest match, download, credentials."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from support.files import write_tree
from support.servers import Registry, Reply, serving
from support.sources import call, run, source_env, summaries

from flatten.lang.diagnostics import render_json, render_text
from flatten.sources.env import SourceEnv, read_cli_credentials, token_env_host

PKG = {"main.tf": 'output "v" {\n  value = 1\n}\n'}
LISTED = [
    "0.9.0",
    "1.0.0",
    "1.0.1",
    "1.1.0",
    "1.2.0-beta",
    "v1.2.0-rc.1",
    "1.2.0",
    "1.10.3",
    "2.0.0",
    "2.1.0-alpha",
]


@pytest.fixture
def registry():
    with serving(Registry()) as reg:
        assert isinstance(reg, Registry)
        reg.add("acme/m/aws", {v: PKG for v in LISTED})
        yield reg


def resolve(reg: Registry, tmp_path: Path, constraint: str | None):
    root = write_tree(tmp_path / "root", {"main.tf": call("m", f"{reg.host}/acme/m/aws", constraint)})
    return run(root, source_env(tmp_path, insecure_hosts=frozenset({reg.host})))


@pytest.mark.parametrize(
    ("constraint", "chosen"),
    [
        (None, "2.0.0"),
        ("1.0.0", "1.0.0"),
        ("= 1.1.0", "1.1.0"),
        ("!= 2.0.0", "1.10.3"),
        ("> 1.1.0", "2.0.0"),
        (">= 1.0, < 1.2", "1.1.0"),
        ("< 1.0.1", "1.0.0"),
        ("<= 1.2.0", "1.2.0"),
        ("~> 1.0", "1.10.3"),
        ("~> 1.0.0", "1.0.1"),
        ("~> 1", "2.0.0"),
        ("1.2.0-beta", "1.2.0-beta"),
        ("=1.2.0-beta", "1.2.0-beta"),
        ("= 1.2.0-beta", "1.10.3"),
        (">= 1.2.0-beta", "2.0.0"),
        ("~> 2.1.0-alpha", "2.1.0-alpha"),
        ("2.1.0-alpha", "2.1.0-alpha"),
    ],
    ids=lambda v: str(v),
)
def test_newest_allowed_version_is_installed(
    registry: Registry, tmp_path: Path, constraint: str | None, chosen: str
) -> None:
    graph, _, diags = resolve(registry, tmp_path, constraint)
    if constraint == "= 1.2.0-beta":  # a space after "=" excludes prereleases: nothing matches
        assert summaries(diags) == ["Unresolvable module version constraint"]
        return
    if constraint == "~> 2.1.0-alpha":  # not an exact request: the prerelease is not a candidate
        assert summaries(diags) == ["Unresolvable module version constraint"]
        return
    assert summaries(diags) == []
    assert graph.node("module.m").package.version == chosen  # type: ignore[union-attr]
    assert f"/v1/modules/acme/m/aws/{chosen}/download" in registry.paths()


def test_unresolvable_names_the_newest(registry: Registry, tmp_path: Path) -> None:
    _, _, diags = resolve(registry, tmp_path, "> 5.0")
    assert summaries(diags) == ["Unresolvable module version constraint"]
    assert "The newest available version is 2.0.0" in diags[0].detail


def test_not_found_no_versions_and_invalid_versions(registry: Registry, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "root", {"main.tf": call("m", f"{registry.host}/acme/missing/aws", "1.0.0")})
    env = source_env(tmp_path, insecure_hosts=frozenset({registry.host}))
    _, _, diags = run(root, env)
    assert summaries(diags) == ["Module not found"]
    registry.routes["/v1/modules/acme/missing/aws/versions"] = Reply(200, b'{"modules":[{"versions":[]}]}')
    _, _, diags = run(root, source_env(tmp_path / "2", insecure_hosts=frozenset({registry.host})))
    assert summaries(diags) == ["Module has no versions"]
    registry.routes["/v1/modules/acme/m/aws/versions"] = Reply(
        200,
        json.dumps(
            {"modules": [{"versions": [{"version": "not.a.version"}, {"version": "1.0.0"}]}]}
        ).encode(),
    )
    (root / "main.tf").write_text(call("m", f"{registry.host}/acme/m/aws"))
    _, _, diags = run(root, source_env(tmp_path / "3", insecure_hosts=frozenset({registry.host})))
    assert summaries(diags) == ["Invalid response from remote module registry"]
    assert diags[0].severity.value == "warning"


def test_discovery_failure(tmp_path: Path) -> None:
    with serving(Registry()) as reg:
        reg.routes["/.well-known/terraform.json"] = Reply(200, b'{"providers.v1": "/p/"}')
        root = write_tree(tmp_path / "root", {"main.tf": call("m", f"{reg.host}/acme/m/aws", "1.0.0")})
        _, _, diags = run(root, source_env(tmp_path, insecure_hosts=frozenset({reg.host})))
    assert summaries(diags) == ["Error accessing remote module registry"]
    assert "modules.v1" in diags[0].detail


def test_json_location_relative_to_the_download_url(tmp_path: Path) -> None:
    with serving(Registry(style="json")) as reg:
        assert isinstance(reg, Registry)
        reg.add("acme/j/aws", {"1.0.0": {"pkg/main.tf": "", "main.tf": ""}}, subdir="pkg")
        root = write_tree(tmp_path / "root", {"main.tf": call("m", f"{reg.host}/acme/j/aws", "1.0.0")})
        graph, _, diags = run(root, source_env(tmp_path, insecure_hosts=frozenset({reg.host})))
    assert summaries(diags) == []
    assert graph.node("module.m").package.subdir == "pkg"  # type: ignore[union-attr]


TOKEN = "s3cr3t-t0ken-value-XYZ"


def test_credentials_are_sent_and_never_shown(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with serving(Registry(token=TOKEN)) as reg:
        assert isinstance(reg, Registry)
        reg.add("acme/private/aws", {"1.0.0": PKG})
        root = write_tree(tmp_path / "root", {"main.tf": call("m", f"{reg.host}/acme/private/aws", "1.0.0")})
        # Without the token: an error that does not invent one.
        _, _, diags = run(root, source_env(tmp_path / "a", insecure_hosts=frozenset({reg.host})))
        assert summaries(diags) == ["Error accessing remote module registry"]
        seen = len(reg.log)
        # Through the CLI configuration file.
        rc = tmp_path / "cli.tfrc"
        rc.write_text(f'credentials "{reg.host}" {{\n  token = "{TOKEN}"\n}}\n')
        env = SourceEnv.from_environ(
            {"TF_CLI_CONFIG_FILE": str(rc), "FLATTEN_CACHE_DIR": str(tmp_path / "c")}, home=tmp_path
        )
        env = type(env)(
            **{**{f: getattr(env, f) for f in env.__slots__}, "insecure_hosts": frozenset({reg.host})}
        )
        assert TOKEN not in repr(env)
        _, tree, diags = run(root, env)
        assert summaries(diags) == []
        assert tree is not None
        api = [r for r in reg.log[seen:] if r.path.startswith("/v1/")]
        assert api and all(r.headers.get("authorization") == f"Bearer {TOKEN}" for r in api)
        everything = b"".join(tree.content(p) for p in tree.paths()).decode()
        # A failing call with the token configured: the diagnostic does not carry it.
        reg.routes["/v1/modules/acme/private/aws/versions"] = lambda req: Reply(
            500, req.headers.get("authorization", "").encode()
        )
        (root / "main.tf").write_text(call("m", f"{reg.host}/acme/private/aws", "1.1.0"))
        _, _, bad = run(root, env)
        assert summaries(bad) == ["Error accessing remote module registry"]
    cache_text = "".join(p.read_text(errors="replace") for p in (tmp_path / "c").rglob("*") if p.is_file())
    for text in (everything, render_text(diags + bad), render_json(diags + bad), caplog.text, cache_text):
        assert TOKEN not in text


def test_token_env_variables(tmp_path: Path) -> None:
    env = SourceEnv.from_environ(
        {"TF_TOKEN_app_terraform_io": "a", "TF_TOKEN_my__reg_example_com": "b", "XDG_CACHE_HOME": "/x"},
        home=tmp_path,
    )
    assert env.token_for("app.terraform.io").reveal() == "a"  # type: ignore[union-attr]
    assert env.token_for("my-reg.example.com").reveal() == "b"  # type: ignore[union-attr]
    assert env.cache_dir == Path("/x/flatten")
    assert SourceEnv.from_environ({}, home=tmp_path).cache_dir == tmp_path / ".cache" / "flatten"
    assert SourceEnv.from_environ({"TF_DATA_DIR": "d"}, home=tmp_path).data_dir == "d"
    assert token_env_host("TF_TOKEN_") is None


def test_cli_config_reader(tmp_path: Path) -> None:
    rc = tmp_path / ".terraformrc"
    rc.write_text(
        '# comment\nplugin_cache_dir = "/x"\n'
        'host "h.example" {\n  services = { "modules.v1" = "https://x/" }\n}\n'
        'credentials "A.example.com" {\n  token = "t1" // trailing\n}\n/* block\ncomment */\n'
        'credentials "b.example.com" { token = "t\\"2" }\n'
    )
    creds = read_cli_credentials(rc)
    assert {h: s.reveal() for h, s in creds.items()} == {"a.example.com": "t1", "b.example.com": 't"2'}
    (tmp_path / ".terraform.d").mkdir()
    (tmp_path / ".terraform.d/credentials.tfrc.json").write_text(
        '{"credentials": {"c.example.com": {"token": "t3"}}}'
    )
    env = SourceEnv.from_environ({"TF_TOKEN_a_example_com": "env"}, home=tmp_path)
    assert {h: s.reveal() for h, s in env.tokens.items()} == {
        "a.example.com": "env",
        "b.example.com": 't"2',
        "c.example.com": "t3",
    }
    assert read_cli_credentials(tmp_path / "missing") == {}


def test_a_reason_that_is_a_sentence_gets_one_period(tmp_path: Path) -> None:
    """Issue 14, item 9: "... not known (2 attempts).." was printed with two periods."""
    with serving(Registry()) as reg:
        reg.routes["/.well-known/terraform.json"] = Reply(200, b'{"providers.v1": "/p/"}')
        root = write_tree(tmp_path / "root", {"main.tf": call("m", f"{reg.host}/acme/m/aws", "1.0.0")})
        _, _, diags = run(root, source_env(tmp_path, insecure_hosts=frozenset({reg.host})))
    assert diags and all(not d.detail.endswith("..") for d in diags)
    assert diags[0].detail.endswith(".")
