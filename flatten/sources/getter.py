"""go-getter, the part Terraform users use: ``git::``, http(s) archives, ``file://`` (spec §5.4).

A package address here is already detected and has no ``//subdir`` (``RemoteSource.package``).
:func:`parse_getter_address` says how it is fetched and what identifies its content before any
download; :meth:`Getter.get` puts the package's files into a new directory.

Query handling follows go-getter: for git, ``ref``, ``depth`` and ``sshkey`` are read and removed
from the URL; for http, ``archive`` (a format, or ``false``) and ``checksum``
(``[type:]hex``) are read and removed, and any other parameter stays on the request. Forced
getters flatten does not implement (``hg``, ``s3``, ``gcs``, ``oci``) fail with a clear message.
"""

from __future__ import annotations

import hashlib
import html.parser
import os
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from flatten import gate
from flatten.sources.address import InvalidSourceAddress, parse_remote_source
from flatten.sources.archive import archive_format, extract_archive
from flatten.sources.env import ExtractLimits
from flatten.sources.git import clone, redact_url
from flatten.sources.package import FetchError, SizeBudget
from flatten.sources.registry import resolve_relative
from flatten.sources.transport import Deadline, HttpClient

__all__ = ["Getter", "GetterAddress", "parse_getter_address"]

_UNSUPPORTED = ("hg", "s3", "gcs", "oci")
_HASHES = MappingProxyType({"md5": 32, "sha1": 40, "sha256": 64, "sha512": 128})


@dataclass(frozen=True, slots=True)
class GetterAddress:
    """How to fetch one package address.

    ``kind`` is ``git``, ``http`` (an archive, or a page naming the real address through
    ``X-Terraform-Get``), ``file`` (a local directory or archive). ``url`` is what is fetched,
    with the getter's own query parameters removed; ``archive`` the archive format (None: not
    an archive, or not known yet), ``ref``/``depth`` the git options, ``checksum`` the
    ``(type, hex)`` to verify an archive against.
    """

    kind: str
    url: str
    archive: str | None = None
    ref: str = ""
    depth: int = 0
    checksum: tuple[str, str] | None = None

    @property
    def path(self) -> Path:
        """The local path of a ``file`` address."""
        return Path(urllib.parse.unquote(urllib.parse.urlsplit(self.url).path))


def _split_query(url: str) -> tuple[urllib.parse.SplitResult, list[tuple[str, str]]]:
    parts = urllib.parse.urlsplit(url)
    return parts, urllib.parse.parse_qsl(parts.query, keep_blank_values=True)


def _take(params: list[tuple[str, str]], name: str) -> str | None:
    found = [v for k, v in params if k == name]
    params[:] = [(k, v) for k, v in params if k != name]
    return found[-1] if found else None


def _rebuild(parts: urllib.parse.SplitResult, params: list[tuple[str, str]]) -> str:
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(params)))


def parse_getter_address(address: str) -> GetterAddress:
    """Return how ``address`` is fetched; raise :class:`FetchError` for what flatten cannot fetch.

    >>> parse_getter_address("git::https://h/x.git?ref=v1&depth=1")
    GetterAddress(kind='git', url='https://h/x.git', archive=None, ref='v1', depth=1, checksum=None)
    >>> parse_getter_address("https://h/m.zip?x=1").archive
    'zip'
    """
    forced, sep, rest = address.partition("::")
    if not sep or "/" in forced or ":" in forced:
        forced, rest = "", address
    scheme = urllib.parse.urlsplit(rest).scheme.lower()
    kind = forced.lower() or scheme
    if kind in _UNSUPPORTED or scheme in _UNSUPPORTED:
        raise FetchError(
            f"flatten cannot download {kind} module sources ({redact_url(address)}); install the module with "
            "terraform init first, so flatten can reuse .terraform/modules, or use a git or https source"
        )
    if kind == "git":
        parts, params = _split_query(rest)
        ref = _take(params, "ref") or ""
        depth_text = _take(params, "depth")
        if _take(params, "sshkey") is not None:
            raise FetchError("the sshkey argument of git sources is not supported; use an ssh agent instead")
        try:
            depth = int(depth_text) if depth_text else 0
        except ValueError:
            raise FetchError(f"invalid depth {depth_text!r}: must be a whole number") from None
        url = _rebuild(parts, params) if parts.scheme else rest
        return GetterAddress("git", url, ref=ref, depth=depth)
    if kind not in ("http", "https", "file"):
        raise FetchError(f"unsupported or unknown download method in {redact_url(address)}")
    parts, params = _split_query(rest)
    archive_param = _take(params, "archive")
    checksum_param = _take(params, "checksum")
    if archive_param is not None and archive_param.lower() == "false":
        archive: str | None = None
    elif archive_param:
        archive = archive_format(archive_param)
        if archive is None:
            raise FetchError(f"unsupported archive format {archive_param!r}")
    else:
        archive = archive_format(parts.path)
    checksum = _parse_checksum(checksum_param) if checksum_param else None
    url = _rebuild(parts, params)
    return GetterAddress("file" if scheme == "file" else "http", url, archive=archive, checksum=checksum)


def _parse_checksum(text: str) -> tuple[str, str]:
    kind, sep, value = text.partition(":")
    if not sep:
        kind, value = next((k for k, n in _HASHES.items() if n == len(text)), ""), text
    kind = kind.lower()
    if kind not in _HASHES or len(value) != _HASHES[kind]:
        raise FetchError(f"unsupported checksum {text!r}: expected md5, sha1, sha256 or sha512 as type:hex")
    return kind, value.lower()


class _MetaFinder(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "meta" and values.get("name") == "terraform-get" and self.found is None:
            self.found = values.get("content")


@dataclass(frozen=True, slots=True)
class Fetched:
    """What :meth:`Getter.get` installed: the git commit (git) and a subdirectory the server added."""

    commit: str | None = None
    subdir: str = ""


class Getter:
    """Downloads packages over git, http(s) and file URLs into a directory."""

    def __init__(
        self,
        http: HttpClient,
        *,
        git: str = "git",
        limits: ExtractLimits | None = None,
        download_timeout: float = 600.0,
        deadline: Deadline | None = None,
        budget: SizeBudget | None = None,
    ) -> None:
        self._http = http
        # The build's bytes on disk, all packages together (RemoteFetcher makes one).
        self._budget = budget or SizeBudget((limits or ExtractLimits()).max_bytes)
        self._git = git
        self._limits = limits or ExtractLimits()
        self._download_timeout = download_timeout
        self._deadline = deadline  # the whole build's downloads (RemoteFetcher makes one)

    def get(
        self, addr: GetterAddress, dest: Path, *, hops: int = 0, deadline: Deadline | None = None
    ) -> Fetched:
        """Install the package at ``addr`` into the new directory ``dest``. Raises :class:`FetchError`.

        The whole of it (every request, redirect, indirection, or the git commands) must end by
        ``deadline``, by default the build's (or ``download_timeout`` seconds from now without one:
        FLATTEN_DOWNLOAD_TIMEOUT).
        """
        if deadline is None:
            deadline = self._deadline or Deadline.after(self._download_timeout, "FLATTEN_DOWNLOAD_TIMEOUT")
        if addr.kind == "git":
            return Fetched(
                commit=clone(
                    self._git,
                    addr.url,
                    dest,
                    ref=addr.ref,
                    depth=addr.depth,
                    timeout=deadline.remaining(),
                    budget=self._budget,
                )
            )
        if addr.kind == "file":
            path = addr.path
            if addr.archive is None:
                raise FetchError(f"{path} is not an archive; a local directory is used where it is")
            self._verify(path, addr)
            extract_archive(
                path, addr.archive, dest, limits=self._limits, budget=self._budget, deadline=deadline.at
            )
            return Fetched()
        if addr.archive is None:
            return self._indirect(addr, dest, hops, deadline)
        # The archive is downloaded into a private directory beside ``dest`` (both in the cache's
        # v1/tmp entry being made), written and read back through the gate, then removed.
        with gate.open_dir(dest.parent, create=True) as work:
            name = f"download-{os.urandom(6).hex()}"
            work.mkdir(name, mode=0o700)
            try:
                with work.sub(name) as place:
                    limit = max(0, min(self._limits.max_bytes, self._budget.remaining()))
                    self._http.download(addr.url, place, "package", limit=limit, deadline=deadline)
                    self._verify(Path("package"), addr, place)
                    extract_archive(
                        Path("package"),
                        addr.archive,
                        dest,
                        limits=self._limits,
                        budget=self._budget,
                        deadline=deadline.at,
                        source_dir=place,
                    )
            finally:
                work.remove(name)
            return Fetched()

    def _indirect(self, addr: GetterAddress, dest: Path, hops: int, deadline: Deadline) -> Fetched:
        # go-getter's HttpGetter: ask the URL for the real address (X-Terraform-Get or a meta tag).
        if hops > 4:
            raise FetchError(f"too many X-Terraform-Get indirections at {redact_url(addr.url)}")
        parts, params = _split_query(addr.url)
        probe = _rebuild(parts, [*params, ("terraform-get", "1")])
        resp = self._http.get(probe, deadline=deadline)
        if resp.status >= 400:
            raise FetchError(f"bad response code: {resp.status} from {redact_url(addr.url)}")
        location = resp.headers.get("x-terraform-get")
        if not location and "html" in resp.headers.get("content-type", ""):
            finder = _MetaFinder()
            finder.feed(resp.body.decode("utf-8", "replace"))
            location = finder.found
        if not location:
            raise FetchError(
                f"no source URL was returned from {redact_url(addr.url)}: it is not an archive (name it "
                "with an archive extension or add ?archive=zip|tar.gz|…) and sent no X-Terraform-Get header"
            )
        location = resolve_relative(location, resp.url)
        try:
            source = parse_remote_source(location)
        except InvalidSourceAddress as exc:
            raise FetchError(
                f"invalid X-Terraform-Get address {redact_url(location)!r}: {exc.reason}"
            ) from None
        if source.on_this_machine:  # a server may not make flatten read this machine's files
            raise FetchError(
                f"{redact_url(addr.url)} answered with the local address {redact_url(location)!r}; a "
                "download may only lead to other remote addresses"
            )
        fetched = self.get(parse_getter_address(source.package), dest, hops=hops + 1, deadline=deadline)
        subdir = "/".join(p for p in (fetched.subdir, source.subdir) if p)
        return Fetched(fetched.commit, subdir)

    def _verify(self, file: Path, addr: GetterAddress, directory: gate.Dir | None = None) -> None:
        if addr.checksum is None:
            return
        kind, want = addr.checksum
        h = hashlib.new(kind)
        # The download just written (a name in ``directory``), or the user's own file:// archive.
        with gate.open_read(
            file, limit=1 << 40, follow=directory is None, dir_fd=None if directory is None else directory.fd
        ) as f:
            while chunk := f.read(1 << 16):
                h.update(chunk)
        if h.hexdigest() != want:
            raise FetchError(
                f"checksums did not match for {redact_url(addr.url)}: expected {kind}:{want}, "
                f"got {h.hexdigest()}"
            )
