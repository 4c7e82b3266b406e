"""HTTP for the registry protocol and archive downloads, over the standard library's urllib.

Rule for the file: a token is attached only to requests for the host it belongs to, as an
unredirected header (so a redirect to another host never carries it), and no message built here
contains a header value. Every network failure becomes a :class:`FetchError`; an HTTP error
status is returned to the caller, who knows what it means.
"""

from __future__ import annotations

import base64
import http.client
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from flatten import __version__
from flatten.sources.env import Secret
from flatten.sources.git import redact_url
from flatten.sources.package import FetchError

__all__ = ["HttpClient", "Response", "url_host"]


def url_host(url: str) -> str:
    """Return the ``host[:port]`` of a URL, lowercase, with ``:443`` dropped for https.

    >>> url_host("https://Example.com:443/x"), url_host("http://127.0.0.1:8080/")
    ('example.com', '127.0.0.1:8080')
    """
    parts = urllib.parse.urlsplit(url)
    host = (parts.hostname or "").lower()
    if parts.port is not None and not (parts.scheme == "https" and parts.port == 443):
        host = f"{host}:{parts.port}"
    return host


@dataclass(frozen=True, slots=True)
class Response:
    """A finished request: status, headers (lowercase names), body, and the final URL."""

    status: int
    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""


class _NoRaise(urllib.request.HTTPErrorProcessor):
    def http_response(self, request, response):  # type: ignore[no-untyped-def]
        return response

    https_response = http_response


class HttpClient:
    """A small HTTP client: ``GET`` into memory or into a file, with per-host bearer tokens."""

    def __init__(self, *, tokens: Mapping[str, Secret], timeout: float = 60.0) -> None:
        self._tokens = tokens
        self._timeout = timeout
        self._opener = urllib.request.build_opener(_NoRaise())

    def _request(self, url: str, headers: Mapping[str, str]) -> urllib.request.Request:
        # go-getter sends a URL's user:password as basic authentication; urllib would instead put
        # the userinfo into the Host header and fail, quoting the password in its error.
        parts = urllib.parse.urlsplit(url)
        basic: str | None = None
        if parts.username is not None or parts.password is not None:
            user = urllib.parse.unquote(parts.username or "")
            password = urllib.parse.unquote(parts.password or "")
            basic = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
            netloc = parts.netloc.rpartition("@")[2]
            url = urllib.parse.urlunsplit(parts._replace(netloc=netloc))
        req = urllib.request.Request(url, method="GET")
        req.add_header("User-Agent", f"flatten/{__version__}")
        for name, value in headers.items():
            req.add_header(name, value)
        token = self._tokens.get(url_host(url))
        if basic is not None:
            req.add_unredirected_header("Authorization", f"Basic {basic}")
        elif token is not None:
            req.add_unredirected_header("Authorization", f"Bearer {token.reveal()}")
        return req

    def get(self, url: str, *, headers: Mapping[str, str] | None = None, limit: int = 16 << 20) -> Response:
        """Return the response to ``GET url`` with its body (at most ``limit`` bytes)."""
        try:
            with self._opener.open(self._request(url, headers or {}), timeout=self._timeout) as resp:
                body = resp.read(limit + 1)
                if len(body) > limit:
                    raise FetchError(f"the response from {redact_url(url)} is larger than {limit} bytes")
                hdrs = {k.lower(): v for k, v in resp.headers.items()}
                return Response(resp.status, resp.geturl(), hdrs, body)
        except FetchError:
            raise
        except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as exc:
            reason = redact_url(str(getattr(exc, "reason", exc)))
            raise FetchError(f"request to {redact_url(url)} failed: {reason}") from None

    def download(self, url: str, dest: Path, *, limit: int) -> Response:
        """Write the body of ``GET url`` to ``dest`` and return the response (its body left empty).

        Raises :class:`FetchError` on a network error, an error status or a body over ``limit``.
        """
        try:
            with self._opener.open(self._request(url, {}), timeout=self._timeout) as resp:
                if resp.status >= 400:
                    raise FetchError(f"bad response code: {resp.status} from {redact_url(url)}")
                size = 0
                with open(dest, "wb") as out:
                    while chunk := resp.read(1 << 16):
                        size += len(chunk)
                        if size > limit:
                            raise FetchError(
                                f"the download from {redact_url(url)} is larger than {limit} bytes"
                            )
                        out.write(chunk)
                hdrs = {k.lower(): v for k, v in resp.headers.items()}
                return Response(resp.status, resp.geturl(), hdrs)
        except FetchError:
            raise
        except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as exc:
            reason = redact_url(str(getattr(exc, "reason", exc)))
            raise FetchError(f"download from {redact_url(url)} failed: {reason}") from None
