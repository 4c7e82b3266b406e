"""Settings for fetching remote modules, read from the environment once, at the edge.

Everything :mod:`flatten.sources` needs from outside the configuration comes from one frozen
:class:`SourceEnv`, built by :meth:`SourceEnv.from_environ` in the CLI (or by a test, directly):
registry credentials (``TF_TOKEN_<host>`` and the CLI configuration's ``credentials`` blocks),
the data directory (``TF_DATA_DIR``), the download cache (``FLATTEN_CACHE_DIR``,
``$XDG_CACHE_HOME/flatten``, ``~/.cache/flatten``) and extraction limits. Tokens are kept in
:class:`Secret`, whose ``repr``/``str`` never show the value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from flatten import gate

__all__ = ["ExtractLimits", "Secret", "SourceEnv", "read_cli_credentials", "token_env_host"]


class Secret:
    """A credential that does not print itself. ``reveal()`` is the only way to get the value."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


@dataclass(frozen=True, slots=True)
class ExtractLimits:
    """Limits on what an archive may unpack to: total bytes and number of members."""

    max_bytes: int = 1 << 30  # 1 GiB
    max_files: int = 50_000


def token_env_host(name: str) -> str | None:
    """Return the host a ``TF_TOKEN_*`` variable names, or None for another variable.

    Terraform's encoding: ``.`` is written ``_`` and ``-`` is written ``__``.

    >>> token_env_host("TF_TOKEN_app_terraform_io")
    'app.terraform.io'
    >>> token_env_host("TF_TOKEN_my__registry_example_com")
    'my-registry.example.com'
    """
    if not name.startswith("TF_TOKEN_") or len(name) == len("TF_TOKEN_"):
        return None
    encoded = name[len("TF_TOKEN_") :]
    return encoded.replace("__", "\0").replace("_", ".").replace("\0", "-").lower()


@dataclass(frozen=True, slots=True)
class SourceEnv:
    """Everything fetching needs from outside the configuration.

    ``tokens`` maps a registry host (lowercase, with ``:port`` when not 443) to its token.
    ``data_dir`` is Terraform's data directory relative to the root (``TF_DATA_DIR``), whose
    ``modules/modules.json`` is reused when ``use_installed``. ``insecure_hosts`` are hosts
    reached over plain ``http://`` for service discovery (loopback test servers only).
    """

    cache_dir: Path
    tokens: Mapping[str, Secret] = field(default_factory=dict)
    data_dir: str = ".terraform"
    use_installed: bool = True
    insecure_hosts: frozenset[str] = frozenset()
    limits: ExtractLimits = field(default_factory=ExtractLimits)
    # Each registry API request (discovery, versions, download location), start to end of body:
    # Terraform's TF_REGISTRY_CLIENT_TIMEOUT, default 10 s; retried `retries` times (Terraform's
    # TF_REGISTRY_DISCOVERY_RETRY, default 1) after a network error, 429 or 5xx but 501, waiting
    # `retry_wait` * 2**n seconds as Terraform's retry client does.
    timeout: float = 10.0
    retries: int = 1
    retry_wait: float = 1.0
    # Every download of one build together (every request, redirect and indirection, the git
    # commands), from the first on: FLATTEN_DOWNLOAD_TIMEOUT, default 600 s (RemoteFetcher makes
    # the one Deadline). A socket silent for `idle_timeout` fails sooner.
    download_timeout: float = 600.0
    idle_timeout: float = 60.0
    jobs: int = 8
    progress: bool = False  # draw a progress line on stderr (the CLI sets it when stderr is a TTY)
    git: str = "git"

    @classmethod
    def from_environ(
        cls, environ: Mapping[str, str], *, home: Path | None = None, progress: bool = False
    ) -> SourceEnv:
        """Return the settings the environment gives: credentials, data and cache directories.

        ``home`` stands in for ``~`` (tests). Unreadable configuration files are ignored, as
        Terraform ignores a missing ``~/.terraformrc``.
        """
        home = home if home is not None else Path(environ.get("HOME") or Path.home())
        tokens: dict[str, Secret] = {}
        config = environ.get("TF_CLI_CONFIG_FILE") or environ.get("TERRAFORM_CONFIG")
        paths = [Path(config)] if config else [home / ".terraformrc"]
        paths.append(home / ".terraform.d" / "credentials.tfrc.json")
        for path in paths:
            for host, token in read_cli_credentials(path).items():
                tokens.setdefault(host, token)
        for name, value in environ.items():  # the environment wins over configuration files
            token_host = token_env_host(name)
            if token_host is not None and value:
                tokens[token_host] = Secret(value)
        if environ.get("FLATTEN_CACHE_DIR"):
            cache = Path(environ["FLATTEN_CACHE_DIR"])
        elif environ.get("XDG_CACHE_HOME"):
            cache = Path(environ["XDG_CACHE_HOME"]) / "flatten"
        else:
            cache = home / ".cache" / "flatten"
        return cls(
            cache_dir=cache,
            tokens=tokens,
            data_dir=environ.get("TF_DATA_DIR") or ".terraform",
            progress=progress,
            timeout=float(_positive_int(environ.get("TF_REGISTRY_CLIENT_TIMEOUT"), 10)),
            retries=_positive_int(environ.get("TF_REGISTRY_DISCOVERY_RETRY"), 1),
            download_timeout=_positive_float(environ.get("FLATTEN_DOWNLOAD_TIMEOUT"), 600.0),
        )

    def token_for(self, host: str) -> Secret | None:
        """Return the token for a registry host, or None."""
        return self.tokens.get(host.lower())


def _positive_int(text: str | None, default: int) -> int:
    # Terraform's reading of TF_REGISTRY_CLIENT_TIMEOUT and TF_REGISTRY_DISCOVERY_RETRY: a whole
    # number above zero, anything else (unset, "0", "1.5", "x") means the default.
    try:
        value = int(text or "", 10)
    except ValueError:
        return default
    return value if value > 0 else default


def _positive_float(text: str | None, default: float) -> float:
    # flatten's own FLATTEN_DOWNLOAD_TIMEOUT: seconds, fractions allowed; anything else the default.
    try:
        value = float(text or "")
    except ValueError:
        return default
    return value if 0 < value < float("inf") else default


# ---------------------------------------------------------------------------------------------
# A tiny reader for the CLI configuration's credentials blocks: `credentials "host" { token = "…" }`.
# The rest of the file (provider installation, host blocks, …) is skipped without being understood.

_TOKEN_RE = re.compile(
    r"""(?P<ws>\s+)|(?P<comment>\#[^\n]*|//[^\n]*|/\*.*?\*/)|(?P<string>"(?:[^"\\\n]|\\.)*")"""
    r"""|(?P<ident>[A-Za-z_][A-Za-z0-9_\-]*)|(?P<punct>[{}=\[\],:()])|(?P<other>[^\s{}"\[\]=]+)""",
    re.S,
)
_ESCAPES = MappingProxyType({"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"})


def _tokens(text: str) -> Iterator[tuple[str, str]]:
    pos = 0
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if m is None:
            return
        pos = m.end()
        kind = m.lastgroup or ""
        if kind in ("ws", "comment"):
            continue
        value = m[0]
        if kind == "string":
            value = re.sub(r"\\(.)", lambda e: _ESCAPES.get(e[1], e[1]), value[1:-1])
        yield kind, value


def read_cli_credentials(path: Path) -> dict[str, Secret]:
    """Return the tokens of a CLI configuration file's ``credentials`` blocks, by lowercase host.

    Both the native syntax and JSON (a name ending in ``.json``) are read. A missing or
    unreadable file gives no credentials.

    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile("w", suffix=".tfrc", delete=False) as f:
    ...     _ = f.write('credentials "Example.com" {\\n  token = "abc" # t\\n}\\n')
    >>> read_cli_credentials(Path(f.name))
    {'example.com': Secret('***')}
    >>> os.unlink(f.name)
    """
    try:
        text = gate.read_text(path, encoding="utf-8-sig")  # the user's own file: a regular one
    except (OSError, UnicodeDecodeError):
        return {}
    out: dict[str, Secret] = {}
    if path.name.endswith(".json"):
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError):  # RecursionError: nested deeper than json can read
            return {}
        creds = doc.get("credentials") if isinstance(doc, dict) else None
        if isinstance(creds, dict):
            for host, body in creds.items():
                if isinstance(body, dict) and isinstance(body.get("token"), str):
                    out[str(host).lower()] = Secret(body["token"])
        return out
    toks = list(_tokens(text))
    i, depth = 0, 0
    while i < len(toks):
        kind, value = toks[i]
        if value == "{":
            depth += 1
        elif value == "}":
            depth = max(0, depth - 1)
        elif (
            depth == 0
            and kind == "ident"
            and value == "credentials"
            and i + 2 < len(toks)
            and toks[i + 1][0] == "string"
            and toks[i + 2][1] == "{"
        ):
            host, body_depth, j = toks[i + 1][1].lower(), 1, i + 3
            while j < len(toks) and body_depth:
                k, v = toks[j]
                if v == "{":
                    body_depth += 1
                elif v == "}":
                    body_depth -= 1
                elif (
                    body_depth == 1
                    and k == "ident"
                    and v == "token"
                    and j + 2 < len(toks)
                    and toks[j + 1][1] == "="
                    and toks[j + 2][0] == "string"
                ):
                    out[host] = Secret(toks[j + 2][1])
                    j += 2
                j += 1
            i = j
            continue
        i += 1
    return out
