"""The module registry protocol: service discovery, version listing, download location (spec §5.7, §6.3).

Rule for the file: requests are exactly the ones ``terraform init`` makes:

1. ``GET https://<host>/.well-known/terraform.json`` → the ``modules.v1`` base URL (relative
   to the discovery document);
2. ``GET <base><namespace>/<name>/<system>/versions`` → ``{"modules": [{"versions": [{"version": …}]}]}``;
3. ``GET <base><namespace>/<name>/<system>/<version>/download`` → the go-getter address in the
   ``X-Terraform-Get`` header (usually with 204) or a JSON body's ``location``; one starting
   ``/``, ``./`` or ``../`` is resolved against the download URL.

Failures raise :class:`FetchError` with Terraform's summaries ("Error accessing remote module
registry", "Module not found", "Invalid response from remote module registry").
"""

from __future__ import annotations

import json
import threading
import urllib.parse

from flatten.lang.redact import redact_url
from flatten.sources.address import RegistrySource
from flatten.sources.package import FetchError
from flatten.sources.transport import HttpClient, Response

__all__ = ["RegistryClient", "resolve_relative"]

_ACCESS = "Error accessing remote module registry"
_INVALID = "Invalid response from remote module registry"


class RegistryClient:
    """Talks to module registries; discovery results and version lists are remembered per host/package.

    ``insecure_hosts`` are reached over ``http://`` (loopback test servers).
    """

    def __init__(self, http: HttpClient, *, insecure_hosts: frozenset[str] = frozenset()) -> None:
        self._http = http
        self._insecure = insecure_hosts
        self._lock = threading.Lock()
        self._bases: dict[str, str] = {}
        self._versions: dict[str, tuple[str, ...]] = {}

    def _json(self, resp: Response, what: str) -> object:
        try:
            return json.loads(resp.body.decode("utf-8"))
        except RecursionError:  # nesting deeper than the json module can read
            raise FetchError(
                f"The registry returned a {what} document nested too deeply.", summary=_INVALID
            ) from None
        except (UnicodeDecodeError, ValueError) as exc:
            raise FetchError(
                f"The registry returned an invalid {what} document: {exc}.", summary=_INVALID
            ) from None

    def modules_base(self, host: str) -> str:
        """Return the ``modules.v1`` base URL of ``host`` (service discovery)."""
        with self._lock:
            if host in self._bases:
                return self._bases[host]
        scheme = "http" if host in self._insecure else "https"
        url = f"{scheme}://{host}/.well-known/terraform.json"
        try:
            resp = self._http.get(url, headers={"Accept": "application/json"})
        except FetchError as exc:
            raise FetchError(
                f"Failed to retrieve available versions from {host}: {exc}.", summary=_ACCESS
            ) from None
        if resp.status != 200:
            raise FetchError(
                f"Failed to discover services of {host}: service discovery returned HTTP status "
                f"{resp.status}.",
                summary=_ACCESS,
            )
        doc = self._json(resp, "service discovery")
        base = doc.get("modules.v1") if isinstance(doc, dict) else None
        if not isinstance(base, str):
            raise FetchError(
                f"The host {host} does not provide a module registry (no modules.v1 service).",
                summary=_ACCESS,
            )
        try:
            resolved = urllib.parse.urljoin(resp.url, base)
            scheme = urllib.parse.urlsplit(resolved).scheme
        except ValueError:  # an unparseable URL ("http://[oops/")
            scheme = ""
        if scheme not in ("http", "https"):
            raise FetchError(
                f"The host {host} gave an invalid modules.v1 service URL {redact_url(base)!r}.",
                summary=_INVALID,
            )
        if not resolved.endswith("/"):
            resolved += "/"
        with self._lock:
            self._bases[host] = resolved
        return resolved

    def versions(self, source: RegistrySource) -> tuple[str, ...]:
        """Return the version strings the registry lists for the package, in its order."""
        with self._lock:
            if source.package in self._versions:
                return self._versions[source.package]
        url = self.modules_base(source.host) + urllib.parse.quote(source.protocol_path) + "/versions"
        resp = self._http.get(url, headers={"Accept": "application/json"})
        if resp.status == 404:
            raise FetchError(
                f'Module "{source.for_display()}" could not be found in the module registry at '
                f"{source.host}.",
                summary="Module not found",
            )
        if resp.status != 200:
            raise FetchError(
                f"Failed to retrieve available versions for {source.for_display()} from {source.host}: "
                f"HTTP status {resp.status}.",
                summary=_ACCESS,
            )
        doc = self._json(resp, "versions")
        out: list[str] = []
        modules = doc.get("modules") if isinstance(doc, dict) else None
        if not isinstance(modules, list):
            raise FetchError('The registry\'s version list has no "modules" array.', summary=_INVALID)
        for mod in modules:
            items = mod.get("versions", []) if isinstance(mod, dict) else []
            if not isinstance(items, list):  # Terraform's JSON decoding fails on it too
                raise FetchError(
                    'The registry\'s version list has a "versions" that is not an array.', summary=_INVALID
                )
            for item in items:
                if isinstance(item, dict) and isinstance(item.get("version"), str):
                    out.append(item["version"])
        result = tuple(out)
        with self._lock:
            self._versions[source.package] = result
        return result

    def location(self, source: RegistrySource, version: str) -> str:
        """Return the go-getter address to download ``version`` of the package from."""
        url = (
            self.modules_base(source.host)
            + urllib.parse.quote(source.protocol_path)
            + "/"
            + urllib.parse.quote(version)
            + "/download"
        )
        resp = self._http.get(url, headers={"Accept": "application/json"})
        if resp.status == 404:
            raise FetchError(
                f'Version {version} of module "{source.for_display()}" could not be found in the registry.',
                summary="Module not found",
            )
        if resp.status not in (200, 204):
            raise FetchError(
                f"Failed to retrieve a download URL for {source.for_display()} {version}: HTTP status "
                f"{resp.status}.",
                summary=_ACCESS,
            )
        location = resp.headers.get("x-terraform-get", "")
        if not location and resp.status == 200 and resp.body:
            doc = self._json(resp, "download")
            value = doc.get("location") if isinstance(doc, dict) else None
            location = value if isinstance(value, str) else ""
        if not location:
            raise FetchError(
                f"The registry returned no download location for {source.for_display()} {version}.",
                summary=_INVALID,
            )
        # Terraform resolves a relative location against the download URL it asked, not against
        # where a redirect of that request ended.
        return resolve_relative(location, url)


def resolve_relative(location: str, base: str) -> str:
    """Return a go-getter address starting ``/``, ``./`` or ``../`` resolved against ``base``.

    A ``//subdir`` is kept (it is not a path to normalise away); other addresses are returned as is.

    >>> resolve_relative("../a.tgz//sub?archive=tar.gz", "http://h/v1/m/download")
    'http://h/v1/a.tgz//sub?archive=tar.gz'
    """
    if not location.startswith(("/", "./", "../")) or location.startswith("//"):
        return location
    path, sep, query = location.partition("?")
    idx = path.find("//")
    subdir = path[idx:] if idx != -1 else ""
    path = path[:idx] if idx != -1 else path
    resolved = urllib.parse.urljoin(base, path)
    return resolved + subdir + sep + query
