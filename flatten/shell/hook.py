"""The pre-commit hooks (``.pre-commit-hooks.yaml``): ``flatten-hook check|build ARGS... FILES...``.

pre-commit runs a hook with the arguments the user configured (``ROOT... --out OUT``, any other
``flatten build`` option) followed by the files the commit stages. A build reads only the files
of the module directories its manifest lists (every file there: configuration, copied files,
``terraform.tfvars``, ``.terraformignore``) and any ``--var-file``; so a commit that stages none
of those, deletes none, and leaves OUT alone cannot make the output stale, and the hook passes at
once without building (a README-only commit). Anything it cannot tell (no manifest, a module
outside the repository, a package downloaded at build time) runs the hook as before.

``check`` then runs ``flatten build --check``. ``build`` runs ``flatten build`` and fails when
the rebuild added a file git does not track yet (pre-commit itself notices only changes to tracked
files: an added output file let the commit through without it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from flatten import gate

__all__ = ["main", "split_arguments", "touched_inputs"]

_MANIFEST = "flatten.manifest.json"
#: build's options that take a value (the rest are flags), as typer declares them in cli.py;
#: tests/project/test_precommit.py checks this against the command itself.
VALUE_OPTIONS = frozenset(
    {
        "--out",
        "-o",
        "--dialect",
        "--format",
        "--module",
        "--exclude",
        "--terraform-version",
        "--checks",
        "--var",
        "--var-file",
    }
)


def split_arguments(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split a hook's command line into ``flatten build``'s arguments and the staged files
    pre-commit appended: a positional argument that is a directory is a ROOT (pre-commit passes
    files only), anything else positional is a staged file."""
    build: list[str] = []
    files: list[str] = []
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        if arg == "--":
            files.extend(rest)
            break
        if arg in VALUE_OPTIONS and rest:
            build += [arg, rest.pop(0)]
        elif arg.startswith("-") or gate.kind_of(arg) == "dir":
            build.append(arg)
        else:
            files.append(arg)
    return build, files


def _option_values(build: Sequence[str], names: Iterable[str]) -> list[str]:
    wanted = frozenset(names)
    found = []
    for i, arg in enumerate(build):
        if arg in wanted and i + 1 < len(build):
            found.append(build[i + 1])
        for name in wanted:
            if name.startswith("--") and arg.startswith(name + "="):
                found.append(arg.split("=", 1)[1])
    return found


def _inputs(build: Sequence[str]) -> list[Path] | None:
    """Return the absolute directories and files a build of ``build`` reads, from the manifests in
    its output; None when they cannot all be known (then the hook runs)."""
    outs = _option_values(build, ("--out", "-o"))
    if len(outs) != 1:
        return None
    out = Path(outs[0]).absolute()
    roots = [Path(a).absolute() for a in _positional(build)] or [Path.cwd()]
    # One root: OUT's manifest; several: one per root, at OUT/<root relative to the common parent>.
    places = (
        [out] if len(roots) == 1 else [out / os.path.relpath(r, os.path.commonpath(roots)) for r in roots]
    )
    found: list[Path] = [Path(v).absolute() for v in _option_values(build, ("--var-file",))]
    for root, place in zip(roots, places, strict=True):
        manifests = [place / _MANIFEST]
        try:
            doc = json.loads(gate.read_bytes(manifests[0], limit=64 << 20))
        except (OSError, ValueError):
            return None
        if not isinstance(doc, dict):
            return None
        # With a module outside the root, the root module sits below OUT (the manifest's "root").
        for entry in doc.get("modules") or ():
            if not isinstance(entry, dict):
                return None
            if "package" in entry:
                continue  # downloaded into the cache: nothing a commit stages
            directory = entry.get("directory")
            if not isinstance(directory, str) or "//" in directory:
                return None
            found.append(Path(os.path.normpath(root / directory)))
    return found


def _positional(build: Sequence[str]) -> list[str]:
    roots = []
    skip = False
    for arg in build:
        if skip:
            skip = False
        elif arg in VALUE_OPTIONS:
            skip = True
        elif not arg.startswith("-"):
            roots.append(arg)
    return roots


def _deleted() -> list[str]:
    """Return the files the commit deletes (pre-commit passes only those it keeps)."""
    try:
        done = subprocess.run(
            ["git", "diff", "--cached", "--name-only", "--no-renames", "--diff-filter=D", "-z"],
            capture_output=True,
            check=False,
        )
    except OSError:
        return []
    if done.returncode != 0:
        return []
    return [name for name in os.fsdecode(done.stdout).split("\0") if name]


def _within(path: Path, directory: Path) -> bool:
    return path == directory or directory in path.parents


def touched_inputs(build: Sequence[str], files: Sequence[str]) -> bool:
    """Whether a commit of ``files`` (relative to the repository's top, where pre-commit runs
    hooks) touches what the build ``build`` reads, or its output, or the hook's configuration."""
    inputs = _inputs(build)
    if inputs is None:
        return True
    outs = [Path(o).absolute() for o in _option_values(build, ("--out", "-o"))]
    for name in files:
        path = Path(os.path.normpath(Path(name).absolute()))
        if name == ".pre-commit-config.yaml":
            return True
        if any(_within(path, place) for place in (*inputs, *outs)):
            return True
    return False


def _untracked(out: str) -> set[str]:
    try:
        done = subprocess.run(
            ["git", "ls-files", "--others", "--exclude-standard", "-z", "--", out],
            capture_output=True,
            check=False,
        )
    except OSError:
        return set()
    return {n for n in os.fsdecode(done.stdout).split("\0") if n} if done.returncode == 0 else set()


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in ("check", "build"):
        sys.stderr.write("usage: flatten-hook check|build ROOT... --out OUT [build options] [FILES...]\n")
        return 2
    mode, rest = args[0], args[1:]
    build, files = split_arguments(rest)
    staged = [*files, *_deleted()]
    if os.environ.get("FLATTEN_HOOK_ALWAYS") != "1" and not touched_inputs(build, staged):
        return 0  # nothing the build reads, nor its output, is in this commit
    command = [sys.executable, "-m", "flatten", "build", *build]
    if mode == "check":
        return subprocess.run([*command, "--check"], check=False).returncode
    outs = _option_values(build, ("--out", "-o"))
    before = _untracked(outs[0]) if len(outs) == 1 else set()
    code = subprocess.run(command, check=False).returncode
    if code != 0 or len(outs) != 1:
        return code
    added = sorted(_untracked(outs[0]) - before)
    if added:
        from flatten.lang.printable import printable

        shown = "\n".join(f"  {printable(name)}" for name in added)
        sys.stderr.write(
            f"flatten-build: the rebuild added {len(added)} file(s) git does not track yet:\n{shown}\n"
            "Add them (git add) and commit again.\n"
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
