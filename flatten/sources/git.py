"""The git getter: clone a repository at a ref with the ``git`` binary (go-getter ``GitGetter``).

Rule for the file: git runs non-interactively (``GIT_TERMINAL_PROMPT=0``, no credential prompts,
``ssh`` in batch mode), every URL shown in a message has its password removed, and the result of a
clone is the exact commit checked out. ``ref`` may be a branch, a tag or a commit; ``depth``
makes a shallow clone (a commit SHA is then fetched directly).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from flatten import gate
from flatten.lang.redact import redact_url, strip_controls
from flatten.sources.package import FetchError, SizeBudget

__all__ = ["clone", "redact_url", "resolve_ref"]

_SHA_RE = re.compile(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["GIT_TERMINAL_PROMPT"] = "0"
    env.setdefault("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")
    env["GIT_ASKPASS"] = "echo" if shutil.which("echo") else ""
    return env


def _tree_size(root: Path) -> int:
    """The bytes of the files under ``root`` (0 when it is not there yet), without following links.

    The gate's walk (flatten/gate.py): no recursion, as a hostile repository may be thousands of
    directories deep, and entries git removes meanwhile (its temporary files) count nothing.
    """
    try:
        with gate.open_dir(root) as top:
            return gate.tree_bytes(top)
    except OSError:
        return 0


def _remove_git_dirs(dest: Path) -> None:
    """Remove every ``.git`` of the checkout (the repository's and its submodules' files or
    directories), so ``dest`` holds only the checked-out files; no link is followed."""

    def enter(_rel: str, here: gate.Dir, entries: tuple[gate.DirEntry, ...]) -> list[str]:
        for entry in entries:
            if entry.name == ".git":
                gate.remove_tree(here, entry.name)
        return [e.name for e in entries if e.kind == "dir" and e.name != ".git"]

    with gate.open_dir(dest) as top:
        gate.walk_tree(top, enter)


def _run(
    git: str,
    args: list[str],
    *,
    cwd: Path | None = None,
    timeout: float = 600,
    remote: str = "",
    watch: Callable[[], None] | None = None,
) -> str:
    """Run git; ``watch`` is called every half second while it runs, and may stop it by raising."""
    try:
        # A session of its own: at the deadline the whole group goes (git-remote-https, ssh, the
        # pack readers), not only git, whose children would hold the pipes open and the build with them.
        child = subprocess.Popen(
            [git, *args],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",  # git relays what the server says, in any encoding
            env=_env(),
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    except FileNotFoundError:
        raise FetchError(
            f"the git command ({git}) was not found; install git to use git module sources"
        ) from None
    end = time.monotonic() + timeout
    try:
        while True:
            try:
                stdout, stderr = child.communicate(timeout=max(0.001, min(0.5, end - time.monotonic())))
                break
            except subprocess.TimeoutExpired:
                if time.monotonic() >= end:
                    raise
                if watch is not None:
                    watch()
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        where = f" of {redact_url(remote)}" if remote else ""
        raise FetchError(
            f"git {args[0]}{where} did not finish in time (the limit FLATTEN_DOWNLOAD_TIMEOUT sets); "
            "the server is too slow or not responding"
        ) from None
    except BaseException:  # an interrupt: no git left running
        with contextlib.suppress(OSError):
            os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        raise
    proc = subprocess.CompletedProcess(child.args, child.returncode, stdout, stderr)
    if proc.returncode != 0:
        lines = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        message = strip_controls(redact_url(" ".join(line.strip() for line in lines[-3:])))
        raise FetchError(f"error running git {args[0]}: {message or f'exit status {proc.returncode}'}")
    return proc.stdout


def resolve_ref(git: str, url: str, ref: str, *, timeout: float = 120) -> str | None:
    """Return the commit ``ref`` names in the repository at ``url`` without cloning it.

    A full commit SHA is returned as is; an empty ref means the default branch (``HEAD``).
    None means the remote lists no such branch or tag (it may still be an abbreviated commit,
    which only a clone can tell).
    """
    if _SHA_RE.fullmatch(ref):
        return ref.lower()
    out = _run(git, ["ls-remote", "--", url, ref or "HEAD"], timeout=timeout, remote=url)
    found: dict[str, str] = {}
    for line in out.splitlines():
        sha, _, name = line.partition("\t")
        found[name] = sha
    if not ref:
        return found.get("HEAD")
    for name in (f"refs/tags/{ref}^{{}}", f"refs/tags/{ref}", f"refs/heads/{ref}", ref):
        if name in found:
            return found[name]
    return None


def clone(
    git: str,
    url: str,
    dest: Path,
    *,
    ref: str = "",
    depth: int = 0,
    timeout: float = 600,
    budget: SizeBudget | None = None,
) -> str:
    """Clone ``url`` into the new directory ``dest``, check out ``ref``, and return the commit SHA.

    Submodules are initialised as go-getter does; the ``.git`` directory is removed afterwards, so
    ``dest`` holds only the checked-out files. What git writes (history and checkout) is measured
    while it runs and taken from ``budget``, the build's bytes on disk: a repository holding a
    1.5 GiB file of zeros (7 MB served) is stopped when it passes the budget, not after.
    Raises :class:`FetchError`.
    """
    budget = budget or SizeBudget(1 << 30)

    def watch() -> None:
        if _tree_size(dest) > budget.remaining():
            raise FetchError(
                f"the git repository {redact_url(url)} holds more than the {budget.limit} bytes "
                "the packages of one build may use; refusing it"
            )

    if ref.startswith("-"):
        raise FetchError(f"invalid git ref {ref!r}")
    end = time.monotonic() + timeout

    def run(args: list[str], cwd: Path | None = None) -> str:
        # Every command of the clone shares the one deadline of the package download.
        return _run(git, args, cwd=cwd, timeout=max(0.001, end - time.monotonic()), remote=url, watch=watch)

    if depth > 0 and _SHA_RE.fullmatch(ref):
        with gate.open_dir(dest.parent, create=True) as parent:
            new = dest.name
            parent.mkdir(new)
        run(["init", "--quiet"], cwd=dest)
        run(["fetch", "--quiet", f"--depth={depth}", "--", url, ref], cwd=dest)
        run(["checkout", "--quiet", "FETCH_HEAD"], cwd=dest)
    elif depth > 0:
        branch = ["--branch", ref] if ref else []
        run(["clone", "--quiet", f"--depth={depth}", *branch, "--", url, str(dest)])
    else:
        run(["clone", "--quiet", "--", url, str(dest)])
        if ref:
            run(["checkout", "--quiet", ref], cwd=dest)
    if gate.kind_of(dest / ".gitmodules") == "file":
        run(["submodule", "update", "--init", "--recursive", "--quiet"], cwd=dest)
    commit = run(["rev-parse", "HEAD"], cwd=dest).strip()
    # Imported here: the archive stack (tarfile, zipfile, lzma) is for remote sources only.
    from flatten.sources.archive import check_package_tree

    check_package_tree(dest)  # names and depth, as archive members are checked
    _remove_git_dirs(dest)
    budget.take(_tree_size(dest), f"the git repository {redact_url(url)}")  # what stays in the cache
    return commit
