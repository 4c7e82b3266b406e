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

__all__ = ["SCAN_LIMIT", "secret_kind"]

#: How much of a copied file is looked at: keys, credential files and token files are small, and
#: a large data file is not read whole for this.
SCAN_LIMIT = 1 << 20

_PATTERNS: tuple[tuple[str, re.Pattern[bytes]], ...] = (
    (
        "a private key",
        re.compile(
            rb"-----BEGIN (?:RSA |DSA |EC |OPENSSH |ENCRYPTED |SSH2 ENCRYPTED |PGP )?"
            rb"PRIVATE KEY(?: BLOCK)?-----|PuTTY-User-Key-File-[23]:"
        ),
    ),
    (
        "an AWS access key",
        re.compile(rb"(?<![0-9A-Z])(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Z])"),
    ),
    (
        "an AWS secret access key",
        re.compile(rb"(?im)^\s*aws_secret_access_key\s*[=:]\s*[\"']?[0-9a-zA-Z/+]{40}[\"']?\s*$"),
    ),
    (
        "a GitHub token",
        re.compile(rb"(?<![0-9A-Za-z_])(?:ghp|gho|ghu|ghs|ghr)_[0-9A-Za-z]{36}|github_pat_\w{82}"),
    ),
    ("a GitLab token", re.compile(rb"(?<![0-9A-Za-z_-])glpat-[0-9A-Za-z_-]{20}(?![0-9A-Za-z_-])")),
    ("a Slack token", re.compile(rb"xox(?:a|b|p|o|s|r)-(?:\d+-)+[a-z0-9]+", re.IGNORECASE)),
    ("an npm token", re.compile(rb"//.+/:_authToken=\s*(?:(?:npm_)?[A-Za-z0-9_-]+)")),
    ("a PyPI token", re.compile(rb"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}")),
    ("a Terraform Cloud or Enterprise token", re.compile(rb"(?i)[a-z0-9]{14}\.atlasv1\.[a-z0-9_=-]{60,70}")),
)


def secret_kind(data: bytes) -> str | None:
    """Return what credential ``data`` (a file's first ``SCAN_LIMIT`` bytes) holds, in words
    ("a private key"), or None.

    >>> secret_kind(b"-----BEGIN OPENSSH PRIVATE KEY-----\\nb3Blbn...")
    'a private key'
    >>> secret_kind(b'resource "x" "y" {}') is None
    True
    """
    for kind, pattern in _PATTERNS:
        if pattern.search(data) is not None:
            return kind
    return None
