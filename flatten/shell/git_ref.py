"""A git revision's tree, read for ``flatten affected --since REF`` without touching the checkout.

The tree at REF is written by ``git archive`` into a private temporary directory (mode 0700,
``tempfile.mkdtemp``; the archive is held in memory, then written and extracted through the
gate, flatten/gate.py) and extracted with the same checks as a downloaded package
(flatten/sources/archive.py: no member outside the directory, no device, no link leading out,
sizes bounded). Nothing is written into the user's working tree or repository: ``git worktree
add`` would register the worktree in ``.git/worktrees`` and leave it behind if the run were killed,
and ``git checkout`` would change the user's files. The changed paths are ``git diff --name-only
REF`` (the working tree against REF, staged or not) and the untracked files git does not ignore.

Git failures (not a repository, an unknown REF) are :class:`GitError` with the user's words.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["GitError", "RefTree", "changed_paths", "ref_tree", "repository_top", "resolve_ref"]

#: An archive of a repository's whole tree; far above any configuration repository, so only a
#: runaway (a huge binary committed) stops here.
_MAX_BYTES = 8 * 1024**3
_MAX_FILES = 2_000_000


class GitError(Exception):
    """git could not answer: the message says what to do."""


@dataclass(frozen=True, slots=True)
class RefTree:
    """A revision's tree on disk: ``top`` mirrors the repository's top directory."""

    commit: str
    top: Path
    holder: Path  # the private temporary directory to remove when done

    def remove(self) -> None:
        _remove(self.holder)


_MARK = ".flatten-affected"  # written first into the temporary directory: only such a one is removed


def _remove(holder: Path) -> None:
    """Remove the temporary directory (through the gate; only one carrying the mark)."""
    from flatten import gate

    # A temporary directory left behind (a failure removing it) is the system's to clean.
    with contextlib.suppress(OSError), gate.open_dir(holder.parent) as parent:
        parent.remove(holder.name, owned=lambda d: d.kind(_MARK) == "file")


def _git(top: Path, *args: str, binary: bool = False) -> bytes:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    try:
        done = subprocess.run(
            ["git", "-C", str(top), *args], capture_output=True, env=env, check=False, timeout=600
        )
    except FileNotFoundError:
        raise GitError("git is not installed (or not on PATH); --since needs it.") from None
    except subprocess.TimeoutExpired:
        raise GitError(f"git {args[0]} did not finish within 600 seconds.") from None
    if done.returncode != 0:
        text = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(f"git {args[0]} failed: {text[-1] if text else 'exit ' + str(done.returncode)}")
    return done.stdout


def repository_top(start: Path) -> Path:
    """Return the top directory of the git working tree holding ``start`` (resolved)."""
    try:
        out = _git(start, "rev-parse", "--show-toplevel")
    except GitError:
        raise GitError(
            f"{start} is not inside a git working tree; --since compares with a git revision. "
            "Use --base-out DIR to compare with an existing output instead."
        ) from None
    return Path(out.decode("utf-8", "surrogateescape").strip()).resolve()


def resolve_ref(top: Path, ref: str) -> str:
    """Return the commit ``ref`` names (a commit, branch, tag, ``HEAD~1``, ``origin/main``)."""
    if ref.startswith("-"):
        raise GitError(f"--since {ref}: a revision cannot start with '-'.")
    try:
        out = _git(top, "rev-parse", "--verify", "--quiet", "--end-of-options", ref + "^{commit}")
    except GitError:
        raise GitError(
            f"--since {ref}: no such commit in this repository. Name a commit, branch or tag "
            "(in CI, fetch it first: actions/checkout with fetch-depth: 0, or git fetch origin main)."
        ) from None
    return out.decode("ascii").strip()


def changed_paths(top: Path, commit: str) -> set[str]:
    """Return the paths (relative to ``top``, POSIX) that differ between ``commit`` and the
    working tree: changed, added or deleted since, plus untracked files git does not ignore."""
    diff = _git(top, "diff", "--name-only", "--no-renames", "-z", commit, "--")
    untracked = _git(top, "ls-files", "-z", "--others", "--exclude-standard")
    names = (diff + untracked).split(b"\0")
    return {os.fsdecode(n) for n in names if n}


def _without_escaping_links(data: bytes) -> bytes:
    """Return the archive without its symlinks that lead out of the tree (absolute, or climbing
    above the top). The working tree's build never follows such a link (flatten/gate.py: a link
    out of the root is not read, a file beside a module linking out is not copied), so the tree
    at REF without it builds the same; extraction would refuse the whole archive for one."""
    import io
    import posixpath
    import tarfile

    out = io.BytesIO()
    try:
        src = tarfile.open(fileobj=io.BytesIO(data), mode="r:")  # noqa: SIM115 - closed by the with below
    except tarfile.ReadError:  # a commit with no files: git writes only a header, tarfile reads none
        with tarfile.open(fileobj=out, mode="w:"):
            pass
        return out.getvalue()
    with src, tarfile.open(fileobj=out, mode="w:") as dst:
        for member in src:
            if member.issym():
                target = posixpath.normpath(posixpath.join(posixpath.dirname(member.name), member.linkname))
                if posixpath.isabs(member.linkname) or target == ".." or target.startswith("../"):
                    continue
            dst.addfile(member, src.extractfile(member) if member.isreg() else None)
    return out.getvalue()


def ref_tree(top: Path, commit: str) -> RefTree:
    """Write the tree of ``commit`` into a new private temporary directory and return it."""
    from flatten import gate
    from flatten.sources.archive import extract_archive
    from flatten.sources.env import ExtractLimits
    from flatten.sources.package import FetchError

    holder = Path(tempfile.mkdtemp(prefix="flatten-affected-"))
    try:
        with gate.open_dir(holder) as place:
            place.write(_MARK, b"")
            try:
                done = subprocess.run(
                    ["git", "-C", str(top), "archive", "--format=tar", commit],
                    capture_output=True,
                    env={**os.environ, "LC_ALL": "C"},
                    check=False,
                    timeout=600,
                )
            except (FileNotFoundError, subprocess.TimeoutExpired):
                raise GitError("git archive could not run (is git on PATH?).") from None
            if done.returncode != 0:
                raise GitError(f"git archive failed: {done.stderr.decode('utf-8', 'replace').strip()}")
            place.write("tree.tar", _without_escaping_links(done.stdout), mode=0o600)
            del done
            tree = holder / "tree"
            try:
                extract_archive(
                    Path("tree.tar"),
                    "tar",
                    tree,
                    limits=ExtractLimits(_MAX_BYTES, _MAX_FILES),
                    source_dir=place,
                )
            except FetchError as exc:
                raise GitError(f"the tree at {commit[:12]} could not be extracted: {exc}") from None
            place.unlink("tree.tar")
        return RefTree(commit, tree, holder)
    except BaseException:
        _remove(holder)
        raise
