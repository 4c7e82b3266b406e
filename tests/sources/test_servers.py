"""The loopback peers of tests/support/servers.py work: the HTTP server serves and logs, repos get tags."""

from __future__ import annotations

from pathlib import Path

from support.servers import HTTPServer, Reply, git, make_repo, needs_git, serving


def test_http_server_serves_routes_and_logs() -> None:
    import urllib.request

    with serving(HTTPServer()) as srv:
        srv.routes["/x"] = Reply(200, b"hi")
        assert urllib.request.urlopen(srv.url + "/x?q=1").read() == b"hi"
        assert srv.paths() == ["/x"]


@needs_git
def test_make_repo_tags(tmp_path: Path) -> None:
    bare, shas = make_repo(tmp_path, "r", [({"a.tf": "#1"}, "v1"), ({"a.tf": "#2"}, None)])
    assert git("rev-parse", "v1", cwd=bare) == shas[0]
