"""The git getter against repositories made in the test: bare repos over file://, git daemon on loopback."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.files import write_tree
from support.servers import git, git_daemon, make_repo, needs_git
from support.sources import call, run, source_env, summaries

from flatten.sources import parse_module_source
from flatten.sources.getter import parse_getter_address
from flatten.sources.git import clone, redact_url, resolve_ref
from flatten.sources.package import FetchError


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, list[str]]:
    bare, shas = make_repo(
        tmp_path / "repos",
        "net",
        [
            ({"main.tf": "# one\n", "modules/sub/main.tf": ""}, "v1.0.0"),
            ({"main.tf": "# two\n"}, "v1.1.0"),
            ({"main.tf": "# three\n"}, None),
        ],
    )
    work = tmp_path / "repos" / "net-work"
    git("checkout", "--quiet", "-b", "feature", shas[0], cwd=work)
    (work / "main.tf").write_text("# feature\n")
    git("commit", "--quiet", "-am", "feature", cwd=work)
    git("push", "--quiet", str(bare), "feature", cwd=work)
    return bare, [*shas, git("rev-parse", "HEAD", cwd=work)]


@pytest.mark.parametrize(
    ("source", "url", "ref", "depth"),
    [
        ("git::https://example.com/x.git?ref=v1&depth=1", "https://example.com/x.git", "v1", 1),
        ("github.com/org/repo//sub?ref=main", "https://github.com/org/repo.git", "main", 0),
        ("bitbucket.org/org/repo", "https://bitbucket.org/org/repo.git", "", 0),
        ("git@example.com:org/repo.git?ref=abc", "ssh://git@example.com/org/repo.git", "abc", 0),
        (
            "git::ssh://git@example.com/org/repo.git?ref=v2&other=1",
            "ssh://git@example.com/org/repo.git?other=1",
            "v2",
            0,
        ),
        ("git::file:///srv/r.git?ref=v3", "file:///srv/r.git", "v3", 0),
    ],
)
def test_git_addresses(source: str, url: str, ref: str, depth: int) -> None:
    addr = parse_module_source(source, has_version=False)
    got = parse_getter_address(addr.package)  # type: ignore[union-attr]
    assert (got.kind, got.url, got.ref, got.depth) == ("git", url, ref, depth)


def test_git_sshkey_and_bad_depth_are_refused() -> None:
    with pytest.raises(FetchError, match="sshkey"):
        parse_getter_address("git::ssh://git@h/x.git?sshkey=abc")
    with pytest.raises(FetchError, match="depth"):
        parse_getter_address("git::https://h/x.git?depth=x")


@needs_git
@pytest.mark.parametrize(
    ("ref", "index", "text"),
    [("v1.0.0", 0, "# one\n"), ("", 2, "# three\n"), ("feature", 3, "# feature\n"), ("COMMIT", 1, "# two\n")],
)
def test_clone_by_tag_default_branch_and_commit(
    tmp_path: Path, repo: tuple[Path, list[str]], ref: str, index: int, text: str
) -> None:
    bare, shas = repo
    ref = shas[1] if ref == "COMMIT" else ref
    dest = tmp_path / "out"
    commit = clone("git", f"file://{bare}", dest, ref=ref)
    assert commit == shas[index]
    assert (dest / "main.tf").read_text() == text
    assert not (dest / ".git").exists()
    if ref != shas[1]:
        assert resolve_ref("git", f"file://{bare}", ref) == shas[index]


@needs_git
@pytest.mark.parametrize("ref", ["v1.1.0", "COMMIT"])
def test_shallow_clone(tmp_path: Path, repo: tuple[Path, list[str]], ref: str) -> None:
    bare, shas = repo
    ref = shas[1] if ref == "COMMIT" else ref
    git("config", "uploadpack.allowReachableSHA1InWant", "true", cwd=bare)
    commit = clone("git", f"file://{bare}", tmp_path / "out", ref=ref, depth=1)
    assert commit == shas[1]


@needs_git
def test_missing_ref_is_a_download_error(tmp_path: Path, repo: tuple[Path, list[str]]) -> None:
    bare, _ = repo
    root = write_tree(tmp_path / "root", {"main.tf": call("m", f"git::file://{bare}?ref=nope")})
    _, _, diags = run(root, source_env(tmp_path))
    assert summaries(diags) == ["Failed to download module"]
    assert "nope" in diags[0].detail


@needs_git
def test_git_daemon_over_the_network(tmp_path: Path, repo: tuple[Path, list[str]]) -> None:
    bare, shas = repo
    with git_daemon(bare.parent) as base:
        root = write_tree(
            tmp_path / "root",
            {
                "main.tf": call("a", f"git::{base}/net.git//modules/sub?ref=v1.0.0")
                + call("b", f"git::{base}/net.git")
            },
        )
        graph, tree, diags = run(root, source_env(tmp_path))
        assert summaries(diags) == []
        assert graph.node("module.a").package.commit == shas[0]  # type: ignore[union-attr]
        assert graph.node("module.b").package.commit == shas[2]  # type: ignore[union-attr]
        assert tree is not None
        assert "modules/_remote/net-v1.0.0/modules/sub/main.tf.json" in tree.paths()
        assert "modules/_remote/net/main.tf.json" in tree.paths()
        # A moved branch is noticed (ls-remote) and fetched anew; a pinned tag is served from the cache.
        work = bare.parent / "net-work"
        git("checkout", "--quiet", "main", cwd=work)
        (work / "main.tf").write_text("# four\n")
        git("commit", "--quiet", "-am", "four", cwd=work)
        git("push", "--quiet", str(bare), "main", cwd=work)
        graph, _, diags = run(root, source_env(tmp_path))
        assert summaries(diags) == []
        assert graph.node("module.b").package.commit == git("rev-parse", "HEAD", cwd=work)  # type: ignore[union-attr]


def test_redact_url_hides_every_userinfo_part() -> None:
    # A user name alone may be a token (https://<token>@github.com/...), and a password may hold "@".
    assert (
        redact_url("https://user:tok@h/x https://h/y ssh://git@h/z git::https://ghp_T0KEN@github.com/o/r")
        == "https://***@h/x https://h/y ssh://git@h/z git::https://***@github.com/o/r"
    )
    assert redact_url('"https://bob:p@ss@h/x.zip"') == '"https://***@h/x.zip"'
    assert redact_url("ssh://alice@h/z ssh://git:pw@h/z") == "ssh://***@h/z ssh://***@h/z"
