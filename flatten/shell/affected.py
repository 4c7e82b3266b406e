"""``flatten affected``: which roots a change affects (docs/monorepo.md, "Plan only affected roots").

A root is affected when its canonical output differs between the two sides compared: the working
tree against a git revision (``--since REF``), or against an existing output (``--base-out DIR``).
The run:

1. finds the roots: those given, or every root under the current directory
   (flatten/shell/find_roots.py), on each side; a root on one side only is "added" or "removed";
2. with ``--since``, lists the changed paths (``git diff --name-only REF`` and untracked files) and
   writes the tree at REF into a private temporary directory (flatten/shell/git_ref.py); the
   user's working tree and repository are never written;
3. builds every root of the working tree (forked across CPUs, one memo layer loading each module
   directory once, the disk caches shared with ``flatten build``); each build also gives the
   files the root reads (every configuration file of its local module directories, and every
   file its output copies: templates, ``.tfvars``, files beside a module);
4. a root none of whose directories or read files changed has the same inputs on both sides, so
   the same output: unaffected, without building it at REF. Every other root is built at REF
   too (the cache is content-addressed: an unchanged module is not parsed again) and the two
   outputs compared (flatten/stages/changes.py);
5. a root that fails to build on either side is affected, with that side's diagnostics; with
   ``--offline`` a root whose remote module is not installed on a side is "undecided".

Remote modules resolve the same way on both sides within one run (the same registry answers,
the same download cache), so a changed constraint affects a root exactly when it selects another
package with other contents. With ``--base-out`` the old side is the committed output, whose
vendored packages are those of the build that wrote it: a registry answer that now selects
another version shows as a change.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from flatten import gate
from flatten.lang.diagnostics import Code, Diagnostics, TextStyle
from flatten.lang.options import Options
from flatten.stages.changes import (
    Cause,
    Snapshot,
    Verdict,
    compare,
    package_changes,
)
from flatten.stages.output import MANIFEST_NAME

if TYPE_CHECKING:
    from flatten.shell.shared_memo import SharedMemo
    from flatten.sources.env import SourceEnv
    from flatten.stages.graph import ModuleGraph
    from flatten.stages.layout import OutputTree

__all__ = ["AffectedRequest", "UsageError", "run_affected"]

INTERNAL_ERROR = 3
_OVERRIDE_NAMES = ("override.tf", "override.tf.json", "override.tofu", "override.tofu.json")


@dataclass(frozen=True, slots=True)
class AffectedRequest:
    """The command line of ``flatten affected``, parsed (flatten/cli.py)."""

    roots: tuple[Path, ...]  # none: every root under the current directory
    options: Options
    since: str | None = None
    base_out: Path | None = None
    report_format: str = "text"
    verbose: bool = False
    style: TextStyle = field(default_factory=lambda: TextStyle(color=False, width=80))
    environ: tuple[tuple[str, str], ...] = ()


class UsageError(Exception):
    """A command line that cannot run (exit 2): the CLI prints it as its other usage errors."""


@dataclass(frozen=True, slots=True)
class _Side:
    """One root built on one side: whether it built, its diagnostics, output and what it reads."""

    built: bool
    diags: Diagnostics = field(default_factory=Diagnostics)
    snapshot: Snapshot | None = None
    reads: tuple[str, ...] = ()  # relative to the repository top (or the base directory)
    dirs: tuple[tuple[str, str], ...] = ()  # (directory, module address) of each local module
    touched: tuple[str, ...] = ()  # the changed paths among what it reads
    undecided: bool = False
    root_place: str = ""


def run_affected(request: AffectedRequest) -> int:
    """Run ``flatten affected`` (see the module docstring); print the answer; return the exit code.
    A command line that cannot run raises :class:`UsageError`."""
    from flatten.shell.git_ref import GitError

    try:
        verdicts, label = _run(request)
    except GitError as exc:
        from flatten.lang.printable import printable

        sys.stderr.write(printable(f"Error: {exc}", lines=True) + "\n")
        return 2
    from flatten.reports.affected import render

    text, summary = render(request.report_format, verdicts, verbose=request.verbose, since=label)
    sys.stdout.write(text)
    if summary:
        from flatten.lang.diagnostics import render_text

        style = request.style
        for verdict in verdicts:
            if verdict.diagnostics:
                sys.stderr.write(render_text(verdict.diagnostics, label=verdict.root, style=style))
        sys.stderr.write(summary)
    return 0


def _run(request: AffectedRequest) -> tuple[list[Verdict], str]:
    from flatten.shell.git_ref import changed_paths, ref_tree, repository_top, resolve_ref
    from flatten.shell.memo import DiskMemo
    from flatten.shell.shared_memo import SharedMemo

    if (request.since is None) == (request.base_out is None) and request.report_format != "atlantis":
        raise UsageError("give one of --since REF (a git revision) or --base-out DIR (an existing output).")
    if request.since is not None and request.base_out is not None:
        raise UsageError("--since and --base-out cannot be used together: choose one.")
    environ = dict(request.environ)
    cwd = Path.cwd().resolve()
    memo = SharedMemo(DiskMemo())
    options = request.options
    if request.since is None:
        top = cwd
        if request.base_out is None:  # atlantis without a comparison: every root, and what it reads
            labels, work = _roots(request.roots, cwd, top, options, memo)
            present = [(lab, p) for lab, p in zip(labels, work, strict=True) if p is not None]
            sides = _build_all([p for _, p in present], top, None, options, environ, memo)
            return [_listed(lab, s) for (lab, _), s in zip(present, sides, strict=True)], ""
        return _against_output(request, cwd, memo, environ), str(request.base_out)
    top = repository_top(cwd)
    commit = resolve_ref(top, request.since)
    changed = changed_paths(top, commit)
    tree = ref_tree(top, commit)
    try:
        ref_cwd = tree.top / cwd.relative_to(top)
        labels, work = _roots(request.roots, cwd, top, options, memo)
        suffixes = options.dialect.values.config_suffixes
        if request.roots or any(p.endswith(suffixes) for p in changed):
            ref_labels, ref = _roots(request.roots, ref_cwd, tree.top, options, memo)
        else:
            # No configuration file changed: the same directories hold configuration and make
            # the same calls at REF, so the same roots (found again only when one did).
            ref_labels, ref = (
                labels,
                [ref_cwd / label if p is not None else None for label, p in zip(labels, work, strict=True)],
            )
        order = sorted(set(labels) | set(ref_labels)) if not request.roots else _union(labels, ref_labels)
        at_work = dict(zip(labels, work, strict=True))
        at_ref = dict(zip(ref_labels, ref, strict=True))
        work_labels = [lab for lab in order if at_work.get(lab) is not None]
        work_sides = dict(
            zip(
                work_labels,
                _build_all([at_work[x] for x in work_labels], top, changed, options, environ, memo),  # type: ignore[misc]
                strict=True,
            )
        )
        needed = [
            lab
            for lab in order
            if at_ref.get(lab) is not None
            and lab in work_sides
            and work_sides[lab].built
            and work_sides[lab].touched
        ]
        ref_sides = dict(
            zip(
                needed,
                _build_all(
                    [at_ref[x] for x in needed],  # type: ignore[misc]
                    tree.top,
                    None,
                    options,
                    environ,
                    memo,
                    # What terraform init installed in the working tree (.terraform, which git
                    # ignores) is what the build at REF may use too.
                    installed_from=[at_work[x] for x in needed],  # type: ignore[misc]
                ),
                strict=True,
            )
        )
        verdicts = []
        for lab in order:
            w, r = at_work.get(lab), at_ref.get(lab)
            if w is None:
                verdicts.append(
                    Verdict(lab, "removed", f"not a root in the working tree (a root at {request.since})")
                )
            elif r is None:
                verdicts.append(_added(lab, work_sides[lab], request.since))
            else:
                verdicts.append(_judge(lab, work_sides[lab], ref_sides.get(lab), request.since))
        return verdicts, request.since
    finally:
        tree.remove()


def _union(first: list[str], second: list[str]) -> list[str]:
    return list(dict.fromkeys([*first, *second]))


def _roots(
    given: Sequence[Path], cwd: Path, top: Path, options: Options, memo: SharedMemo
) -> tuple[list[str], list[Path | None]]:
    """Return each root's label (its path from the current directory, POSIX) and its directory
    under ``cwd`` (None where it is no directory on this side)."""
    from flatten.shell.find_roots import find_roots

    if given:
        labels = [Path(os.path.normpath(p)).as_posix() for p in given]
        dirs: list[Path | None] = []
        for label in labels:
            path = cwd / label
            dirs.append(path if path.is_dir() and _inside(path, top) else None)
        return labels, dirs
    found = find_roots(cwd, options=options, memo=memo)
    return [Path(os.path.relpath(p, cwd)).as_posix() for p in found], list(found)


def _inside(path: Path, top: Path) -> bool:
    try:
        path.resolve().relative_to(top.resolve())
    except (OSError, ValueError, RuntimeError):
        return False
    return True


def _build_all(
    roots: Sequence[Path],
    top: Path,
    changed: set[str] | None,
    options: Options,
    environ: Mapping[str, str],
    memo: SharedMemo,
    installed_from: Sequence[Path] | None = None,
) -> list[_Side]:
    """Build each root (forked across CPUs); ``changed``: the changed paths, or None to take
    every root's output (no comparison by paths). ``installed_from``: for each root, the directory
    whose ``.terraform/modules`` its remote modules may come from (default: the root's own)."""
    from flatten.shell.fanout import cpus, run_all
    from flatten.shell.prefetch import finish
    from flatten.shell.shared_memo import preload
    from flatten.sources.env import SourceEnv

    if not roots:
        return []
    env = SourceEnv.from_environ(environ, progress=False)
    preload([r.absolute() for r in roots], options=options, memo=memo)
    progress = _Progress(len(roots)) if sys.stderr.isatty() else None

    def job(i: int) -> _Side:
        installed = installed_from[i] if installed_from is not None else roots[i]
        return _build_one(roots[i], top, changed, options, env, memo, installed)

    results = run_all(
        len(roots),
        job,
        workers=cpus(),
        done=progress.done if progress is not None else None,
        before_fork=finish,
    )
    if progress is not None:
        progress.clear()
    crashed = Diagnostics()
    from flatten.lang.diagnostics import Diagnostic

    crashed.append(Diagnostic.error("Internal error", "Its build process ended without a result."))
    return [r if r is not None else _Side(False, crashed) for r in results]


def _build_one(
    root: Path,
    top: Path,
    changed: set[str] | None,
    options: Options,
    env: SourceEnv,
    memo: SharedMemo,
    installed: Path,
) -> _Side:
    from flatten.lang.diagnostics import Diagnostic
    from flatten.lang.oserror import describe_os_error

    try:
        from flatten.build import build as run_build
        from flatten.shell import cache_auth
        from flatten.sources.fetcher import RemoteFetcher

        fetcher = RemoteFetcher(installed.absolute(), options=options, env=env, cache_auth=cache_auth)
        result, diags = run_build(root.absolute(), options=options, fetcher=fetcher, memo=memo)
        undecided = any(d.extra is not None and d.extra.code is Code.NOT_INSTALLED for d in diags)
        reads, dirs = _reads(result.graph, result.tree, top)
        if diags.has_errors:
            return _Side(False, diags, None, reads, dirs, (), undecided)
        touched = _touched(changed, reads, dirs) if changed is not None else ()
        snapshot = _snapshot(result.tree) if changed is None or touched else None
        return _Side(True, diags, snapshot, reads, dirs, touched, False, result.tree.root)
    except OSError as exc:
        diags = Diagnostics()
        diags.append(Diagnostic.error("Failed to read file", describe_os_error(exc, doing="read")))
        return _Side(False, diags)
    except Exception as exc:
        if os.environ.get("FLATTEN_TRACEBACK"):
            raise
        diags = Diagnostics()
        diags.append(Diagnostic.error("Internal error", f"{type(exc).__name__}: {exc}"))
        return _Side(False, diags)


def _reads(
    graph: ModuleGraph | None, tree: OutputTree, top: Path
) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """Return the files a root reads and its local module directories with their addresses,
    relative to ``top`` (POSIX); anything outside ``top`` (a remote package) is left out."""
    top_text = str(top.resolve())
    files: set[str] = set()
    dirs: list[tuple[str, str]] = []

    def rel(path: Path | str) -> str | None:
        real = os.path.realpath(path)
        if real == top_text:
            return ""
        if real.startswith(top_text + os.sep):
            return real[len(top_text) + 1 :].replace(os.sep, "/")
        return None

    if graph is not None:
        for node in graph.walk():
            if node.directory is None or node.package is not None:
                continue
            where = rel(node.directory)
            if where is None:
                continue
            dirs.append((where, node.address))
            try:
                names = [e.name for e in gate.list_dir(node.directory) if e.kind in ("file", "link")]
            except OSError:
                names = []
            for name in names:
                if name.endswith((".tf", ".tf.json", ".tofu", ".tofu.json")) and not name.startswith("."):
                    files.add(f"{where}/{name}" if where else name)
    for source in tree.copies.values():
        shown = rel(source)
        if shown is not None:
            files.add(shown)
    return tuple(sorted(files)), tuple(dirs)


def _touched(changed: set[str], reads: Sequence[str], dirs: Sequence[tuple[str, str]]) -> tuple[str, ...]:
    """Return the changed paths a root reads: a file it reads, or anything under one of its module
    directories (a file deleted since, or one a module reads through ``path.module``)."""
    mine = set(reads)
    prefixes = tuple(d + "/" if d else "" for d, _ in dirs)
    if "" in prefixes:
        return tuple(sorted(changed))  # the root is the repository's top: everything is below it
    return tuple(sorted(p for p in changed if p in mine or p.startswith(prefixes)))


def _snapshot(tree: OutputTree) -> Snapshot:
    return Snapshot(dict(tree.files), {rel: _digest(path) for rel, path in tree.copies.items()})


def _causes(label: str, side: _Side, paths: Sequence[str]) -> tuple[Cause, ...]:
    """Return, for each changed path, the module call path through which the root reads it."""
    by_address = {address: directory for directory, address in side.dirs}
    causes = []
    for path in paths:
        best = ("", "")
        for directory, address in side.dirs:
            inside = path.startswith(directory + "/") or not directory
            # The deepest directory holding the file; of its calls, the shortest path.
            deeper = len(directory) > len(best[0]) or (
                len(directory) == len(best[0]) and len(address) < len(best[1])
            )
            if inside and (not best[1] or deeper):
                best = (directory, address)
        chain = [label]
        if best[1]:
            parts = best[1].split(".")
            for i in range(2, len(parts) + 1, 2):
                address = ".".join(parts[:i])
                chain.append(f"{address} ({by_address.get(address, '?')})")
        causes.append(Cause(path, tuple(chain)))
    return tuple(causes)


def _added(label: str, side: _Side, since: str) -> Verdict:
    if not side.built:
        return _failed(label, side, "working tree", f"a new root since {since}, and it fails to build")
    return Verdict(label, "added", f"a new root since {since}", reads=_relative(side, label))


def _failed(label: str, side: _Side, where: str, reason: str | None = None) -> Verdict:
    if side.undecided:
        return Verdict(
            label,
            "undecided",
            f"a remote module it calls is not installed ({where}); --offline uses only what "
            "terraform init installed: run terraform init, or drop --offline",
            failed=where,
            diagnostics=side.diags,
        )
    return Verdict(
        label,
        "affected",
        reason or f"it fails to build in the {where}: plan it to see, or fix it",
        failed=where,
        diagnostics=side.diags,
        reads=_relative(side, label),
    )


def _judge(label: str, work: _Side, ref: _Side | None, since: str) -> Verdict:
    if not work.built:
        return _failed(label, work, "working tree")
    if ref is None:
        return Verdict(label, "unaffected", "no file it reads changed", reads=_relative(work, label))
    if not ref.built:
        return _failed(label, ref, f"tree at {since}", f"it fails to build at {since}")
    assert ref.snapshot is not None and work.snapshot is not None
    change = compare(ref.snapshot, work.snapshot)
    packages = package_changes(
        ref.snapshot.generated.get(MANIFEST_NAME), work.snapshot.generated.get(MANIFEST_NAME)
    )
    causes = _causes(label, work, work.touched)
    if change.changed:
        return Verdict(
            label, "affected", "its output changed", causes, change, packages, reads=_relative(work, label)
        )
    return Verdict(
        label,
        "unaffected",
        _unchanged_reason(work.touched, packages),
        causes,
        change,
        packages,
        reads=_relative(work, label),
    )


def _unchanged_reason(paths: Sequence[str], packages: Sequence[str]) -> str:
    """Why a root whose read files changed has the same output, in a few words."""
    names = [p.rsplit("/", 1)[-1] for p in paths]
    if names and all(n in _OVERRIDE_NAMES or n.rsplit(".", 2)[0].endswith("_override") for n in names):
        return "override leaves the value as it was"
    if packages:
        return "its remote modules resolve to packages with the same contents"
    if names and all(n.endswith((".tf", ".tf.json", ".tofu", ".tofu.json")) for n in names):
        return "comment and formatting only"
    return "the files it reads changed, but not what Terraform loads from them"


def _relative(side: _Side, label: str) -> tuple[str, ...]:
    """The files a root reads, relative to the root's directory (atlantis' ``when_modified``),
    and a ``*.tf``/``*.tf.json`` pattern for each of its module directories: a configuration file
    added there is read by the next build."""
    base = next((d for d, address in side.dirs if not address), None)
    if base is None:
        return ()

    def rel(path: str) -> str:
        return os.path.relpath(path or ".", base or ".").replace(os.sep, "/")

    patterns = {
        f"{rel(d)}/*{suffix}".removeprefix("./") for d, _ in side.dirs for suffix in (".tf", ".tf.json")
    }
    return tuple(sorted({*(rel(f) for f in side.reads), *patterns}))


def _listed(label: str, side: _Side) -> Verdict:
    if not side.built:
        return _failed(label, side, "working tree")
    return Verdict(label, "unaffected", "", reads=_relative(side, label))


def _against_output(
    request: AffectedRequest, cwd: Path, memo: SharedMemo, environ: Mapping[str, str]
) -> list[Verdict]:
    """``--base-out DIR``: each root against the output a build of the same roots wrote into DIR
    (the root itself with one ROOT, else DIR/<its path relative to the roots' common parent>)."""

    assert request.base_out is not None
    base = request.base_out
    if not base.is_dir():
        raise UsageError(f"--base-out {base} is not a directory.")
    labels, work = _roots(request.roots, cwd, cwd, request.options, memo)
    present = [(lab, p) for lab, p in zip(labels, work, strict=True) if p is not None]
    if not present:
        raise UsageError("no root to compare: give ROOT, or run it where roots are.")
    resolved = [p.resolve() for _, p in present]
    common = Path(os.path.commonpath([str(r) for r in resolved])) if len(resolved) > 1 else resolved[0]
    sides = _build_all([p for _, p in present], cwd, None, request.options, environ, memo)
    verdicts = []
    seen: set[Path] = set()
    for (label, _), real, side in zip(present, resolved, sides, strict=True):
        out = base / real.relative_to(common) if len(resolved) > 1 else base
        seen.add(out.resolve())
        manifest = out / MANIFEST_NAME
        if not manifest.is_file():
            verdicts.append(
                _added(label, side, str(base)) if side.built else _failed(label, side, "working tree")
            )
            continue
        if not side.built:
            verdicts.append(_failed(label, side, "working tree"))
            continue
        assert side.snapshot is not None
        snap = side.snapshot
        old_snap = _output_snapshot(out, side.root_place, snap.paths())
        change = compare(old_snap, snap)
        packages = package_changes(old_snap.generated.get(MANIFEST_NAME), snap.generated.get(MANIFEST_NAME))
        if change.changed:
            verdicts.append(
                Verdict(label, "affected", f"its output differs from {base}", (), change, packages)
            )
        else:
            verdicts.append(Verdict(label, "unaffected", f"its output is the one in {base}"))
    pending = [base]
    while pending:  # outputs in DIR whose root is gone: a manifest in a directory no root owns
        here = pending.pop()
        if here.resolve() in seen:
            continue
        try:
            entries = gate.list_dir(here)
        except OSError:
            continue
        if any(e.name == MANIFEST_NAME and e.kind == "file" for e in entries):
            rel = here.relative_to(base).as_posix()
            verdicts.append(Verdict(rel, "removed", f"an output in {base} whose root is not among the roots"))
            continue
        pending.extend(
            here / e.name for e in reversed(entries) if e.kind == "dir" and not e.name.startswith(".")
        )
    return verdicts


def _output_snapshot(out: Path, root_place: str, written: set[str]) -> Snapshot:
    """Return an existing output directory as a :class:`Snapshot`: its JSON files' bytes, the
    others' digests; what Terraform keeps in the root module's directory (``.terraform``, state,
    lock files, saved plans: stages/output.py ``terraform_entries``) left out, as ``--check``
    leaves it out."""
    from flatten.stages.output import terraform_entries

    generated: dict[str, bytes] = {}
    copied: dict[str, str] = {}
    root_dir = os.path.normpath(out / root_place)
    pending = [(out, "")]
    while pending:
        here, prefix = pending.pop()
        try:
            entries = gate.list_dir(here)
        except OSError:
            continue
        skipped: set[str] = set()
        if os.path.normpath(here) == root_dir:
            mine = {
                rel[len(prefix) :]
                for rel in written
                if rel.startswith(prefix) and "/" not in rel[len(prefix) :]
            }
            skipped = set(terraform_entries(here, mine))
        for entry in entries:
            if entry.name in skipped:
                continue
            rel = prefix + entry.name
            if entry.kind == "dir":
                pending.append((here / entry.name, rel + "/"))
            elif entry.name.endswith(".json"):
                generated[rel] = _read(here / entry.name)
            elif entry.kind in ("file", "link"):
                copied[rel] = _digest(here / entry.name)
    return Snapshot(generated, copied)


def _read(path: Path) -> bytes:
    """An output file's bytes (a symlink in OUT is not flatten's and reads as unreadable)."""
    try:
        return gate.read_bytes(path, follow=False)
    except OSError:
        return b""


#: No file over the gate's copy budget is copied into an output (stages/layout.py), so a larger one
#: in the base output is not flatten's: it compares as changed, refused by its size unread (a 3 GiB
#: sparse file there was hashed for 55 s; found by the canary fuzz kind, issue 38).
_COPY_LIMIT = gate.COPY_LIMIT


def _digest(path: Path) -> str:
    """A file's SHA-256, streamed through the gate; an unreadable one compares as changed."""
    digest = hashlib.sha256()
    try:
        with gate.open_read(path, limit=_COPY_LIMIT) as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
    except OSError:
        return "unreadable"
    return digest.hexdigest()


class _Progress:
    """``[12/100] roots built`` on one terminal line while the roots build."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.count = 0

    def done(self, index: int) -> None:
        self.count += 1
        sys.stderr.write(f"\r\033[K[{self.count}/{self.total}] roots built")
        sys.stderr.flush()

    def clear(self) -> None:
        sys.stderr.write("\r\033[K")
        sys.stderr.flush()
