"""The environment variables a build reads: a build's result is a function of these and nothing
else of the environment (flatten.cli.BuildRequest carries them; replay records are keyed by them)."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["BUILD_ENVIRON", "build_environ"]

#: By name prefix: Terraform's and OpenTofu's settings and credentials, flatten's, the cache and
#: home directories, the terminal's, and GITHUB_ACTIONS (workflow annotations in the text
#: diagnostics).
BUILD_ENVIRON = (
    "TF_",
    "TERRAFORM_CONFIG",
    "FLATTEN_",
    "XDG_",
    "TOFU_",
    "NO_COLOR",
    "TERM",
    "COLUMNS",
    "HOME",
    "GITHUB_ACTIONS",
)


def build_environ(environ: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """Return the variables of ``environ`` a build reads, sorted by name; never the cache key (a
    secret that flatten.shell.cache_auth reads itself)."""
    return tuple(
        sorted((k, v) for k, v in environ.items() if k.startswith(BUILD_ENVIRON) and k != "FLATTEN_CACHE_KEY")
    )
