"""Hiding credentials that users write into URLs (``scheme://user:password@host``).

Terraform's module sources may carry a password in their userinfo; it must never reach output,
logs, diagnostics (including the source line a diagnostic quotes) or the manifest.
"""

from __future__ import annotations

import re

__all__ = ["redact_url"]

_USERINFO_RE = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)(?P<user>[^/@:\s]*):[^/@\s]*@")


def redact_url(text: str) -> str:
    """Return ``text`` with the password of every ``scheme://user:password@`` URL hidden.

    >>> redact_url("fatal: https://me:s3cret@h/x.git not found")
    'fatal: https://me:***@h/x.git not found'
    """
    return _USERINFO_RE.sub(lambda m: f"{m['scheme']}{m['user']}:***@", text)
