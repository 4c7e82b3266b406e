"""Loopback peers for the remote-source tests: an HTTP server (registry protocol and archives),
git repositories made in the test, and ``git daemon``; plus archive builders.

Everything listens on 127.0.0.1 only. Test modules import these helpers; tests/sources/test_servers.py
checks the helpers themselves.
"""

from __future__ import annotations

import io
import json
import shutil
import socket
import ssl
import subprocess
import tarfile
import threading
import time
import zipfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None, reason="the git binary is not installed")


@dataclass
class Reply:
    """One answer. ``length`` declares another Content-Length than the body's (a body cut short);
    ``delay`` is a silence before anything is sent, ``trickle`` a pause before each byte."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    length: int | None = None
    delay: float = 0.0
    trickle: float = 0.0


Route = Reply | Callable[["Request"], Reply]


@dataclass(frozen=True)
class Request:
    path: str
    headers: Mapping[str, str]


class HTTPServer:
    """A threaded HTTP server on 127.0.0.1 serving ``routes`` (path → reply) and logging requests."""

    def __init__(self, *, tls: tuple[Path, Path] | None = None) -> None:
        """``tls``: (certificate, key) files; the server then speaks https (see :func:`self_signed`)."""
        self.routes: dict[str, Route] = {}
        self.log: list[Request] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                req = Request(self.path, {k.lower(): v for k, v in self.headers.items()})
                owner.log.append(req)
                route = owner.routes.get(self.path.partition("?")[0])
                reply = (
                    Reply(404, b"not found")
                    if route is None
                    else route
                    if isinstance(route, Reply)
                    else route(req)
                )
                try:
                    time.sleep(reply.delay)
                    self.send_response(reply.status)
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    declared = len(reply.body) if reply.length is None else reply.length
                    self.send_header("Content-Length", str(declared))
                    self.end_headers()
                    if reply.trickle:
                        for i in range(len(reply.body)):
                            time.sleep(reply.trickle)
                            self.wfile.write(reply.body[i : i + 1])
                            self.wfile.flush()
                    else:
                        self.wfile.write(reply.body)
                    if declared != len(reply.body):
                        self.close_connection = True  # the body ends where the connection does
                except OSError:
                    self.close_connection = True  # the client gave up (a deadline): nothing to report

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(str(tls[0]), str(tls[1]))
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.host = f"127.0.0.1:{self.port}"
        self.url = f"{'https' if tls else 'http'}://{self.host}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def paths(self) -> list[str]:
        return [r.path.partition("?")[0] for r in self.log]


OPENSSL = shutil.which("openssl")
needs_openssl = pytest.mark.skipif(OPENSSL is None, reason="the openssl command is not installed")


def self_signed(directory: Path) -> tuple[Path, Path]:
    """Make a self-signed certificate for 127.0.0.1 with the openssl command: (certificate, key).

    A client trusts it with ``SSL_CERT_FILE=<certificate>`` (OpenSSL's default verify paths).
    """
    assert OPENSSL is not None
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [
            OPENSSL, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
            "-addext", "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )  # fmt: skip
    return cert, key


class Registry(HTTPServer):
    """A module registry speaking the real protocol; packages are served as tar.gz archives.

    ``token``: when set, API requests must carry ``Authorization: Bearer <token>``.
    ``style``: "header" (204 + X-Terraform-Get) or "json" (200 + {"location": ...}).
    """

    def __init__(
        self, *, token: str | None = None, style: str = "header", tls: tuple[Path, Path] | None = None
    ) -> None:
        super().__init__(tls=tls)
        self.token = token
        self.style = style
        self.routes["/.well-known/terraform.json"] = Reply(
            200, json.dumps({"modules.v1": "/v1/modules/"}).encode(), {"Content-Type": "application/json"}
        )

    def _auth(self, inner: Callable[[Request], Reply]) -> Callable[[Request], Reply]:
        def check(req: Request) -> Reply:
            if self.token is not None and req.headers.get("authorization") != f"Bearer {self.token}":
                return Reply(401, b'{"errors":["unauthorized"]}')
            return inner(req)

        return check

    def add(
        self, package: str, versions: Mapping[str, Mapping[str, str | bytes]], *, subdir: str = ""
    ) -> None:
        """Publish ``ns/name/system`` with ``{version: files}``; downloads point at relative archive URLs."""
        listing = {"modules": [{"versions": [{"version": v} for v in versions]}]}
        self.routes[f"/v1/modules/{package}/versions"] = self._auth(
            lambda req: Reply(200, json.dumps(listing).encode())
        )
        for version, files in versions.items():
            archive = f"/archives/{package.replace('/', '-')}-{version}.tar.gz"
            self.routes[archive] = Reply(200, make_tar(files), {"Content-Type": "application/gzip"})
            location = archive + (f"//{subdir}" if subdir else "")
            if self.style == "header":
                reply = Reply(204, b"", {"X-Terraform-Get": location})
            else:
                reply = Reply(200, json.dumps({"location": "../../../../../.." + location}).encode())
            self.routes[f"/v1/modules/{package}/{version}/download"] = self._auth(lambda req, r=reply: r)


@contextmanager
def serving(server: HTTPServer) -> Iterator[HTTPServer]:
    try:
        yield server
    finally:
        server.close()


# -- archives ---------------------------------------------------------------------------------


def make_tar(files: Mapping[str, str | bytes], *, mode: str = "w:gz") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tar:  # type: ignore[call-overload]
        for name, content in sorted(files.items()):
            data = content.encode() if isinstance(content, str) else content
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o755 if name.endswith(".sh") else 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def make_zip(files: Mapping[str, str | bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, content in sorted(files.items()):
            zf.writestr(name, content)
    return buf.getvalue()


# -- git --------------------------------------------------------------------------------------


def git(*args: str, cwd: Path) -> str:
    assert GIT is not None
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(cwd),
        "PATH": "/usr/bin:/bin",
    }
    proc = subprocess.run([GIT, *args], cwd=cwd, capture_output=True, text=True, env=env, check=True)
    return proc.stdout.strip()


def make_repo(
    base: Path, name: str, history: list[tuple[Mapping[str, str], str | None]]
) -> tuple[Path, list[str]]:
    """Create the bare repo ``base/<name>.git`` from commits ``(files, tag)``; return it and the SHAs."""
    work = base / f"{name}-work"
    work.mkdir(parents=True)
    git("init", "--quiet", "--initial-branch=main", cwd=work)
    shas = []
    for files, tag in history:
        for rel, text in files.items():
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            (work / rel).write_text(text)
        git("add", "-A", cwd=work)
        git("commit", "--quiet", "-m", tag or "commit", cwd=work)
        shas.append(git("rev-parse", "HEAD", cwd=work))
        if tag:
            git("tag", tag, cwd=work)
    bare = base / f"{name}.git"
    git("clone", "--quiet", "--bare", str(work), str(bare), cwd=base)
    return bare, shas


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def git_daemon(base: Path) -> Iterator[str]:
    """Serve the repositories under ``base`` with ``git daemon`` on loopback; yield ``git://127.0.0.1:<port>``."""
    assert GIT is not None
    port = free_port()
    proc = subprocess.Popen(
        [
            GIT,
            "daemon",
            "--export-all",
            "--reuseaddr",
            f"--base-path={base}",
            f"--port={port}",
            "--listen=127.0.0.1",
            str(base),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                time.sleep(0.05)
        else:
            pytest.skip("git daemon did not start listening on 127.0.0.1")
        yield f"git://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
