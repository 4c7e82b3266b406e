"""HTTP for the registry protocol and archive downloads, over the standard library's urllib.

Rules for the file:

- **Credentials.** A registry token goes only to the host it belongs to and only over https (or
  to a host the caller listed in ``insecure_hosts``: loopback test servers); a URL's own
  ``user:password@`` is sent as basic authentication, as go-getter does. A redirect carries a
  credential only to the same host, and never over plain http. No message built here contains a
  header value or a URL's userinfo.
- **Redirects** are followed as Go's HTTP client does (go-getter, Terraform's registry client):
  301, 302, 303, 307 and 308, at most 10, to http or https only.
- **Deadlines.** Every request has a :class:`Deadline` for the whole exchange, headers and body
  (a watchdog shuts the socket down when it passes, so a server sending one byte every few
  seconds cannot hold a build), and a socket silent for ``idle_timeout`` fails sooner. Registry
  API requests each get ``timeout`` seconds and are retried as Terraform's are; all the requests
  of one build share its ``budget`` (FLATTEN_DOWNLOAD_TIMEOUT), the git commands too (getter.py).
- **Complete bodies.** A body shorter than its ``Content-Length`` is an error, never a result.

Every network failure becomes a :class:`FetchError`; an HTTP error status is returned to the
caller, who knows what it means.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import http.client
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from flatten import gate
from flatten.lang.oserror import Refused, describe_os_error
from flatten.lang.redact import redact_url
from flatten.lang.release import __version__
from flatten.sources.env import Secret
from flatten.sources.package import FetchError

__all__ = ["Deadline", "HttpClient", "Response", "url_host"]

MAX_REDIRECTS = 10  # Go's http.Client, which go-getter and Terraform's registry client use
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_NETWORK_ERRORS = (urllib.error.URLError, OSError, ValueError, http.client.HTTPException)
_T = TypeVar("_T")


def url_host(url: str) -> str:
    """Return the ``host[:port]`` of a URL, lowercase, with ``:443`` dropped for https.

    An https URL and a port-less http URL of one host give the same value (as Terraform's
    credentials lookup, which ignores the scheme); whether a token may go is decided apart.

    >>> url_host("https://Example.com:443/x"), url_host("http://127.0.0.1:8080/")
    ('example.com', '127.0.0.1:8080')
    """
    try:
        parts = urllib.parse.urlsplit(url)
        host = (parts.hostname or "").lower()
        port = parts.port
    except ValueError:  # a bad port or IPv6 literal: the raw authority (the request itself fails)
        return url.partition("://")[2].partition("/")[0].rpartition("@")[2].lower()
    if port is not None and not (parts.scheme == "https" and port == 443):
        host = f"{host}:{port}"
    return host


def _seconds(value: float) -> str:
    return "1 second" if value == 1 else f"{value:g} seconds"


@dataclass(frozen=True, slots=True)
class Deadline:
    """A point in time (``time.monotonic``) by which an exchange must end, and what set it."""

    at: float
    seconds: float
    setting: str

    @classmethod
    def after(cls, seconds: float, setting: str) -> Deadline:
        return cls(time.monotonic() + seconds, seconds, setting)

    def remaining(self) -> float:
        return self.at - time.monotonic()

    def earlier(self, other: Deadline | None) -> Deadline:
        """The one of ``self`` and ``other`` that passes first (``self`` when ``other`` is None)."""
        return other if other is not None and other.at < self.at else self

    def error(self, host: str) -> FetchError:
        return _Failure(
            f"no complete answer from {host} within {_seconds(self.seconds)} (the limit {self.setting} "
            "sets); the server is too slow or not responding",
            retryable=True,
        )


@dataclass(frozen=True, slots=True)
class Response:
    """A finished request: status, headers (lowercase names), body, and the final URL."""

    status: int
    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""


class _Failure(FetchError):
    """A failed exchange, and whether Terraform's retry client would try it again."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


class _NoRaise(urllib.request.HTTPErrorProcessor):
    # Statuses (errors and redirects alike) come back to HttpClient, which decides.
    def http_response(self, request, response):  # type: ignore[no-untyped-def]
        return response

    https_response = http_response


class _Watch:
    """Shuts down the sockets of one exchange when its deadline fires (waking any blocked read).

    It keeps a duplicate of each socket's descriptor: https wraps the socket in an ``SSLSocket``,
    which takes over the descriptor and leaves the original object closed, so shutting that one
    down did nothing and a TLS read (or handshake) stayed blocked. ``shutdown(2)`` acts on the
    connection, not the descriptor, so shutting the duplicate down wakes the TLS read too.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._socks: list[socket.socket] = []
        self.expired = False

    def connect(self, *args: Any, **kwargs: Any) -> socket.socket:
        sock = socket.create_connection(*args, **kwargs)
        with self._lock:
            if self.expired:
                _shut(sock)
            else:
                self._socks.append(sock.dup())
        return sock

    def fire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._socks:
                _shut(sock)

    def close(self) -> None:
        with self._lock:
            for sock in self._socks:
                sock.close()
            self._socks.clear()


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed
        sock.shutdown(socket.SHUT_RDWR)


class _WatchedHTTP(http.client.HTTPConnection):
    def __init__(self, *args: Any, watch: _Watch, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = watch.connect


class _WatchedHTTPS(http.client.HTTPSConnection):
    def __init__(self, *args: Any, watch: _Watch, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = watch.connect


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, watch: _Watch) -> None:
        super().__init__()
        self._watch = watch

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(functools.partial(_WatchedHTTP, watch=self._watch), req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, watch: _Watch) -> None:
        super().__init__()
        self._watch = watch

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(
            functools.partial(_WatchedHTTPS, watch=self._watch),
            req,
            context=self._context,  # type: ignore[attr-defined]
            check_hostname=self._check_hostname,  # type: ignore[attr-defined]
        )


def _basic(parts: urllib.parse.SplitResult) -> str | None:
    if parts.username is None and parts.password is None:
        return None
    user = urllib.parse.unquote(parts.username or "")
    password = urllib.parse.unquote(parts.password or "")
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


def _check_length(resp: http.client.HTTPResponse, got: int, url: str) -> None:
    # http.client reads a Content-Length body up to that length and then reports end of file
    # even when the connection closed early; a chunked body cut short raises IncompleteRead.
    declared = resp.headers.get("Content-Length", "")
    if resp.chunked or not declared.strip().isdigit() or resp.status in (204, 304):
        return
    if got < int(declared):
        raise _Failure(
            f"the response from {redact_url(url)} was cut short: {got} of {int(declared)} bytes arrived",
            retryable=True,
        )


class HttpClient:
    """A small HTTP client: ``GET`` into memory or into a file, with per-host bearer tokens.

    ``timeout`` bounds each registry API request and ``retries``/``retry_wait`` repeat it
    (:class:`~flatten.sources.env.SourceEnv`); ``idle_timeout`` bounds each wait on a socket;
    ``budget`` is the deadline of the whole build's downloads, which no request outlives.
    """

    def __init__(
        self,
        *,
        tokens: Mapping[str, Secret],
        insecure_hosts: frozenset[str] = frozenset(),
        timeout: float = 10.0,
        retries: int = 1,
        retry_wait: float = 1.0,
        idle_timeout: float = 60.0,
        budget: Deadline | None = None,
    ) -> None:
        self._tokens = tokens
        self._budget = budget
        self._insecure = insecure_hosts
        self._timeout = timeout
        self._retries = retries
        self._retry_wait = retry_wait
        self._idle = idle_timeout

    # -- requests --------------------------------------------------------------------------------

    def _plain(self, url: str) -> bool:
        """Whether ``url`` travels unencrypted to a host not explicitly allowed to receive credentials."""
        return urllib.parse.urlsplit(url).scheme != "https" and url_host(url) not in self._insecure

    def _credential(self, url: str) -> str | None:
        """The Authorization header the first request to ``url`` carries, if any."""
        basic = _basic(urllib.parse.urlsplit(url))
        if basic is not None:
            return basic  # written into the address by the user (or the registry): go-getter sends it
        token = self._tokens.get(url_host(url))
        if token is None or self._plain(url):
            return None  # a token never travels over plain http, even to its own host
        return f"Bearer {token.reveal()}"

    def _request(
        self, url: str, headers: Mapping[str, str], credential: str | None
    ) -> urllib.request.Request:
        # urllib would put a URL's userinfo into the Host header and fail, quoting the password in
        # its error: the userinfo leaves the URL here (it is sent as basic authentication instead).
        parts = urllib.parse.urlsplit(url)
        netloc = parts.netloc.rpartition("@")[2]
        req = urllib.request.Request(urllib.parse.urlunsplit(parts._replace(netloc=netloc)), method="GET")
        req.add_header("User-Agent", f"flatten/{__version__}")
        for name, value in headers.items():
            req.add_header(name, value)
        if credential is not None:
            req.add_header("Authorization", credential)
        return req

    def _exchange(
        self,
        url: str,
        headers: Mapping[str, str],
        deadline: Deadline,
        read: Callable[[http.client.HTTPResponse, str], _T],
    ) -> tuple[Response, _T | None]:
        """GET ``url``, following redirects; ``read`` consumes the final 2xx body (None otherwise)."""
        deadline = deadline.earlier(self._budget)  # the build's downloads share one deadline too
        origin = url_host(url)
        try:
            credential = self._credential(url)
        except ValueError:
            raise _Failure(f"{redact_url(url)} is not a valid URL", retryable=False) from None
        current = url
        for _ in range(MAX_REDIRECTS + 1):
            host = url_host(current)
            if deadline.remaining() <= 0:
                raise deadline.error(host)
            watch = _Watch()
            timer = threading.Timer(deadline.remaining(), watch.fire)
            timer.daemon = True
            timer.start()
            try:
                opener = urllib.request.build_opener(_NoRaise(), _HTTPHandler(watch), _HTTPSHandler(watch))
                req = self._request(current, headers, credential)
                wait = max(0.001, min(self._idle, deadline.remaining()))
                with opener.open(req, timeout=wait) as resp:
                    hdrs = {k.lower(): v for k, v in resp.headers.items()}
                    if resp.status in _REDIRECTS and hdrs.get("location"):
                        nxt = urllib.parse.urljoin(current, hdrs["location"])
                        if urllib.parse.urlsplit(nxt).scheme not in ("http", "https"):
                            raise _Failure(
                                f"{redact_url(current)} redirected to an address that is not http or https",
                                retryable=False,
                            )
                        # Go's rule, made stricter: a credential follows only to the same host and
                        # never onto plain http; the next URL's own userinfo is its own credential.
                        if _basic(urllib.parse.urlsplit(nxt)) is not None:
                            credential = self._credential(nxt)
                        elif url_host(nxt) != origin or self._plain(nxt):
                            credential = None
                        current = nxt
                        continue
                    result = read(resp, current) if 200 <= resp.status < 300 else None
                    if watch.expired:  # the body ended because the watchdog closed the socket
                        raise deadline.error(host)
                    return Response(resp.status, current, hdrs), result
            except FetchError:
                if watch.expired:
                    raise deadline.error(host) from None
                raise
            except _NETWORK_ERRORS as exc:
                cause = exc.reason if isinstance(exc, urllib.error.URLError) else exc
                if watch.expired or (isinstance(cause, TimeoutError) and deadline.remaining() <= 0.05):
                    raise deadline.error(host) from None
                if isinstance(cause, TimeoutError):
                    raise _Failure(
                        f"{host} sent nothing for {_seconds(self._idle)}; the server is not responding",
                        retryable=True,
                    ) from None
                if isinstance(cause, OSError) and cause.strerror and cause.filename is None:
                    reason = cause.strerror  # "Connection refused", not "[Errno 111] Connection refused"
                elif isinstance(cause, OSError):  # the local side: the download's file (lang/oserror.py)
                    reason = describe_os_error(cause, doing="save the download")
                else:
                    reason = redact_url(str(cause))
                raise _Failure(f"request to {redact_url(current)} failed: {reason}", retryable=True) from None
            finally:
                timer.cancel()
                watch.close()
        raise _Failure(f"{redact_url(url)} redirected more than {MAX_REDIRECTS} times", retryable=False)

    # -- the two entry points ---------------------------------------------------------------------

    def get(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        limit: int = 16 << 20,
        deadline: Deadline | None = None,
    ) -> Response:
        """Return the response to ``GET url`` with its body (at most ``limit`` bytes).

        Without ``deadline`` this is a registry API request: ``timeout`` seconds for each attempt,
        and up to ``retries`` more attempts after a network error, a 429 or a 5xx other than 501
        (Terraform's retry policy). With one, it is part of a package download: no retries.
        """

        def body(resp: http.client.HTTPResponse, current: str) -> bytes:
            data = resp.read(limit + 1)
            if len(data) > limit:
                raise _Failure(
                    f"the response from {redact_url(current)} is larger than {limit} bytes", retryable=False
                )
            _check_length(resp, len(data), current)
            return data

        attempts = 1 if deadline is not None else self._retries + 1
        for attempt in range(attempts):
            if attempt:
                time.sleep(min(self._retry_wait * 2 ** (attempt - 1), 30.0))
            last = attempt == attempts - 1
            each = deadline or Deadline.after(self._timeout, "TF_REGISTRY_CLIENT_TIMEOUT")
            try:
                resp, data = self._exchange(url, headers or {}, each, body)
            except _Failure as exc:
                if last or not exc.retryable:
                    suffix = f" ({attempts} attempts)" if attempts > 1 and exc.retryable else ""
                    raise FetchError(f"{exc}{suffix}") from None
                continue
            if not last and (resp.status == 429 or (500 <= resp.status <= 599 and resp.status != 501)):
                continue
            return Response(resp.status, resp.url, resp.headers, data or b"")
        raise AssertionError("unreachable")  # pragma: no cover

    def download(self, url: str, into: gate.Dir, name: str, *, limit: int, deadline: Deadline) -> Response:
        """Write the body of ``GET url`` to the new file ``name`` in ``into`` and return the
        response (its body left empty). The file is written through the gate (never through a
        symlink, at most ``limit`` bytes counted as they arrive, the deadline between chunks).

        Raises :class:`FetchError` on a network error, an error status, a body over ``limit`` or
        shorter than its ``Content-Length``, or when ``deadline`` passes.
        """
        effective = deadline.earlier(self._budget)

        def save(resp: http.client.HTTPResponse, current: str) -> int:
            try:
                size = gate.write_stream(
                    into, name, resp.read, limit=limit, deadline=effective.at, mode=0o600
                )
            except Refused as exc:
                if exc.reason == "too-large":
                    raise _Failure(
                        f"the download from {redact_url(current)} is larger than {limit} bytes",
                        retryable=False,
                    ) from None
                if exc.reason == "deadline":
                    raise effective.error(url_host(current)) from None
                raise
            _check_length(resp, size, current)
            return size

        try:
            resp, _ = self._exchange(url, {}, deadline, save)
        except _Failure as exc:
            raise FetchError(str(exc)) from None
        if resp.status >= 300:
            raise FetchError(f"bad response code: {resp.status} from {redact_url(resp.url)}")
        return resp
