"""Hiding credentials and neutralising what servers send, wherever a URL or a server's text is shown.

Terraform's module sources may carry credentials in their userinfo: ``user:password@``, or a token
as the user name alone (``https://<token>@github.com/...``, the usual way to pass a GitHub token).
Nothing tells a user name from a token, so the whole userinfo is hidden (``https://***@host``),
everywhere a URL is shown or stored: messages, the source line a diagnostic quotes, the manifest,
``graph`` and ``providers`` output, the download cache. The one exception is the fixed SSH login
``git`` (``ssh://git@github.com/...``), which every git host uses and which is never a secret.

:class:`Scrubber` adds the secrets a build knows (registry tokens) and strips control characters,
for text that came from a server (an error reason, a registry's version string, git's stderr):
a server must not be able to write escape sequences to the user's terminal.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["Scrubber", "holds_userinfo", "redact_url", "strip_controls", "strip_userinfo"]

# The userinfo is everything up to the *last* "@" of the authority (a password may hold "@";
# urllib.parse splits the same way), so the character class stops only where the authority
# ends (``/ ? #``), at white space, and at characters that never occur in a URL but do around one
# in text (quotes, angle brackets, a backslash).
_USERINFO_RE = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^/?#\s\"<>\\`]*)@")

# C0 controls (but tab and newline), DEL, C1 controls, and the Unicode bidirectional overrides
# that can make shown text read differently from what it is.
_CONTROL_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _mask(m: re.Match[str]) -> str:
    if m["userinfo"] == "git" and m["scheme"].lower() in ("ssh://", "git+ssh://", "ssh+git://"):
        return m[0]
    return f"{m['scheme']}***@"


def redact_url(text: str) -> str:
    """Return ``text`` with the userinfo of every ``scheme://userinfo@`` URL in it hidden.

    >>> redact_url("fatal: https://me:s3cret@h/x.git not found")
    'fatal: https://***@h/x.git not found'
    >>> redact_url("git::https://ghp_abc@github.com/o/r.git ssh://git@h/z https://u:p@ss@h/")
    'git::https://***@github.com/o/r.git ssh://git@h/z https://***@h/'
    """
    return _USERINFO_RE.sub(_mask, text)


# After "://": the characters RFC 3986 allows in a userinfo, then "@". Narrower than
# ``_USERINFO_RE`` (which stops only where an authority ends, for text) so that in binary data (a
# pickled cache entry) it never runs from one string into the next.
_USERINFO_AFTER = re.compile(rb"([A-Za-z0-9\-._~!$&'()*+,;=:%]*)@")


def holds_userinfo(data: bytes) -> bool:
    """Whether ``data`` holds a URL with a userinfo (``://user:password@``, ``://token@``) other
    than the SSH login ``git@``: the test every cache writer applies before it stores anything.

    >>> holds_userinfo(b"git::https://u:p@h/x"), holds_userinfo(b"ssh://git@h/x a@b https://h/")
    (True, False)
    """
    at = data.find(b"://")
    while at >= 0:
        m = _USERINFO_AFTER.match(data, at + 3)
        if m is not None and m[1] != b"git":
            return True
        at = data.find(b"://", at + 3)
    return False


def strip_userinfo(url: str) -> str:
    """Return ``url`` without its userinfo at all (for cache keys, which must not depend on a secret).

    >>> strip_userinfo("git::https://u:p@h/x.git?ref=v1")
    'git::https://h/x.git?ref=v1'
    """
    return _USERINFO_RE.sub(lambda m: m["scheme"], url)


def strip_controls(text: str, *, keep_newlines: bool = True) -> str:
    r"""Return ``text`` with control characters shown as escapes (``\x1b``), never sent raw.

    >>> strip_controls("bad\x1b[2Jversion\r")
    'bad\\x1b[2Jversion\\x0d'
    """
    out = _CONTROL_RE.sub(
        lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100 else f"\\u{ord(m[0]):04x}", text
    )
    return out if keep_newlines else out.replace("\n", "\\x0a")


class Scrubber:
    r"""Hides URL userinfo and the given secrets, and neutralises control characters, in shown text.

    >>> Scrubber(["tok3n"])("the registry said tok3n\x07 at https://tok3n@h/")
    'the registry said ***\\x07 at https://***@h/'
    """

    __slots__ = ("_secrets",)

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        # Longest first, so a secret that contains another is hidden whole.
        self._secrets = tuple(sorted({s for s in secrets if s}, key=len, reverse=True))

    def holds_secret(self, text: str) -> bool:
        """Whether ``text`` contains one of the secrets (a server echoing a token back)."""
        return any(s in text for s in self._secrets)

    def holds_credential(self, text: str) -> bool:
        """Whether ``text`` holds a secret or a URL userinfo: what must never be stored at rest."""
        return self.holds_secret(text) or holds_userinfo(text.encode("utf-8", "surrogatepass"))

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return strip_controls(redact_url(text))
