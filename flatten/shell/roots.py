"""Many roots in one run: ``flatten build ROOT... --out DIR`` (docs/monorepo.md).

Each root is built as a single ``flatten build ROOT --out DIR/<rel>`` would build it, where
``rel`` is the root's path relative to the roots' common parent, and with the same output bytes.
The run:

1. checks the command line as a whole (usage errors, exit 2, before anything is read): every
   ROOT a directory, none given twice (after symlinks), none inside another, no two outputs the
   same on a case-insensitive disk; every output outside every root, the cache and each other;
2. loads every root and the local module directories they call once, through one in-memory memo
   layer over the disk caches (flatten/shell/shared_memo.py), and refuses an output that would
   replace one of those directories;
3. builds the roots in forked processes, one per CPU (flatten/shell/fanout.py), each inheriting
   the loaded modules; each root's output is swapped in atomically, as a single build does;
4. prints, in the order the roots were given (never completion order): each root's diagnostics
   labelled with it, then a summary. ``--format json`` prints a JSON array of one object per
   root (``{"root": ROOT, ...}`` + ``terraform validate -json``'s object), ``sarif`` one run per
   root, ``junit`` one test case per root.

One root's errors do not stop the others. The exit code is the worst root's: 0, 1 (errors, or
stale with ``--check``), 2 (its output refused), 3 (a bug). Build records (replay,
flatten/shell/replay.py) are neither used nor written for such a run.
"""

from __future__ import annotations

import bisect
import os
import sys
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from flatten import gate
from flatten.cli import (
    BuildRequest,
    _check_out,
    _fetcher,
    _out_modules_problem,
    _real,
    _render_many,
    _report_format,
    _root_dir,
    _source_env,
    _usage_error,
    check_command,
    exit_code,
    output_error_diagnostic,
    prune_cache,
)
from flatten.lang.diagnostics import Diagnostics
from flatten.lang.oserror import describe_os_error
from flatten.lang.printable import printable
from flatten.reports import ReportFormat

if TYPE_CHECKING:
    from flatten.shell.shared_memo import SharedMemo
    from flatten.sources.env import SourceEnv

__all__ = ["RootOutcome", "place", "run_roots"]

INTERNAL_ERROR = 3


@dataclass(frozen=True, slots=True)
class RootOutcome:
    """What building one root gave: its exit code, diagnostics and the lines to print about it."""

    code: int
    diags: Diagnostics = field(default_factory=Diagnostics)
    error: str | None = None  # its output refused (code 2), or a bug (code 3)
    wrote: str | None = None  # "wrote 3 files to DIR/prod"
    diff: str = ""  # --check --diff: the stale files' unified diff


def place(roots: list[Path], resolved: list[Path]) -> list[str]:
    """Return each root's output path relative to ``--out`` (its path relative to the roots'
    common parent), or raise a usage error when two roots are the same, one is inside another,
    or two outputs differ only in case."""
    by_path: dict[Path, Path] = {}
    for root, real in zip(roots, resolved, strict=True):
        if real in by_path:
            raise _usage_error(
                f"ROOT {root} is given twice (the same directory as {by_path[real]}); "
                "each root is built once: list it once."
            )
        by_path[real] = root
    for root, real in zip(roots, resolved, strict=True):
        for other_real in real.parents:  # each root's ancestors, not every pair of roots
            other = by_path.get(other_real)
            if other is not None:
                raise _usage_error(
                    f"ROOT {root} is inside ROOT {other}; the output of {other} replaces its directory "
                    "whole, so the two outputs cannot both be kept. Build them in separate runs."
                )
    common = Path(os.path.commonpath([str(r) for r in resolved]))
    rels = [real.relative_to(common).as_posix() for real in resolved]
    folded: dict[str, str] = {}
    for rel in rels:
        if rel.casefold() in folded:
            raise _usage_error(
                f"the outputs of {folded[rel.casefold()]} and {rel} differ only in letter case, and "
                "would be the same directory on a case-insensitive disk. Build them in separate runs."
            )
        folded[rel.casefold()] = rel
    return rels


def run_roots(request: BuildRequest) -> int:
    """Build every root of ``request`` (see the module docstring); return the exit code."""
    import typer

    try:
        return _run(request)
    except typer.Exit as exc:  # a usage error (already printed)
        return exc.exit_code


def _run(request: BuildRequest) -> int:
    from flatten.shell.fanout import cpus, run_all
    from flatten.shell.memo import DiskMemo
    from flatten.shell.prefetch import finish
    from flatten.shell.shared_memo import SharedMemo, preload

    options, environ = request.options, dict(request.environ)
    if options.inline_only is not None and not options.inline:
        raise _usage_error("--module only applies with --inline.")
    fmt = _report_format(request.report_format, request.diagnostics_json)
    roots = list(request.roots)
    resolved = [_root_dir(r) for r in roots]
    rels = place(roots, resolved)
    outs = [request.out / rel for rel in rels]
    outs_abs = [_real(out, "--out") for out in outs]
    # Download progress lines from several processes at once would garble each other: the
    # run's own progress line ("[12/100] live/prod") stands for them.
    env = replace(_source_env(environ), progress=False)
    # Each output against every root and every module directory: by walking up from the output
    # and by a sorted prefix search below it, not pair by pair (10,000 pairs for 100 roots took 1.4 s).
    by_root = dict(zip(resolved, roots, strict=True))
    root_names = sorted(map(str, resolved))
    for out, out_abs, root, root_abs in zip(outs, outs_abs, roots, resolved, strict=True):
        _check_out(out, out_abs, root, root_abs, env.cache_dir)  # and the cache, the filesystem root
        other = _overlap(out_abs, by_root.keys(), root_names)
        if other is not None:
            _check_out(out, out_abs, by_root[other], other, env.cache_dir)  # raises its usage error
    memo = SharedMemo(DiskMemo())
    # Every root and local module directory loaded once, here, before the builds fork.
    directories = preload(resolved, options=options, memo=memo)
    directory_names = sorted(map(str, directories))
    for out, out_abs in zip(outs, outs_abs, strict=True):
        directory = _overlap(out_abs, directories, directory_names)
        if directory is not None:
            raise _usage_error(
                f"--out {out} overlaps the module directory {directory}; writing the output would "
                "replace or write into your sources. Choose a --out outside every module directory."
            )
    labels = [r.as_posix() for r in roots]

    def job(i: int) -> RootOutcome:
        return _build_one(request, resolved[i], outs[i], outs_abs[i], env, memo)

    progress = _Progress(labels) if sys.stderr.isatty() else None
    results = run_all(
        len(roots),
        job,
        workers=cpus(),
        done=progress.done if progress is not None else None,
        before_fork=finish,  # the caches' writer threads: fork only from a process without them
    )
    if progress is not None:
        progress.clear()
    outcomes = [
        r if r is not None else RootOutcome(INTERNAL_ERROR, error="its build process ended without a result")
        for r in results
    ]
    _report(fmt, outcomes, labels, resolved, environ, check=request.check, no_color=request.no_color)
    if not request.check:
        prune_cache(env.cache_dir)
    return max(o.code for o in outcomes)


def _build_one(
    request: BuildRequest, root_abs: Path, out: Path, out_abs: Path, env: SourceEnv, memo: SharedMemo
) -> RootOutcome:
    """Build one root into ``out`` (as a single-root build does, printing nothing)."""
    from flatten.build import build as run_build
    from flatten.shell.faults import fault_hook
    from flatten.stages.emit import OutputError, write_tree
    from flatten.stages.stale import (
        Staleness,
        foreign_diagnostics,
        foreign_files,
        stale_diagnostics,
        stale_files,
        tree_stale_files,
        unified_diff,
    )

    options = request.options
    try:
        fetcher = _fetcher(root_abs, options=options, out=out_abs, env=env)
        result, diags = run_build(root_abs, options=options, fetcher=fetcher, memo=memo)
        if diags.has_errors:
            return RootOutcome(1, diags)
        if request.check:
            # Each stale file an error diagnostic, as a single root's check (flatten/stages/stale.py).
            stale = tree_stale_files(out_abs, result.tree, result.graph, root=root_abs)
            diff = ""
            if request.diff:
                diff = unified_diff(
                    stale, out_abs, result.tree.files, copies=result.tree.copies, out_text=str(out)
                )
            diags.extend(
                stale_diagnostics(
                    stale,
                    out=out_abs,
                    root=root_abs,
                    out_text=str(out),
                    command=check_command(request.roots, request.out),
                )
            )
            diags.extend(foreign_diagnostics(stale, out=out_abs, root=root_abs, out_text=str(out)))
            return RootOutcome(exit_code(diags), diags, diff=diff)
        problem = _out_modules_problem(out, out_abs, root_abs, result.graph)
        if problem is not None:
            return RootOutcome(2, diags, error=problem)
        files = result.tree.paths()  # copies are not read into memory
        where = f" (root module in {out / result.tree.root})" if result.tree.root else ""
        # An output that already holds exactly these bytes is left as it is: comparing reads a
        # few files, where swapping a tree in creates, renames and deletes directories (a rebuild
        # of 100 unchanged roots, which keeps no build record to replay, spent most of its time so).
        foreign = foreign_files(out_abs, files)  # the user's, kept: named when Terraform loads one
        diags.extend(foreign_diagnostics(foreign, out=out_abs, root=root_abs, out_text=str(out)))
        stale = stale_files(
            out_abs, result.tree.files, copies=result.tree.copies, root_place=result.tree.root
        )
        if out_abs.is_dir() and not [s for s in stale if s.how is not Staleness.FOREIGN]:
            return RootOutcome(
                exit_code(diags),
                diags,
                wrote=f"{len(files)} files in {out} up to date{where}",
            )
        try:
            write_tree(out_abs, result.tree.files, result.tree.copies, fault=fault_hook())
        except (OutputError, OSError) as exc:
            return RootOutcome(2, diags, error=output_error_diagnostic(exc, out).detail)
        return RootOutcome(exit_code(diags), diags, wrote=f"wrote {len(files)} files to {out}{where}")
    except OSError as exc:  # the machine's (a vanished file, a full disk), in plain words
        if os.environ.get("FLATTEN_TRACEBACK"):
            raise
        return RootOutcome(1, error=describe_os_error(exc, doing="use"))
    except Exception as exc:
        if os.environ.get("FLATTEN_TRACEBACK"):
            import traceback

            traceback.print_exc()
        return RootOutcome(INTERNAL_ERROR, error=f"internal error: {type(exc).__name__}: {exc}")


def _overlap(path: Path, directories: Collection[Path], names: list[str]) -> Path | None:
    """Return one of ``directories`` (resolved; ``names``: their names, sorted) that holds
    ``path``, is it, or lies inside it."""
    for parent in (path, *path.parents):
        if parent in directories:
            return parent
    below = str(path).rstrip(os.sep) + os.sep
    at = bisect.bisect_left(names, below)
    return Path(names[at]) if at < len(names) and names[at].startswith(below) else None


class _Progress:
    """``[12/100] live/prod`` on one terminal line, redrawn as each root finishes."""

    def __init__(self, labels: list[str]) -> None:
        self.labels = labels
        self.count = 0

    def done(self, index: int) -> None:
        self.count += 1
        sys.stderr.write(f"\r\033[K[{self.count}/{len(self.labels)}] {printable(self.labels[index])}")
        sys.stderr.flush()

    def clear(self) -> None:
        sys.stderr.write("\r\033[K")
        sys.stderr.flush()


def _report(
    fmt: ReportFormat,
    outcomes: list[RootOutcome],
    labels: list[str],
    roots: list[Path],
    environ: dict[str, str],
    *,
    check: bool,
    no_color: bool = False,
) -> None:
    """Print every root's outcome, in root order (see the module docstring)."""
    from flatten.cli import text_style
    from flatten.lang.diagnostics import render_text
    from flatten.reports.base import find_base
    from flatten.syntax.snippets import context_finder

    style = text_style(no_color, environ)

    if fmt is not ReportFormat.TEXT:
        sys.stdout.write(
            _render_many(
                fmt, labels, [(r, o.diags) for r, o in zip(roots, outcomes, strict=True)], command="build"
            )
        )
    failed = []
    for label, outcome, root in zip(labels, outcomes, roots, strict=True):
        if outcome.code:
            failed.append(label)
        if outcome.diff:
            sys.stdout.write(outcome.diff)  # --check --diff, in root order (text only: cli.py)
        if fmt is ReportFormat.TEXT and outcome.diags:
            sys.stderr.write(
                render_text(
                    outcome.diags,
                    root=root,
                    label=label,
                    style=style,
                    read=gate.source_reader(root),
                    context=context_finder(),
                )
            )
            if environ.get("GITHUB_ACTIONS") == "true":
                from flatten.reports.github import render_github

                sys.stderr.write(render_github(outcome.diags, find_base(root)))
        if outcome.error is not None:
            sys.stderr.write(printable(f"Error: {label}: {outcome.error}", lines=True) + "\n")
        if outcome.wrote is not None and fmt is ReportFormat.TEXT:
            sys.stderr.write(printable(f"flatten: {label}: {outcome.wrote}") + "\n")
    if failed:
        what = "not up to date" if check else "failed"
        shown = printable(", ".join(failed))  # root paths (lang/printable.py)
        sys.stderr.write(f"flatten: {len(failed)} of {len(labels)} roots {what}: {shown}\n")
    elif fmt is ReportFormat.TEXT:
        done = "up to date" if check else "built"
        sys.stderr.write(f"flatten: all {len(labels)} roots {done}\n")
