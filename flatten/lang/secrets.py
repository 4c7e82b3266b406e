"""Which copied files hold a credential: a small table of high-confidence patterns (issue 39).

The output is committed, so a private key or a token beside a module (``id_rsa``,
``modules/app/server.pem``, an exported ``credentials`` file) must not be vendored without a word.
Only content counts, never a name: each row is a pattern secret scanners report without a second
look, because the text has a fixed prefix or header no ordinary file carries. The rows follow
Yelp's detect-secrets 1.5 plugins (``private_key.py``, ``aws.py``, ``github_token.py``,
``gitlab_token.py``, ``slack.py``, ``npm.py``, ``pypi_token.py``) and gitleaks' rule
``hashicorp-tf-api-token`` for Terraform's own tokens (``credentials.tfrc.json``). detect-secrets
itself is not a dependency: importing one of its plugins imports the whole package and
``requests`` (0.85 s measured), on every build that copies a file; its entropy and keyword
plugins, the parts not written here, are the guessing this check must not do.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

__all__ = ["SCAN_LIMIT", "secret_kind"]

#: How much of a copied file is looked at: keys, credential files and token files are small, and
#: a large data file is not read whole for this.
SCAN_LIMIT = 1 << 20

_Row = tuple[str, tuple[bytes, ...], bool, re.Pattern[bytes]]


@cache
def _compiled() -> tuple[Any, tuple[_Row, ...]]:
    """The table, compiled when a build first copies a file (not by every build's process)."""
    import re2

    # Each row: what it is, the literal text every match holds (looked for first: ``bytes.find`` is
    # memchr-fast, and Python's backtracking ``re`` on a 10 KB file cost up to 35 ms a pattern, 100 s
    # for a tree of 2,000 copied files), whether to look for it ignoring case, and the pattern, tried
    # only on a window around each place the text is found, so a hostile file costs linear time.
    rows: tuple[_Row, ...] = (
        (
            "a private key",
            (b"PRIVATE KEY", b"PuTTY-User-Key-File-"),
            False,
            re.compile(
                rb"-----BEGIN (?:RSA |DSA |EC |OPENSSH |ENCRYPTED |SSH2 ENCRYPTED |PGP )?"
                rb"PRIVATE KEY(?: BLOCK)?-----|PuTTY-User-Key-File-[23]:"
            ),
        ),
        (
            "an AWS access key",
            (b"A3T", b"ABIA", b"ACCA", b"AKIA", b"ASIA"),
            False,
            re.compile(rb"(?<![0-9A-Z])(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Z])"),
        ),
        (
            "an AWS secret access key",
            (b"aws_secret_access_key",),
            True,
            re.compile(
                rb"(?im)^[ \t]*aws_secret_access_key[ \t]*[=:][ \t]*[\"']?[0-9a-zA-Z/+]{40}[\"']?[ \t\r]*$"
            ),
        ),
        (
            "a GitHub token",
            (b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_", b"github_pat_"),
            False,
            re.compile(rb"(?<![0-9A-Za-z_])(?:ghp|gho|ghu|ghs|ghr)_[0-9A-Za-z]{36}|github_pat_\w{82}"),
        ),
        (
            "a GitLab token",
            (b"glpat-",),
            False,
            re.compile(rb"(?<![0-9A-Za-z_-])glpat-[0-9A-Za-z_-]{20}(?![0-9A-Za-z_-])"),
        ),
        ("a Slack token", (b"xox",), True, re.compile(rb"(?i)xox(?:a|b|p|o|s|r)-(?:\d+-)+[a-z0-9]+")),
        (
            "an npm token",
            (b"/:_authToken=",),
            False,
            re.compile(rb"//[^\s]+/:_authToken=[ \t]*(?:npm_)?[A-Za-z0-9_-]+"),
        ),
        (
            "a PyPI token",
            (b"pypi-AgEIcHlwaS5vcmc",),
            False,
            re.compile(rb"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}"),
        ),
        (
            "a Terraform Cloud or Enterprise token",
            (b".atlasv1.",),
            True,
            re.compile(rb"(?i)(?<![a-z0-9])[a-z0-9]{14}\.atlasv1\.[a-z0-9_=-]{60,70}"),
        ),
    )

    # Every row's literals in one RE2 expression (linear, and about 10x faster than the rows' own
    # ``in`` checks): most copied files hold none of them and are done after this one pass.
    any_literal = re2.compile(
        b"|".join(
            b"(?i:" + re.escape(needle) + b")" if fold else re.escape(needle)
            for _, needles, fold, _ in rows
            for needle in needles
        )
    )
    return any_literal, rows


# How far around a found literal a match can reach (the longest pattern: a GitHub fine-grained
# token, 93 characters), and how many places of one literal are tried in one file.
_WINDOW = 256
_TRIES = 1000


def _found(data: bytes, needle: bytes, pattern: re.Pattern[bytes]) -> bool:
    at = data.find(needle)
    tries = 0
    while at >= 0 and tries < _TRIES:
        start = max(0, at - _WINDOW)
        # A line-anchored pattern needs the window to begin at a line start.
        line = data.rfind(b"\n", start, at)
        if pattern.search(data, line + 1 if line >= 0 else start, at + len(needle) + _WINDOW):
            return True
        at = data.find(needle, at + 1)
        tries += 1
    return False


def secret_kind(data: bytes) -> str | None:
    """Return what credential ``data`` (a file's first ``SCAN_LIMIT`` bytes) holds, in words
    ("a private key"), or None.

    >>> secret_kind(b"-----BEGIN OPENSSH PRIVATE KEY-----\\nb3Blbn...")
    'a private key'
    >>> secret_kind(b'resource "x" "y" {}') is None
    True
    """
    any_literal, rows = _compiled()
    if any_literal.search(data) is None:
        return None
    lowered: bytes | None = None
    for kind, needles, fold, pattern in rows:
        if fold:
            lowered = data.lower() if lowered is None else lowered
        text = lowered if fold and lowered is not None else data
        # With ``fold`` both the literal and the pattern (which ignores case) see the lowered text.
        if any(needle.lower() in text if fold else needle in text for needle in needles):
            for needle in needles:
                if _found(text, needle.lower() if fold else needle, pattern):
                    return kind
    return None
