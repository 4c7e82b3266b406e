"""Module source addresses: classify and normalise the ``source`` argument of a ``module`` block.

Every function here is pure string manipulation (spec §5): no filesystem, no network. The rule the
whole file follows is Terraform's own (``addrs.ParseModuleSource`` and go-getter's ``Detect``):

1. a string starting ``./``, ``../``, ``.\\`` or ``..\\`` is a *local* path, cleaned like Go's
   ``path.Clean`` but keeping its ``./``/``../`` prefix (§5.2);
2. otherwise, if it parses as a registry address it *is* one (§5.3), and registry errors are
   discarded;
3. otherwise it is a *remote* go-getter address, normalised by the detectors (§5.4).

With a ``version`` argument only the registry parse is tried, and any failure becomes "Invalid
registry module source address" (§5.6). Go's ``net/url`` parsing and printing is emulated closely
enough that detected addresses come out byte for byte as Terraform writes them into
``modules.json``.

Two deliberate departures, both because flatten never touches the network here: OpenTofu's
``bitbucket.org/...`` shorthand asks Bitbucket's API whether the repository is git or Mercurial;
flatten answers "git" (Bitbucket has only hosted git since 2020, and Terraform assumes the same).
Windows drive-letter paths are treated as a Unix build of Terraform would treat them.

>>> parse_module_source("./nope/../child", has_version=False)
LocalSource(path='./child')
>>> str(parse_module_source("hashicorp/consul/aws//modules/x", has_version=True))
'registry.terraform.io/hashicorp/consul/aws//modules/x'
>>> str(parse_module_source("github.com/org/repo//sub?ref=v1", has_version=False))
'git::https://github.com/org/repo.git//sub?ref=v1'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import MappingProxyType

from flatten.lang.dialect import Dialect

__all__ = [
    "DEFAULT_REGISTRY_HOSTS",
    "InvalidSourceAddress",
    "LocalSource",
    "RegistrySource",
    "RemoteSource",
    "SourceAddress",
    "join_subdir",
    "parse_module_source",
    "parse_remote_source",
]

#: The registry host assumed by a three-part registry address, per dialect.
DEFAULT_REGISTRY_HOSTS = MappingProxyType({d.value: d.values.registry_host for d in Dialect})
_LOCAL_PREFIXES = ("./", "../", ".\\", "..\\")


class InvalidSourceAddress(ValueError):
    """A module source address that Terraform would reject.

    ``str(exc)`` is the diagnostic detail, ``exc.summary`` Terraform's summary, and
    ``exc.reason`` the underlying parser message (what Terraform's Go error says).

    >>> try:
    ...     parse_module_source("boop/bloop", has_version=False)
    ... except InvalidSourceAddress as exc:
    ...     print(exc.summary)
    Invalid module source address
    """

    def __init__(self, summary: str, detail: str, *, reason: str = "") -> None:
        super().__init__(detail)
        self.summary = summary
        self.detail = detail
        self.reason = reason or detail


@dataclass(frozen=True, slots=True)
class LocalSource:
    """A path relative to the calling module, inside the caller's own package (``./x``, ``../x``)."""

    path: str

    def __str__(self) -> str:
        return self.path


@dataclass(frozen=True, slots=True)
class RegistrySource:
    """A module registry address ``host/namespace/name/system[//subdir]``.

    ``host`` is normalised (lowercase, Unicode, ``:443`` dropped); the other parts keep their case.
    """

    host: str
    namespace: str
    name: str
    system: str
    subdir: str = ""

    @property
    def package(self) -> str:
        """The registry package address, without any subdirectory."""
        return f"{self.host}/{self.namespace}/{self.name}/{self.system}"

    @property
    def protocol_path(self) -> str:
        """The ``namespace/name/system`` path used in registry API requests."""
        return f"{self.namespace}/{self.name}/{self.system}"

    def for_display(self, *, dialect: str = "terraform") -> str:
        """Return the address as users write it: the host is omitted when it is the default one."""
        base = self.protocol_path if self.host == DEFAULT_REGISTRY_HOSTS[dialect] else self.package
        return f"{base}//{self.subdir}" if self.subdir else base

    def __str__(self) -> str:
        return f"{self.package}//{self.subdir}" if self.subdir else self.package


@dataclass(frozen=True, slots=True)
class RemoteSource:
    """A go-getter package address after detection, plus a subdirectory inside the package."""

    package: str
    subdir: str = ""

    def __str__(self) -> str:
        if not self.subdir:
            return self.package
        base, sep, query = self.package.partition("?")
        return f"{base}//{self.subdir}{sep}{query}"

    @property
    def on_this_machine(self) -> bool:
        """Whether the package is read from this machine's filesystem, not downloaded: a ``file``
        URL (an absolute path is detected as one), the forced ``file::`` getter, or git over ``file``.

        >>> parse_module_source("/abs/dir", has_version=False).on_this_machine
        True
        >>> parse_module_source("git::/abs/repo", has_version=False).on_this_machine
        True
        >>> parse_module_source("git::https://h/x.git", has_version=False).on_this_machine
        False
        """
        forced, sep, rest = self.package.partition("::")
        if not sep or "/" in forced or ":" in forced:
            forced, rest = "", self.package
        return forced.lower() == "file" or rest[:5].lower() == "file:"


SourceAddress = LocalSource | RegistrySource | RemoteSource


def parse_module_source(raw: str, *, has_version: bool, dialect: str = "terraform") -> SourceAddress:
    """Return the parsed form of a module ``source`` string.

    ``has_version`` says whether the module block also sets ``version``: the source must then be
    a registry address. ``dialect`` (``"terraform"`` or ``"opentofu"``) picks the default registry
    host and the product name in messages. Raises :class:`InvalidSourceAddress`, whose ``summary``
    and message are Terraform's diagnostic summary and detail.

    >>> parse_module_source("app.example.com/org/name/aws", has_version=True).host
    'app.example.com'
    >>> parse_module_source("git::git@example.com:code/baz.git", has_version=False)
    RemoteSource(package='git::ssh://git@example.com/code/baz.git', subdir='')
    """
    product = Dialect(dialect).product
    if has_version:
        try:
            return _parse_registry(raw, dialect)
        except _AddrError as exc:
            raise InvalidSourceAddress(
                "Invalid registry module source address",
                f"Failed to parse module registry address: {exc}.\n\n{product} assumed that you intended a "
                'module registry source address because you also set the argument "version", which '
                "applies only to registry modules.",
                reason=str(exc),
            ) from None
    if raw.startswith(_LOCAL_PREFIXES):
        return _parse_local(raw)
    try:
        return _parse_registry(raw, dialect)
    except _AddrError:
        pass  # for historical reasons, anything that is not a valid registry address is remote
    try:
        return _parse_remote(raw, dialect)
    except _MaybeRelativePath as exc:
        raise InvalidSourceAddress(
            "Invalid module source address",
            f"{product} failed to determine your intended installation method for remote module package "
            f"{_go_quote(exc.addr)}.\n\nIf you intended this as a path relative to the current module, use "
            f'"./{exc.addr}" instead. The "./" prefix indicates that the address is a relative filesystem '
            "path.",
            reason=str(exc),
        ) from None
    except _AddrError as exc:
        raise InvalidSourceAddress(
            "Invalid module source address",
            f"Failed to parse module source address: {exc}.",
            reason=str(exc),
        ) from None


def parse_remote_source(raw: str, *, dialect: str = "terraform") -> RemoteSource:
    """Return ``raw`` parsed as a go-getter address only (a registry's download location, §5.7).

    Raises :class:`InvalidSourceAddress` ("Invalid module source address").

    >>> parse_remote_source("https://example.com/x.tgz//sub?archive=tar.gz")
    RemoteSource(package='https://example.com/x.tgz?archive=tar.gz', subdir='sub')
    """
    try:
        return _parse_remote(raw, dialect)
    except _AddrError as exc:
        raise InvalidSourceAddress(
            "Invalid module source address", f"Failed to parse module source address: {exc}.", reason=str(exc)
        ) from None


def join_subdir(
    package_subdir: str, local: str, *, package: str = "", module: str = "", dialect: str = "terraform"
) -> str:
    """Return the subdirectory a local source reaches from ``package_subdir`` inside its package.

    ``package_subdir`` is the calling module's directory inside its package ("" for the package
    root) and ``local`` a cleaned local source (``LocalSource.path``). The result is "" for the
    package root. A path that leaves the package raises :class:`InvalidSourceAddress` with the
    summary "Local module path escapes module package"; ``package`` (the package address) and
    ``module`` (the escaping module's address) only fill in its detail (spec §5.7).

    >>> join_subdir("modules/a", "../b")
    'modules/b'
    >>> join_subdir("modules/a", "../..")
    ''
    """
    joined = _go_join(package_subdir, local)
    if joined == ".":
        return ""
    if _fs_valid_path(joined):
        return joined
    hint = ""
    if package.startswith("/"):
        hint = (
            f"\n\n{Dialect(dialect).product} treats absolute filesystem paths as external modules which "
            "establish a new module package. To treat this directory as part of the same package as its "
            'caller, use a local path starting with either "./" or "../".'
        )
    raise InvalidSourceAddress(
        "Local module path escapes module package",
        f"The given source directory for {module or local} would be outside of its containing package "
        f'{_go_quote(package)}. Local source addresses starting with "../" must stay within the same '
        f"package that the calling module belongs to.{hint}",
        reason=f'relative path {local} has too many "../" segments',
    )


# ---------------------------------------------------------------------------------------------
# Errors internal to the parsers (Go's error values); the public entry points convert them.


class _AddrError(Exception):
    pass


class _MaybeRelativePath(_AddrError):
    def __init__(self, addr: str, dialect: str) -> None:
        super().__init__(
            f"{Dialect(dialect).product} cannot detect a supported external module source type for {addr}"
        )
        self.addr = addr


# ---------------------------------------------------------------------------------------------
# Local paths (§5.2)


def _parse_local(raw: str) -> LocalSource:
    clean = _go_clean(raw.replace("\\", "/"))
    if not clean.startswith("../"):
        clean = "./" + clean
    return LocalSource(clean)


# ---------------------------------------------------------------------------------------------
# Registry addresses (§5.3; registry-address module.go)

_NAME_RE = re.compile(r"[0-9A-Za-z](?:[0-9A-Za-z\-_]{0,62}[0-9A-Za-z])?")
_SYSTEM_RE = re.compile(r"[0-9a-z]{1,64}")
_RESERVED_HOSTS = ("github.com", "bitbucket.org")


def _parse_registry(raw: str, dialect: str) -> RegistrySource:
    if raw.startswith(_LOCAL_PREFIXES):
        raise _AddrError(f"can't use local directory {_go_quote(raw)} as a module registry address")
    raw, subdir = _split_package_subdir(raw)
    if subdir.startswith("../"):
        raise _AddrError(f"subdirectory path {_go_quote(subdir)} leads outside of the module package")
    parts = raw.split("/")
    if len(parts) not in (3, 4):
        raise _AddrError(
            "a module registry source address must have either three or four slash-separated components"
        )
    host = DEFAULT_REGISTRY_HOSTS[dialect]
    if len(parts) == 4:
        given = parts.pop(0)
        normalised = _svchost_for_comparison(given)
        if normalised is None:
            if "--" in given:
                raise _AddrError(
                    f"invalid module registry hostname {_go_quote(given)}; internationalized domain names "
                    "must be given as direct unicode characters, not in punycode"
                )
            raise _AddrError(f"invalid module registry hostname {_go_quote(given)}")
        host = normalised
        if "." not in host:
            raise _AddrError("invalid module registry hostname: must contain at least one dot")
    if host in _RESERVED_HOSTS:
        raise _AddrError(
            f"can't use {_go_quote(host)} as a module registry host, because it's reserved for installing "
            "directly from version control repositories"
        )
    namespace, name, system = parts
    name_rule = (
        "must be between one and 64 characters, including ASCII letters, digits, dashes, and underscores, "
        "where dashes and underscores may not be the prefix or suffix"
    )
    if not _NAME_RE.fullmatch(namespace):
        if "." in namespace:
            raise _AddrError(
                "source address must have three more components after the hostname: the namespace, the "
                "name, and the target system"
            )
        raise _AddrError(f"invalid namespace {_go_quote(namespace)}: {name_rule}")
    if not _NAME_RE.fullmatch(name):
        raise _AddrError(f"invalid module name {_go_quote(name)}: {name_rule}")
    if not _SYSTEM_RE.fullmatch(system):
        if "?" in system:
            raise _AddrError("module registry addresses may not include a query string portion")
        raise _AddrError(
            f"invalid target system {_go_quote(system)}: must be between one and 64 ASCII letters or digits"
        )
    return RegistrySource(host, namespace, name, system, subdir)


def _svchost_for_comparison(given: str) -> str | None:
    """Normalise a registry hostname as terraform-svchost does, or return None if it is invalid.

    The result is the display (Unicode, lowercase) form, with the port kept unless it is 443.
    """
    name, colon, port = given.partition(":")
    if colon:
        if not port.isascii() or not port.isdigit() or not 0 < int(port) < 65536:
            return None
        port = "" if int(port) == 443 else f":{int(port)}"
    if not name:
        return None
    labels = []
    for label in name.split("."):
        if not label or label.lower().startswith("xn--"):
            return None
        if label.isascii():
            ascii_label = label.lower()
            display = ascii_label
        else:
            # Imported here: encodings.idna (with stringprep and unicodedata) costs every build's
            # start-up about 3 ms, and only a non-ASCII host name needs it.
            import encodings.idna

            try:
                ascii_label = encodings.idna.ToASCII(label).decode("ascii").lower()
                display = encodings.idna.ToUnicode(ascii_label)
            except UnicodeError:
                return None
        # UTS #46 with STD3 rules and hyphen checks, as golang.org/x/net/idna's Lookup profile.
        if not re.fullmatch(r"[a-z0-9-]+", ascii_label) or ascii_label[0] == "-" or ascii_label[-1] == "-":
            return None
        if ascii_label[2:4] == "--" and not ascii_label.startswith("xn--"):
            return None
        labels.append(display)
    return ".".join(labels) + port


# ---------------------------------------------------------------------------------------------
# Remote (go-getter) addresses (§5.4)

_FORCED_RE = re.compile(r"^([A-Za-z0-9]+)::(.+)\Z")
_SSH_RE = re.compile(r"^(?:([^@]+)@)?([^:]+):/?(.+)\Z")


def _parse_remote(raw: str, dialect: str) -> RemoteSource:
    raw, subdir = _split_package_subdir(raw)
    if subdir.startswith("../"):
        raise _AddrError(f"subdirectory path {_go_quote(subdir)} leads outside of the module package")
    package, more = _split_package_subdir(_detect(raw, dialect))
    if more:
        subdir = _go_join(more, subdir) if subdir else _go_clean(more)
        if subdir.startswith("../"):
            raise _AddrError(
                f"detected subdirectory path {_go_quote(subdir)} of {_go_quote(package)} leads outside of "
                "the module package"
            )
    return RemoteSource(package, subdir)


def _split_package_subdir(given: str) -> tuple[str, str]:
    """Split ``pkg//sub?q`` into ``pkg?q`` and the cleaned ``sub`` (go-getter ``SourceDirSubdir``)."""
    package, subdir = _source_dir_subdir(given)
    return package, _go_clean(subdir) if subdir else ""


def _source_dir_subdir(src: str) -> tuple[str, str]:
    stop = src.find("?")
    if stop == -1:
        stop = len(src)
    scheme_end = src.find("://", 0, stop)
    offset = scheme_end + 3 if scheme_end != -1 else 0
    idx = src.find("//", offset, stop)
    if idx == -1:
        return src, ""
    subdir, src = src[idx + 2 :], src[:idx]
    query = subdir.find("?")
    if query != -1:
        src += subdir[query:]
        subdir = subdir[:query]
    return src, subdir


def _forced(src: str) -> tuple[str, str]:
    m = _FORCED_RE.match(src)
    return (m[1], m[2]) if m else ("", src)


def _detect(src: str, dialect: str) -> str:
    """Return the detected go-getter address for a package string (go-getter ``Detect``)."""
    force, get_src = _forced(src)
    split = (
        _source_dir_subdir if Dialect(dialect).allows("getter_source_dir_subdir") else _split_package_subdir
    )
    get_src, subdir = split(get_src)
    try:
        if _url_parse(get_src).scheme:
            return src  # already a valid URL: kept verbatim
    except _URLError:
        pass
    for detector in _DETECTORS:
        result = detector(get_src, dialect)
        if result is None:
            continue
        detect_force, result = _forced(result)
        result, detect_subdir = split(result)
        if detect_subdir:
            subdir = _go_join(detect_subdir, subdir) if subdir else detect_subdir
        if subdir:
            try:
                u = _url_parse(result)
            except _URLError as exc:
                raise _AddrError(f"Error parsing URL: {exc}") from None
            u.path += "//" + subdir
            u.raw_path = u.path  # a subdir may hold glob characters, which must stay unescaped
            result = _url_string(u)
        if force or detect_force:
            result = f"{force or detect_force}::{result}"
        return result
    raise _AddrError(f"invalid source {Dialect(dialect).word('invalid_source_noun')}: {src}")


def _detect_github(src: str, dialect: str) -> str | None:
    if not src.startswith("github.com/"):
        return None
    if Dialect(dialect).allows("getter_strict_github_query"):
        pieces = src.split("?")
        if len(pieces) > 2:
            raise _AddrError("there is more than 1 '?' in the URL")
        path, query = pieces[0], pieces[1] if len(pieces) == 2 else ""
    else:
        path, _, query = src.partition("?")
    parts = path.split("/")
    if len(parts) < 3:
        raise _AddrError("GitHub URLs should be github.com/username/repo")
    try:
        u = _url_parse("https://" + "/".join(parts[:3]))
    except _URLError as exc:
        raise _AddrError(f"error parsing GitHub URL: {exc}") from None
    u.raw_query = query
    if not u.path.endswith(".git"):
        u.path += ".git"
    if len(parts) > 3:
        u.path += "//" + "/".join(parts[3:])
    return "git::" + _url_string(u)


def _detect_git(src: str, dialect: str) -> str | None:
    m = _SSH_RE.match(src)
    if m is None:
        return None
    user, host, path = m[1] or "", m[2], m[3]
    path, has_query, query = path.partition("?")
    raw_query = ""
    if has_query:  # Go parses (and may reject) the query before looking at the user
        try:
            raw_query = _encode_query(_parse_query(query))
        except _URLError as exc:
            which = Dialect(dialect).word("ssh_url_kind")
            raise _AddrError(f"error parsing {which} SSH URL: {exc}") from None
    if user != "git":  # only the user "git" marks an scp-like address as git
        return None
    return "git::" + _url_string(
        _URL(scheme="ssh", user=(user, None), host=host, path=path, raw_query=raw_query)
    )


def _detect_bitbucket(src: str, dialect: str) -> str | None:
    if not src.startswith("bitbucket.org/"):
        return None
    try:
        u = _url_parse("https://" + src)
    except _URLError as exc:
        raise _AddrError(f"error parsing BitBucket URL: {exc}") from None
    if not u.path.endswith(".git"):
        u.path += ".git"
    return "git::" + _url_string(u)


def _detect_gcs(src: str, dialect: str) -> str | None:
    if Dialect(dialect).allows("getter_strict_gcs_host"):
        if ".googleapis.com/" not in src:
            return None
        src = _go_clean(src)
    elif "googleapis.com/" not in src:
        return None
    parts = src.split("/")
    if len(parts) < 5:
        raise _AddrError("URL is not a valid GCS URL")
    url = f"https://www.googleapis.com/storage/{parts[2]}/{parts[3]}/{'/'.join(parts[4:])}"
    try:
        return "gcs::" + _url_string(_url_parse(url))
    except _URLError as exc:
        raise _AddrError(f"error parsing GCS URL: {exc}") from None


def _detect_s3(src: str, dialect: str) -> str | None:
    if ".amazonaws.com/" not in src:
        return None
    parts = src.split("/")
    host = parts[0].split(".")
    rest = "/".join(parts[1:])
    if len(host) == 3:
        url = f"https://{host[0]}.amazonaws.com/{rest}"
    elif len(host) == 4:
        url = f"https://{host[1]}.amazonaws.com/{host[0]}/{rest}"
    elif len(host) == 5 and host[1] == "s3":
        url = f"https://s3.{host[2]}.amazonaws.com/{host[0]}/{rest}"
    else:
        raise _AddrError("URL is not a valid S3 URL")
    try:
        return "s3::" + _url_string(_url_parse(url))
    except _URLError as exc:
        raise _AddrError(f"error parsing S3 URL: {exc}") from None


def _detect_file(src: str, dialect: str) -> str | None:
    if not src:
        return None
    if not src.startswith("/"):
        raise _MaybeRelativePath(src, dialect)
    return "file:///" + src[1:]


_DETECTORS = (_detect_github, _detect_git, _detect_bitbucket, _detect_gcs, _detect_s3, _detect_file)


# ---------------------------------------------------------------------------------------------
# Go's path.Clean / path.Join / fs.ValidPath / strconv.Quote


def _go_clean(path: str) -> str:
    if not path:
        return "."
    rooted = path.startswith("/")
    out: list[str] = []
    for seg in path.split("/"):
        if seg in ("", "."):
            continue
        if seg == "..":
            if out and out[-1] != "..":
                out.pop()
            elif not rooted:
                out.append("..")
        else:
            out.append(seg)
    cleaned = ("/" if rooted else "") + "/".join(out)
    return cleaned or "."


def _go_join(*elems: str) -> str:
    kept = [e for e in elems if e]
    return _go_clean("/".join(kept)) if kept else ""


def _fs_valid_path(name: str) -> bool:
    return name == "." or all(elem not in ("", ".", "..") for elem in name.split("/"))


def _go_quote(s: str) -> str:
    out = ['"']
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x80 or 0xDC80 <= ord(ch) <= 0xDCFF:
            out.append(f"\\x{ord(ch) & 0xFF:02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)


_GO_ESCAPES = MappingProxyType(
    {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}
)


# ---------------------------------------------------------------------------------------------
# A small emulation of Go's net/url: Parse, URL.String, ParseQuery and Values.Encode. Strings are
# handled as UTF-8 bytes, like Go's, with undecodable bytes carried as surrogate escapes.


class _URLError(Exception):
    pass


@dataclass(slots=True)
class _URL:
    scheme: str = ""
    opaque: str = ""
    user: tuple[str, str | None] | None = None  # (username, password or None)
    host: str = ""
    path: str = ""
    raw_path: str = ""
    omit_host: bool = False
    force_query: bool = False
    raw_query: str = ""
    fragment: str = ""
    raw_fragment: str = ""


_PATH, _HOST, _USER, _QUERY, _FRAGMENT = range(5)
_ALNUM = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_HEX = frozenset(b"0123456789abcdefABCDEF")


def _should_escape(c: int, mode: int) -> bool:
    if c in _ALNUM:
        return False
    if mode == _HOST and chr(c) in "!$&'()*+,;=:[]<>\"":
        return False
    ch = chr(c)
    if ch in "-_.~":
        return False
    if ch in "$&+,/:;=?@":
        if mode == _USER:
            return ch in "@/?:"
        if mode == _PATH:
            return ch == "?"
        if mode == _QUERY:
            return True
        if mode == _FRAGMENT:
            return False
    return not (mode == _FRAGMENT and ch in "!()*")


def _bytes(s: str) -> bytes:
    return s.encode("utf-8", "surrogateescape")


def _escape(s: str, mode: int) -> str:
    out = []
    for c in _bytes(s):
        if not _should_escape(c, mode):
            out.append(chr(c))
        elif c == 0x20 and mode == _QUERY:
            out.append("+")
        else:
            out.append(f"%{c:02X}")
    return "".join(out)


def _unescape(s: str, mode: int) -> str:
    raw = _bytes(s)
    out = bytearray()
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == 0x25:  # %
            chunk = raw[i : i + 3]
            if len(chunk) < 3 or chunk[1] not in _HEX or chunk[2] not in _HEX:
                raise _URLError(f"invalid URL escape {_go_quote(chunk.decode('utf-8', 'surrogateescape'))}")
            if mode == _HOST and int(chr(chunk[1]), 16) < 8 and chunk != b"%25":
                raise _URLError(f"invalid URL escape {_go_quote(chunk.decode('ascii'))}")
            out.append(int(chunk[1:].decode("ascii"), 16))
            i += 3
            continue
        if mode == _HOST and c < 0x80 and _should_escape(c, mode):
            raise _URLError(f"invalid character {_go_quote(chr(c))} in host name")
        out.append(0x20 if c == 0x2B and mode == _QUERY else c)
        i += 1
    return out.decode("utf-8", "surrogateescape")


def _valid_encoded(s: str, mode: int) -> bool:
    return all(chr(c) in "!$&'()*+,;=:@[]%" or not _should_escape(c, mode) for c in _bytes(s))


def _url_parse(raw: str) -> _URL:
    """Parse like Go's ``url.Parse`` (raises ``_URLError`` with Go's message)."""
    rest_all, has_frag, frag = raw.partition("#")
    try:
        u = _url_parse_main(rest_all)
        if has_frag and frag:
            u.fragment = _unescape(frag, _FRAGMENT)
            u.raw_fragment = "" if _escape(u.fragment, _FRAGMENT) == frag else frag
    except _URLError as exc:
        raise _URLError(f"parse {_go_quote(rest_all)}: {exc}") from None
    return u


def _url_parse_main(raw: str) -> _URL:
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in raw):
        raise _URLError("net/url: invalid control character in URL")
    u = _URL()
    if raw == "*":
        u.path = "*"
        return u
    scheme, rest = _get_scheme(raw)
    u.scheme = scheme.lower()
    if rest.endswith("?") and rest.count("?") == 1:
        u.force_query = True
        rest = rest[:-1]
    else:
        rest, _, u.raw_query = rest.partition("?")
    if not rest.startswith("/"):
        if u.scheme:
            u.opaque = rest  # a rootless path after a scheme is opaque
            return u
        if ":" in rest.partition("/")[0]:
            raise _URLError("first path segment in URL cannot contain colon")
    if rest.startswith("//") and (u.scheme or not rest.startswith("///")):
        authority, slash, path = rest[2:].partition("/")
        rest = slash + path
        u.user, u.host = _parse_authority(authority)
    elif u.scheme and rest.startswith("/"):
        u.omit_host = True
    u.path = _unescape(rest, _PATH)
    u.raw_path = "" if _escape(u.path, _PATH) == rest else rest
    return u


def _get_scheme(raw: str) -> tuple[str, str]:
    for i, ch in enumerate(raw):
        if "a" <= ch <= "z" or "A" <= ch <= "Z":
            continue
        if "0" <= ch <= "9" or ch in "+-.":
            if i == 0:
                return "", raw
            continue
        if ch == ":":
            if i == 0:
                raise _URLError("missing protocol scheme")
            return raw[:i], raw[i + 1 :]
        return "", raw
    return "", raw


def _parse_authority(authority: str) -> tuple[tuple[str, str | None] | None, str]:
    at = authority.rfind("@")
    host = _parse_host(authority[at + 1 :])
    if at < 0:
        return None, host
    userinfo = authority[:at]
    if not all((ch.isascii() and ch.isalnum()) or ch in "-._:~!$&'()*+,;=%@" for ch in userinfo):
        raise _URLError("net/url: invalid userinfo")
    name, colon, password = userinfo.partition(":")
    return (_unescape(name, _USER), _unescape(password, _USER) if colon else None), host


def _parse_host(host: str) -> str:
    if host.startswith("["):
        close = host.rfind("]")
        if close < 0:
            raise _URLError("missing ']' in host")
        port = host[close + 1 :]
    else:
        colon = host.rfind(":")
        port = host[colon:] if colon != -1 else ""
    if port and (port[0] != ":" or not all("0" <= ch <= "9" for ch in port[1:])):
        raise _URLError(f"invalid port {_go_quote(port)} after host")
    return _unescape(host, _HOST)


def _url_string(u: _URL) -> str:
    """Print like Go's ``URL.String``."""
    buf = ""
    if u.scheme:
        buf += u.scheme + ":"
    if u.opaque:
        buf += u.opaque
    else:
        if (u.scheme or u.host or u.user is not None) and not (u.omit_host and not u.host and u.user is None):
            if u.host or u.path or u.user is not None:
                buf += "//"
            if u.user is not None:
                name, password = u.user
                buf += _escape(name, _USER)
                if password is not None:
                    buf += ":" + _escape(password, _USER)
                buf += "@"
            if u.host:
                buf += _escape(u.host, _HOST)
        path = _escaped_path(u)
        if path and path[0] != "/" and u.host:
            buf += "/"
        if not buf and ":" in path.partition("/")[0]:
            buf += "./"
        buf += path
    if u.force_query or u.raw_query:
        buf += "?" + u.raw_query
    if u.fragment:
        raw = u.raw_fragment
        ok = raw and _valid_encoded(raw, _FRAGMENT) and _safe_unescape(raw, _FRAGMENT) == u.fragment
        buf += "#" + (raw if ok else _escape(u.fragment, _FRAGMENT))
    return buf


def _escaped_path(u: _URL) -> str:
    if u.raw_path and _valid_encoded(u.raw_path, _PATH) and _safe_unescape(u.raw_path, _PATH) == u.path:
        return u.raw_path
    if u.path == "*":
        return "*"
    return _escape(u.path, _PATH)


def _safe_unescape(s: str, mode: int) -> str | None:
    try:
        return _unescape(s, mode)
    except _URLError:
        return None


def _parse_query(query: str) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    error: _URLError | None = None
    for item in query.split("&"):
        if ";" in item:
            error = error or _URLError("invalid semicolon separator in query")
            continue
        if not item:
            continue
        key, _, value = item.partition("=")
        try:
            pairs.append((_unescape(key, _QUERY), _unescape(value, _QUERY)))
        except _URLError as exc:
            error = error or exc
    if error is not None:
        raise error
    return pairs


def _encode_query(pairs: list[tuple[str, str]]) -> str:
    order = sorted(range(len(pairs)), key=lambda i: (_bytes(pairs[i][0]), i))
    return "&".join(f"{_escape(pairs[i][0], _QUERY)}={_escape(pairs[i][1], _QUERY)}" for i in order)
