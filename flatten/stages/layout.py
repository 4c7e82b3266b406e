"""The output tree: where each module goes, how calls point at it, and which files come along.

Rule for the whole file: the output is a function of the module graph alone, so the same
configuration gives the same tree on every machine. Each distinct module directory (by resolved
path, so a directory called from several places or through a symlink is written once) becomes
``<path>/main.tf.json`` at its own place relative to the root, so relative paths between the
configuration's directories keep working and ``path.module`` keeps the value Terraform gives it
(the module's directory, symlinks resolved, relative to the root). When every local module sits
inside the root, the root is written to ``main.tf.json`` at the top of the output. When some local
module sits outside it (``../shared``), the output mirrors the nearest directory holding the root
and all of them, and the root goes to its own place in it (``live/main.tf.json``), recorded as
``root`` in the manifest: that is where ``terraform init`` and ``plan`` must run. Every module
call's ``source`` is rewritten to the relative path of its vendored directory, and ``version`` is
dropped once a registry source becomes local. Non-configuration files beside a module (templates,
scripts, policies, nested folders read through ``path.module``) are copied so relative paths keep
working.

Modules from remote packages (registry, git, archives; spec §5.7) keep their package's structure:
each package becomes ``modules/_remote/<name>/`` beside the root module (``<name>`` readable, e.g.
``ns-vpc-aws-1.2.0``) and each of its modules that is used goes to the same relative place inside
it, so ``../sibling`` calls inside the package still work. Their ``path.module`` changes from
``.terraform/modules/<key>`` to that directory: ``.terraform`` belongs to ``terraform init``. The
manifest records each remote module's package address, resolved version, commit and content
digest (what ``--locked`` compares against).
"""

from __future__ import annotations

import hashlib
import os
import posixpath
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from flatten import gate
from flatten.lang.diagnostics import Diagnostic, Diagnostics
from flatten.lang.model import Attribute, Block, Body, Expr, JsonValue, Module, Range
from flatten.lang.options import Dialect, Options
from flatten.lang.oserror import Refused, describe_os_error
from flatten.lang.printable import printable
from flatten.lang.redact import redact_url
from flatten.lang.release import __version__
from flatten.lang.secrets import SCAN_LIMIT, secret_kind
from flatten.lang.terraform_releases import release_text
from flatten.lang.workdir import LOCK_FILE, TERRAFORM_ENTRIES
from flatten.stages.emit import MANIFEST_NAME, dumps, module_bytes
from flatten.stages.files import is_ignored_name, split_extension
from flatten.stages.guards import guard_files, is_foreign
from flatten.stages.load import display_path
from flatten.stages.memo import NO_MEMO, Memo
from flatten.stages.pathreads import path_reads
from flatten.stages.testfiles import TEST_DIRECTORY, TEST_SUFFIXES, Target, rewrite_test_file

if TYPE_CHECKING:
    # Types only: an incremental rebuild (flatten/shell/incremental.py) emits a module with
    # ``rewrite_calls`` and ``render`` without importing the graph stage; only a tree with
    # ignore rules imports them (``_parse_rules``).
    from flatten.lang.ignore import IgnoreRules
    from flatten.stages.graph import ModuleGraph, ModuleNode

__all__ = [
    "LeftOut",
    "OutputTree",
    "UserRules",
    "copy_boundary",
    "layout_tree",
    "module_copies",
    "named_files",
    "output_digest",
    "relative_source",
    "render",
    "rewrite_calls",
]


def _resolve(path: Path) -> Path:
    return path.resolve()


class _RealPaths:
    """Resolved paths, each resolved once per layout: a module directory is asked for about seven
    times, and each resolve costs a stat per path component (0.03 s for 200 modules). The module
    directories the graph already resolved (``ModuleNode.real_directory``) are not resolved again."""

    def __init__(self, graph: ModuleGraph | None = None) -> None:
        self._seen: dict[Path, Path] = {}
        for node in graph.walk() if graph is not None else ():
            if node.directory is not None and node.real_directory is not None:
                self._seen[node.directory] = node.real_directory

    def __call__(self, path: Path) -> Path:
        found = self._seen.get(path)
        if found is None:
            found = self._seen[path] = path.resolve()
        return found


# Files not copied unless the configuration names them (stages/pathreads.py): engine state and
# plans (hidden files and editors' leftovers are skipped too). docs/files.md lists them.
_SKIP_SUFFIXES = (".tfstate", ".tfstate.backup", ".tfplan")
_ROOT_HIDDEN_KEPT = frozenset({".terraform.lock.hcl"})
# Terraform's own state in the root's working directory: a snapshot of that name the root reads
# through path.module would be taken for the output's state, so it is named in a warning instead.
_ROOT_STATE = frozenset({"terraform.tfstate", "terraform.tfstate.backup"})
# A copied file is hashed in chunks and copied under the gate's copy budget (gate.COPY_LIMIT,
# 1 GiB): a larger one, a device or a FIFO put in place of a file is refused before it is read,
# with an error naming it (issue 38, item 9; docs/reliability.md).
_COPY_LIMIT = gate.COPY_LIMIT
# Directories a test's helper module or mock data never comes from: git's (its config may hold a
# checkout's credentials) and Terraform's data directory (issue 38).
_NEVER_HELPERS = frozenset({".git", ".terraform"})
# Terraform's entries in the output's root module directory (flatten/lang/workdir.py) that no file
# of the build may be written into, whatever the configuration or a test names: the output's own
# would be replaced by the source's. The lock file is the exception: the source's wins (docs/ci.md).
_TERRAFORMS = TERRAFORM_ENTRIES - {LOCK_FILE}

#: Decides whether a path below a module directory is left out (``.terraformignore``,
#: ``--exclude``): ``(relative path, is a directory) -> left out``.
LeftOut = Callable[[str, bool], bool]


@dataclass(frozen=True, slots=True)
class OutputTree:
    """The files of a build: generated bytes and files copied from the sources, by relative path."""

    files: Mapping[str, bytes] = field(default_factory=dict)
    copies: Mapping[str, Path] = field(default_factory=dict)
    diagnostics: Diagnostics = field(default_factory=Diagnostics)  # warnings about files left out
    # Where the root module is, relative to the output: "" (the top) unless a local module sits
    # outside the root; Terraform must run there.
    root: str = ""

    def paths(self) -> list[str]:
        return sorted({*self.files, *self.copies})

    def content(self, rel: str) -> bytes:
        if rel in self.files:
            return self.files[rel]
        return gate.read_bytes(self.copies[rel], limit=_COPY_LIMIT)


def _climb(rel: str) -> int:
    """Return how many directories ``rel`` (normalised, POSIX) climbs above its start."""
    parts = rel.split("/")
    return next((i for i, p in enumerate(parts) if p != ".."), len(parts))


def _root_place(
    graph: ModuleGraph, root: Path, real_path: Callable[[Path], Path], climb: int = 0
) -> tuple[str, Path]:
    """Return where the root module goes in the output ("" for the top) and the directory the
    output mirrors.

    Terraform's ``path.module`` is the module's directory relative to the root (``../shared``), so
    a local module outside the root keeps that value, and the files it reads through it, only when
    the output keeps the two directories' relative places: the output then mirrors their nearest
    common directory. Remote packages are not counted; they are vendored beside the root.
    ``climb``: how far above the root files placed relative to it reach (inlined modules' files).
    """
    real_root = real_path(root)
    outside = [
        real
        for node in graph.walk()
        if node.directory is not None
        and node.package is None
        and not _within(real := real_path(node.directory), real_root)
    ]
    if climb:
        outside.append(real_root.parents[min(climb, len(real_root.parents)) - 1])
    if not outside:
        return "", real_root
    anchor = Path(os.path.commonpath([real_root, *outside]))
    return Path(os.path.relpath(real_root, anchor)).as_posix(), anchor


def _place(directory: Path, anchor: Path) -> str:
    # Terraform resolves a local module's symlinks (its manifest records the real directory), so
    # the module's place, and its path.module, follow the resolved path.
    rel = os.path.relpath(directory, anchor).replace(os.sep, "/")
    return "/".join(p for p in rel.split("/") if p not in ("", "."))


def _package_slugs(graph: ModuleGraph, base_dir: str, real_path: Callable[[Path], Path]) -> dict[Path, str]:
    """Return ``<base_dir>/modules/_remote/<name>`` for each distinct package root, names made
    unique in walk order."""
    slugs: dict[Path, str] = {}
    taken: set[str] = set()
    for node in graph.walk():
        if node.package is None:
            continue
        real = real_path(node.package.root)
        if real in slugs:
            continue
        base = posixpath.join(base_dir, "modules/_remote", node.package.name)
        candidate, n = base, 2
        while candidate in taken:
            candidate, n = f"{base}-{n}", n + 1
        slugs[real] = candidate
        taken.add(candidate)
    return slugs


def _variant_key(real: Path, n: int) -> Path:
    # A stand-in key for the n-th distinct copy of one directory (inline mode); never read.
    return real.with_name(f"{real.name}__{n}")


def _assign_outputs(
    graph: ModuleGraph,
    root: Path,
    real_path: Callable[[Path], Path],
    climb: int = 0,
    variants: Mapping[str, int] | None = None,
) -> tuple[dict[Path, str], str]:
    """Return the output directory for every distinct module directory, and the root's ("" for
    the top of the output).

    A node in ``variants`` (inline mode: a directory inlining changed differently between its
    calls) is written as copy ``n`` of its directory, ``<dir>__<n>``.
    """
    root_place, anchor = _root_place(graph, root, real_path, climb)
    outputs: dict[Path, str] = {real_path(root): root_place}
    packages = _package_slugs(graph, root_place, real_path)
    taken = {root_place, *packages.values()}
    for node in graph.walk():
        if node.directory is None:
            continue
        real = real_path(node.directory)
        if real in outputs:
            continue
        if node.package is not None:
            base = packages[real_path(node.package.root)]
            outputs[real] = posixpath.join(base, node.package.subdir) if node.package.subdir else base
            continue
        slug = _place(real, anchor)
        candidate, n = slug, 2
        while candidate in taken or any(candidate.startswith(p + "/") for p in packages.values()):
            candidate, n = f"{slug}-{n}", n + 1
        outputs[real] = candidate
        taken.add(candidate)
    for node in graph.walk():
        copy = (variants or {}).get(node.address)
        if node.directory is None or copy is None:
            continue
        real = real_path(node.directory)
        key = _variant_key(real, copy)
        if key not in outputs:
            candidate = f"{outputs[real]}__{copy}"
            while candidate in taken:
                candidate += "_"
            outputs[key] = candidate
            taken.add(candidate)
    return outputs, root_place


def _out_key(node: ModuleNode, real_path: Callable[[Path], Path], variants: Mapping[str, int]) -> Path:
    assert node.directory is not None
    real = real_path(node.directory)
    n = variants.get(node.address)
    return real if n is None else _variant_key(real, n)


def relative_source(from_dir: str, to_dir: str) -> str:
    rel = posixpath.relpath(to_dir or ".", from_dir or ".")
    if rel == "..":
        return "../"  # Terraform reads a bare ".." as a registry address, not a local path
    return rel if rel.startswith("../") else "./" + rel


def _rewrite_calls(
    node: ModuleNode,
    outputs: Mapping[Path, str],
    here: str,
    graph: ModuleGraph,
    real_path: Callable[[Path], Path],
    variants: Mapping[str, int],
) -> Module:
    """Return the node's module with each call's source pointing at its vendored directory."""
    from flatten.stages.inputs import MODULE_META_ARGUMENTS, declared_inputs

    targets: dict[str, str] = {}
    allowed: dict[str, frozenset[str]] = {}
    for child in graph.children(node.address):
        if child.directory is not None:
            targets[child.path[-1]] = relative_source(here, outputs[_out_key(child, real_path, variants)])
        if child.path[-1] in node.base_arguments:
            # An overridden call: Terraform ignores arguments its module does not declare, so the
            # output leaves them out (it would reject them in a call without overrides).
            allowed[child.path[-1]] = declared_inputs(child.module) | MODULE_META_ARGUMENTS
    return rewrite_calls(node.module, targets, allowed)


def rewrite_calls(
    module: Module, targets: Mapping[str, str], allowed: Mapping[str, frozenset[str]]
) -> Module:
    """Return ``module`` as it is emitted: each call in ``targets`` (call name -> relative path of
    its vendored directory) with that ``source`` and no ``version``, and an overridden call in
    ``allowed`` keeping only those arguments. (flatten/shell/incremental.py emits one module so,
    with the targets a previous build's manifest gives.)"""
    blocks: list[Block] = []
    for block in module.blocks:
        name = block.labels[0] if block.type == "module" and block.labels else None
        if name is None or name not in targets:
            blocks.append(block)
            continue
        items: list[Attribute | Block] = []
        for item in block.body.items:
            if isinstance(item, Attribute) and item.name == "version":
                continue  # the source is local now, and a local source takes no version
            if isinstance(item, Attribute) and name in allowed and item.name not in allowed[name]:
                continue
            if isinstance(item, Attribute) and item.name == "source":
                item = replace(item, expr=Expr(targets[name], item.expr.range))
            items.append(item)
        blocks.append(replace(block, body=Body(tuple(items), block.body.range)))
    return replace(module, blocks=tuple(blocks))


def _is_module_dir(directory: Path, dialect: Dialect) -> bool:
    try:
        entries = gate.list_dir(directory)
    except OSError:
        return False
    return any(
        split_extension(e.name, dialect)
        and (e.kind == "file" or (e.kind == "link" and os.path.isfile(directory / e.name)))
        for e in entries
    )


def _within(path: Path, parent: Path) -> bool:
    # Path.relative_to on the strings of two normalised paths: asked for every module and copied
    # file, and a PurePath built per call cost more than the rest of the check.
    inner, outer = str(path), str(parent)
    return inner == outer or inner.startswith(outer if outer.endswith("/") else outer + "/")


def copy_boundary(node: ModuleNode, root: Path, *, real_path: Callable[[Path], Path] = _resolve) -> Path:
    """Return the directory a module's copied files must resolve inside (symlinks included).

    A remote module's package, the root for modules inside it, else the module's own directory:
    a symlink out of that tree would put a file from elsewhere on the machine into the output.
    """
    if node.package is not None:
        return real_path(node.package.root)
    assert node.directory is not None
    directory = real_path(node.directory)
    root = real_path(root)
    return root if _within(directory, root) else directory


def module_copies(
    directory: Path,
    dest: str,
    *,
    dialect: Dialect,
    is_root: bool,
    boundary: Path,
    skipped: list[tuple[str, str]],
    real_path: Callable[[Path], Path] = _resolve,
    boundary_name: str | None = None,
    unreadable: list[tuple[str, str]] | None = None,
    tests: dict[str, Path] | None = None,
    left_out: LeftOut | None = None,
) -> dict[str, Path]:
    """Return the non-configuration files of a module directory to copy, by output path.

    Symlinks are followed only to a target inside ``boundary``; a symlink that escapes it, loops,
    or dangles is left out and named in ``skipped`` as ``(relative path, reason)``. ``real_path``
    resolves ``directory`` and ``boundary`` (a caller laying out many modules passes a memo);
    ``boundary_name`` is how reasons name the boundary (its path by default). With
    ``unreadable``, a file that cannot be opened is left out and named there as ``(relative path,
    reason)`` instead of failing the write later. With ``tests``, test files (stages/testfiles.py)
    go there instead of into the result, to be rewritten. ``left_out`` names the paths the user
    keeps out (flatten/lang/ignore.py); a directory it prunes is not walked.
    """
    out: dict[str, Path] = {}
    boundary = real_path(boundary)
    where = boundary_name or str(boundary)

    def visit(current: Path, rel: str, depth: int, chain: frozenset[Path], current_real: Path) -> None:
        try:
            # Through the gate: a listing that follows no entry (what each one is comes with it).
            entries = sorted(gate.list_dir(current), key=lambda e: e.name)
        except OSError as exc:
            # The module directory itself is reported where it is loaded; a subdirectory that
            # cannot be listed would silently lose its files.
            if rel and unreadable is not None:
                unreadable.append((rel + "/", exc.strerror or str(exc)))
            return
        for entry in entries:
            name = entry.name
            if is_ignored_name(name) and not (is_root and depth == 0 and name in _ROOT_HIDDEN_KEPT):
                continue
            path = current / name
            child_rel = f"{rel}/{name}" if rel else name
            is_link = entry.kind in ("link", "missing")  # missing: vanished, or cannot be looked at
            kind = entry.kind
            real = path
            if is_link:
                try:
                    real = path.resolve(strict=True)
                except (OSError, RuntimeError):
                    skipped.append((child_rel, "it is a symlink that loops or points nowhere"))
                    continue
                kind = gate.kind_of(real)  # resolved: no link left to follow
                if not _within(real, boundary):
                    if kind == "dir" and _is_module_dir(path, dialect):
                        continue  # a module (./linked -> ../shared): vendored on its own when called
                    skipped.append((child_rel, f"it is a symlink to {real}, outside {where}"))
                    continue
            is_dir, is_file = kind == "dir", kind == "file"
            if is_dir:
                # A directory that is no link is where its parent really is: no resolving (which
                # is a stat per path component) for each subdirectory, a module's included.
                real = real.resolve() if is_link else current_real / name
                if left_out is not None and left_out(child_rel, True):
                    continue
                if real in chain:
                    # A link back to a directory on the way down: following it never ends.
                    skipped.append((child_rel, "it is a symlink to a directory above it (a loop)"))
                    continue
                # A subdirectory holding configuration is another module: vendored on its own.
                if depth < 32 and not _is_module_dir(path, dialect):
                    visit(path, child_rel, depth + 1, chain | {real}, real)
                elif depth == 0 and name == TEST_DIRECTORY and tests is not None:
                    # Its test files are this module's whatever else it holds (a .tf debug root
                    # calling "../"): terraform test runs them (stages/testfiles.py).
                    _test_directory(path, child_rel, dest, boundary, left_out, tests, unreadable)
                continue
            if (
                split_extension(name, dialect) is not None
                or name.endswith(_SKIP_SUFFIXES)
                or is_foreign(name, dialect)
            ):
                continue
            if left_out is not None and left_out(child_rel, False):
                continue
            if kind == "other":
                # A FIFO, socket or device where a file would be: never opened (a FIFO blocks its
                # reader for ever, a device may never end), named so the user knows it is missing.
                skipped.append((child_rel, _special_reason(real)))
                continue
            if not is_file:
                continue
            if unreadable is not None:
                problem = _unreadable(path)
                if problem is not None:
                    unreadable.append((child_rel, problem))
                    continue
            into = tests if tests is not None and name.endswith(TEST_SUFFIXES) else out
            into[posixpath.join(dest, child_rel) if dest else child_rel] = path

    real_directory = real_path(directory)
    visit(directory, "", 0, frozenset({real_directory}), real_directory)
    return out


def _test_directory(
    directory: Path,
    rel: str,
    dest: str,
    boundary: Path,
    left_out: LeftOut | None,
    tests: dict[str, Path],
    unreadable: list[tuple[str, str]] | None,
) -> None:
    """Add the test files at the top of a module's test directory that holds configuration files
    too (not walked as part of the module) to ``tests``, by output path under ``dest``."""
    try:
        entries = gate.list_dir(directory)
    except OSError as exc:
        if unreadable is not None:
            unreadable.append((rel + "/", exc.strerror or str(exc)))
        return
    for entry in entries:
        child_rel = f"{rel}/{entry.name}"
        if is_ignored_name(entry.name) or not entry.name.endswith(TEST_SUFFIXES):
            continue
        if left_out is not None and left_out(child_rel, False):
            continue
        path = directory / entry.name
        try:
            if not path.is_file() or not _within(path.resolve(strict=True), boundary):
                continue
        except (OSError, RuntimeError):
            continue
        tests[posixpath.join(dest, child_rel) if dest else child_rel] = path


def _unreadable(path: Path) -> str | None:
    """Return why ``path`` cannot be copied (None when it can); nothing is read.

    Through the gate: opened without blocking (a file swapped for a FIFO meanwhile must not block
    the build), and a regular file over the copy budget is refused by its size, unread.
    """
    try:
        with gate.open_read(path, limit=_COPY_LIMIT):
            pass
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def _special_reason(path: Path) -> str:
    """Why a FIFO, socket or device beside a module is not copied (the gate's own words)."""
    try:
        with gate.open_read(path, limit=_COPY_LIMIT):
            pass
    except OSError as exc:
        return exc.strerror or str(exc)
    return "it is not a regular file"


def output_digest(data: bytes) -> str:
    """Return how the manifest names a module's output file's content."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def render(module: Module, *, provenance: bool) -> bytes:
    """Return a module's output file (``main.tf.json``): its canonical JSON, written block by
    block (``emit.module_bytes``: the bytes of ``dumps(module_json(...))``)."""
    return module_bytes(module, provenance=provenance)


def _file_name(node: ModuleNode, rel: str, root: Path) -> str:
    """Return how a diagnostic names a file beside ``node``'s module: by the package's address
    for a downloaded module (as its configuration files are named), else relative to the root."""
    assert node.directory is not None
    if node.package is not None and not _within(node.directory.resolve(), root.resolve()):
        prefix = redact_url(node.package.address).partition("?")[0]
        return f"{prefix}//{posixpath.join(node.package.subdir, rel)}"
    return display_path(node.directory / rel, root)


def _parse_rules(text: str, exclude: tuple[str, ...] = ()) -> IgnoreRules:
    # Imported by a tree that has rules (a .terraformignore, an --exclude), not by every build.
    from flatten.lang.ignore import IgnoreRules

    return IgnoreRules.parse(text, exclude)


def _read_ignore(directory: Path, problems: list[tuple[Path, OSError]] | None = None) -> str | None:
    """A directory's ``.terraformignore`` through the gate (issue 38, items 6 and 9): a regular
    file of at most ``gate.CONFIG_LIMIT`` bytes whose target, links resolved, is inside
    ``directory`` (a FIFO or ``/dev/zero`` link is refused unread; a link to the runner's files
    is never read). None when there is none or it is refused: go-slug's ``parseIgnoreFile``
    then applies its default rules and says so on stderr (here: ``problems``, a warning)."""
    path = directory / ".terraformignore"
    if gate.kind_of(path) == "missing":
        # Most module directories have none: one lstat, where the read resolves the directory
        # first (8 ms of a 200-module layout, in the build's one process).
        return None
    try:
        return gate.read_bytes(path, inside=(directory,)).decode("utf-8", errors="replace")
    except FileNotFoundError:
        return None
    except OSError as exc:
        if problems is not None:
            problems.append((path, exc))
        return None


class UserRules:
    """What the user keeps out of each module directory: its own ``.terraformignore``, the root's
    (for a module inside the root, matched on the path relative to the root, as Terraform packs
    the root for a remote run) and the ``--exclude`` patterns (relative to each module directory)."""

    def __init__(self, real_root: Path, exclude: tuple[str, ...]) -> None:
        self._root = real_root
        self._exclude = exclude
        self.problems: list[tuple[Path, OSError]] = []  # ignore files refused (once per directory)
        self._seen: set[Path] = set()
        text = _read_ignore(real_root, self.problems)
        self._seen.add(real_root)
        self._root_rules = _parse_rules(text) if text is not None else None

    def at(self, real: Path) -> LeftOut | None:
        text = _read_ignore(real, None if real in self._seen else self.problems)
        self._seen.add(real)
        own = _parse_rules(text or "", self._exclude) if text is not None or self._exclude else None
        outer = self._root_rules if real != self._root and _within(real, self._root) else None
        prefix = os.path.relpath(real, self._root).replace(os.sep, "/") if outer is not None else ""
        if own is None and outer is None:
            return None

        def left_out(rel: str, is_dir: bool) -> bool:
            for rules, path in ((own, rel), (outer, f"{prefix}/{rel}")):
                if rules is not None and (rules.prunes(path) if is_dir else rules.excludes(path)):
                    return True
            return False

        return left_out


def _left_out_path(left_out: LeftOut | None, rel: str) -> bool:
    """Whether the file ``rel`` is kept out, by its own rule or a pruned directory above it."""
    if left_out is None:
        return False
    parts = rel.split("/")
    return any(left_out("/".join(parts[:i]), True) for i in range(1, len(parts))) or left_out(rel, False)


def _whole_directory(directory: Path, dest: str, boundary: Path, left_out: LeftOut | None) -> dict[str, Path]:
    """Every file below ``directory`` a module directory's copy would take, configuration files
    included, by output path under ``dest``: a test's helper module. The rules are a module
    directory's (issue 38): hidden entries (``.git``, ``.terraform``) and editors' leftovers, state
    files and saved plans, what ``.terraformignore`` and ``--exclude`` leave out (``left_out``,
    the rules at ``directory``), and links out of ``boundary`` are not copied."""
    out: dict[str, Path] = {}

    def walk(here: Path, prefix: str) -> None:
        # Through the gate: a listing that follows no entry. A linked directory is not walked
        # (as os.walk does not); a linked file is taken when it leads inside ``boundary``.
        try:
            entries = gate.list_dir(here)
        except OSError:
            return
        for entry in entries:
            name, rel = entry.name, prefix + entry.name
            if is_ignored_name(name):
                continue
            if entry.kind == "dir":
                if not (left_out is not None and left_out(rel, True)):
                    walk(here / name, rel + "/")
                continue
            path = here / name
            if (
                name.endswith(_SKIP_SUFFIXES)
                or (left_out is not None and left_out(rel, False))
                or not path.is_file()  # a FIFO, socket or device is never opened
                or not _within(path.resolve(), boundary)
            ):
                continue
            out[posixpath.join(dest, rel) if dest else rel] = path

    walk(directory, "")
    return out


@dataclass(frozen=True, slots=True)
class _Carried:
    """More output for one module: generated files, copies and warnings."""

    files: Mapping[str, bytes] = field(default_factory=dict)
    copies: Mapping[str, Path] = field(default_factory=dict)
    diagnostics: Diagnostics = field(default_factory=Diagnostics)


def named_files(
    node: ModuleNode,
    here: str,
    root: Path,
    root_place: str,
    boundary: Path,
    carried: Mapping[str, Path],
    left_out: LeftOut | None,
    root_left_out: LeftOut | None,
    options: Options,
) -> _Carried:
    """Copy each file ``node``'s configuration names through ``path.module``/``path.root`` that
    the walk left out as an engine or hidden file (stages/pathreads.py); warn naming one the
    user excluded, or one that would be taken for the output's own state. ``build --inline``
    copies the same files for a module it inlines (flatten/inline/__init__.py)."""
    assert node.directory is not None
    copies: dict[str, Path] = {}
    diags = Diagnostics()
    for base, rel in path_reads(node.module):
        directory, dest_dir, rules = (
            (node.directory, here, left_out) if base == "module" else (root, root_place, root_left_out)
        )
        dest = posixpath.normpath(posixpath.join(dest_dir, rel))
        name = posixpath.basename(rel)
        if dest in carried or split_extension(name, options.dialect) is not None:
            continue  # copied already; a configuration file is emitted, never copied
        path = directory / rel
        try:
            if not path.is_file() or not _within(path.resolve(strict=True), boundary):
                continue
        except (OSError, RuntimeError):
            continue
        shown = display_path(path, root)
        if _left_out_path(rules, rel):
            reason = "it matches a .terraformignore rule or an --exclude pattern"
        elif dest_dir == root_place and rel in _ROOT_STATE:
            reason = (
                "Terraform keeps the output's own state under that name in the root module's "
                "directory; give the snapshot another name"
            )
        else:
            copies[dest] = path
            continue
        diags.append(
            Diagnostic.warning(
                "File read by the configuration not copied",
                f"The configuration reads {shown} through path.{base}, but it was not copied into "
                f"the output because {reason}. Terraform will not find it when it runs in the output.",
                module=node.address,
            )
        )
    return _Carried(copies=copies, diagnostics=diags)


def _digest_and_scan(path: Path) -> tuple[str | None, str | None, Refused | None]:
    """Return a copied file's digest (as ``output_digest`` names one; None when it cannot be read:
    the write reports it), the credential its first bytes hold (flatten/lang/secrets.py), and the
    gate's refusal when it is no file to copy (over the copy budget, a FIFO or a device by now)."""
    h = hashlib.sha256()
    head = b""
    try:
        with gate.open_read(path, limit=_COPY_LIMIT) as f:
            while chunk := f.read(1 << 20):
                if len(head) < SCAN_LIMIT:
                    head += chunk[: SCAN_LIMIT - len(head)]
                h.update(chunk)
    except Refused as exc:
        return None, None, exc
    except OSError:
        return None, None, None
    return "sha256:" + h.hexdigest(), secret_kind(head), None


def _refused_copy(
    rel: str, path: Path, refused: Refused, origin: tuple[ModuleNode, str] | None, root: Path
) -> Diagnostic:
    """The error for a file the build would copy to ``rel`` that the gate refuses to read: over
    the copy budget (``gate.COPY_LIMIT``), or a FIFO or device put in its place."""
    node = origin[0] if origin is not None else None
    shown = (
        _file_name(node, origin[1], root)
        if node is not None and origin is not None
        else display_path(path, root)
    )
    return Diagnostic.error(
        "Failed to read file",
        f"The file {shown} would be copied into the output as {rel}, but it cannot be read: "
        f"{refused.what}. flatten copies the files beside a module (at most {_COPY_LIMIT:,} bytes "
        "each); leave this one out with a .terraformignore rule or --exclude, or move it out of "
        "the module directory.",
        Range.point(shown),
        module=node.address if node is not None else "",
    )


def _credential_warning(
    rel: str, path: Path, kind: str, origin: tuple[ModuleNode, str] | None, root: Path, real_root: Path
) -> Diagnostic:
    """Warn that the copied file ``rel`` (from ``path``) holds ``kind``, naming the rule that keeps
    it out: a line of the root's ``.terraformignore`` for a file inside the root (go-slug matches
    it on the path relative to the root, ``/`` anchoring it there), else ``--exclude``."""
    node = origin[0] if origin is not None else None
    inside = origin[1] if origin is not None else path.name
    if node is not None and node.package is not None:
        shown = _file_name(node, inside, root)
        fix = f"add `--exclude /{inside}` to the build command"
    else:
        real = path.parent.resolve() / path.name
        shown = display_path(path, root)
        if _within(real, real_root):
            line = "/" + os.path.relpath(real, real_root).replace(os.sep, "/")
            fix = f"add the line `{line}` to {display_path(root / '.terraformignore', root)}"
        else:
            fix = f"add the line `/{inside}` to the .terraformignore of its module directory"
    return Diagnostic.warning(
        "Credential copied into the output",
        f"{shown} holds {kind} and was copied into the output as {rel}; outputs are usually "
        f"committed, so anyone who can read the repository can use it. If the file is not meant to "
        f"ship with the configuration, {fix} and rebuild, and rotate the credential if it was "
        "committed already.",
        module=node.address if node is not None else "",
    )


def _keep_out_of_terraforms(
    files: dict[str, bytes], copies: dict[str, Path], root_place: str, root: Path
) -> Diagnostics:
    """Drop from ``files`` and ``copies`` each path inside one of Terraform's entries of the
    output's root module directory (``.terraform/``, ``terraform.tfstate.d/``, ``errored.tfstate``,
    ...), with a warning naming it: the output's own entry is Terraform's and a rebuild keeps it
    (flatten/stages/output.py), so a source file of that name must not replace it. Terraform run
    in the output reads its own entry there, as it reads the source's when run in the source."""
    prefix = root_place + "/" if root_place else ""
    diags = Diagnostics()
    for rel in sorted({*files, *copies}):
        if not rel.startswith(prefix):
            continue
        entry = rel[len(prefix) :].split("/", 1)[0]
        if entry not in _TERRAFORMS:
            continue
        source = copies.get(rel)
        shown = display_path(source, root) if source is not None else rel
        files.pop(rel, None)
        copies.pop(rel, None)
        diags.append(
            Diagnostic.warning(
                "File not copied",
                f"{shown} was not copied into the output because it would go into {entry} in the "
                f"root module's directory, which is Terraform's there: .terraform/ (modules, providers, "
                "the selected workspace), the workspaces' states, errored.tfstate and crash.log in the "
                "output belong to Terraform runs in the output, and a rebuild never replaces them. "
                "Terraform run in the output reads its own; to ship this file, give it another name "
                "or move it to another directory.",
            )
        )
    return diags


def _relative_calls(inlined: frozenset[str], address: str) -> frozenset[str]:
    """The inlined calls as the module at ``address`` names them (``module.x``), its own only."""
    prefix = address + "." if address else ""
    kept = {a[len(prefix) :] for a in inlined if a.startswith(prefix)}
    return frozenset(a for a in kept if a.count("module.") == 1)


def _carry_test(
    node: ModuleNode,
    rel: str,
    path: Path,
    *,
    here: str,
    outputs: Mapping[Path, str],
    boundary: Path,
    inlined: frozenset[str],
    real_path: Callable[[Path], Path],
    options: Options,
    root: Path,
    left_out: LeftOut | None,
    user_rules: UserRules,
) -> _Carried:
    """Return a test file of ``node`` as the output carries it (stages/testfiles.py): as a copy
    when nothing in it changes, rewritten otherwise, with any helper module it names copied whole;
    or a warning naming it when it cannot come along."""
    assert node.directory is not None
    module_real = real_path(node.directory)

    def locate(real: Path) -> Target | None:
        if real in outputs:
            return Target(outputs[real])
        if not _within(real, boundary):
            return None
        below = os.path.relpath(real, module_real).replace(os.sep, "/")
        place = posixpath.normpath(posixpath.join(here, below))
        if place == ".." or place.startswith("../"):
            return None
        inside = os.path.relpath(real, boundary).replace(os.sep, "/").split("/")
        hidden = next((part for part in inside if part in _NEVER_HELPERS), None)
        if hidden is not None:
            return Target(place, refused=f"is inside {hidden}, which is never copied into the output")
        if _left_out_path(left_out, below):
            return Target(place, refused="is left out by a .terraformignore rule or an --exclude pattern")
        return Target("" if place == "." else place, copy_from=real)

    try:
        # A test file is configuration: the configuration's budget (a huge or endless one is
        # refused unread, issue 38 item 9).
        data = gate.read_bytes(path)
    except OSError as exc:
        problem: str | None = f"it cannot be read ({exc.strerror or exc})"
        result = None
    else:
        result = rewrite_test_file(
            data,
            path.name,
            module_dir=node.directory,
            here=here,
            locate=locate,
            inlined=inlined,
            options=options,
        )
        problem = result.problem
    if result is None or result.data is None:
        shown = display_path(path, root) if node.package is None else _file_name(node, rel, root)
        return _Carried(
            diagnostics=Diagnostics(
                [
                    Diagnostic.warning(
                        "Test file not copied",
                        f"The test file {shown} was not copied into the output because {problem}. "
                        "terraform test in the output will not run its runs; fix the file, or run it "
                        "against the original configuration.",
                        module=node.address,
                    )
                ]
            )
        )
    copies: dict[str, Path] = {}
    for place, directory in result.helpers:
        copies.update(_whole_directory(directory, place, boundary, user_rules.at(directory)))
    if result.data is data:
        copies[rel] = path
        return _Carried(copies=copies)
    return _Carried(files={rel: result.data}, copies=copies)


def layout_tree(
    graph: ModuleGraph,
    *,
    root: Path,
    options: Options,
    beside_root: Mapping[str, Path] | None = None,
    variants: Mapping[str, int] | None = None,
    memo: Memo = NO_MEMO,
    inlined_calls: frozenset[str] = frozenset(),
    inlined: list[JsonValue] | None = None,
) -> OutputTree:
    """Return the output tree for ``graph``: a canonical JSON file per module directory, copies, manifest.

    ``beside_root``: more files to copy, by path relative to the root module (inlined modules'
    files, read through their ``path.module``, which may climb out of the root: ``../shared/x``);
    the layout keeps them at that place relative to the root, and the module directories' copies
    win over them. ``variants`` (inline mode) maps a module address to the copy of its directory
    it is written as, when inlining made the calls of one directory differ. ``memo`` may hold
    an unchanged module's output bytes (flatten/stages/memo.py). ``inlined_calls``: the calls
    ``--inline`` merged (a test file naming one is left out with a warning). ``inlined`` (inline
    mode) is the manifest's list of inlined calls and their new addresses (``InlineResult.manifest``).
    """
    variants = variants or {}
    root = root.absolute()
    real_path = _RealPaths(graph)
    extra = {posixpath.normpath(rel): path for rel, path in (beside_root or {}).items()}
    climb = max((_climb(rel) for rel in extra), default=0)
    outputs, root_place = _assign_outputs(graph, root, real_path, climb, variants)
    files: dict[str, bytes] = {}
    copies: dict[str, Path] = {}
    digests: dict[str, str] = {}
    written: set[str] = set()
    manifest_modules: list[JsonValue] = []
    # Each copied file of a module directory's walk: its module, and its path inside the module
    # directory (how a warning about it names it and the rule that leaves it out).
    origin: dict[str, tuple[ModuleNode, str]] = {}
    diags = Diagnostics()
    real_root = real_path(root)
    user_rules = UserRules(real_root, options.exclude)
    root_left_out = user_rules.at(real_root)
    for node in graph.walk():
        if node.directory is None:
            continue
        here = outputs[_out_key(node, real_path, variants)]
        target = posixpath.join(here, "main.tf.json") if here else "main.tf.json"
        if here not in written:
            written.add(here)
            module = _rewrite_calls(node, outputs, here, graph, real_path, variants)

            def rendered(module: Module = module) -> bytes:
                return render(module, provenance=options.provenance)

            # An unchanged module's bytes come from the memo (keyed by the module as loaded and
            # the rewritten calls); emitting is a third of a one-file-changed rebuild otherwise.
            # Its key names the module as loaded: none once a later stage replaced the module.
            key = node.memo_key if node.memo_key is not None and node.memo_key.module is node.module else None
            data = memo.emitted(key, node.module, module, options.provenance, rendered)
            files[target] = data
            digests[here] = output_digest(data)
            for name, doc in guard_files(node.directory, options.dialect).items():
                files[posixpath.join(here, name) if here else name] = dumps(doc).encode("utf-8")
            skipped: list[tuple[str, str]] = []
            unreadable: list[tuple[str, str]] = []
            tests: dict[str, Path] = {}
            real_dir = real_path(node.directory)
            left_out = user_rules.at(real_dir) if real_dir != real_root else root_left_out
            boundary = copy_boundary(node, root, real_path=real_path)
            found = module_copies(
                node.directory,
                here,
                dialect=options.dialect,
                is_root=not node.path,
                boundary=boundary,
                skipped=skipped,
                real_path=real_path,
                boundary_name="the module package" if node.package is not None else None,
                unreadable=unreadable,
                tests=tests,
                left_out=left_out,
            )
            for rel, path in found.items():
                copies.setdefault(rel, path)
                origin.setdefault(rel, (node, os.path.relpath(path, node.directory).replace(os.sep, "/")))
            named = named_files(
                node, here, root, root_place, boundary, {**found, **tests}, left_out, root_left_out, options
            )
            for rel, path in named.copies.items():
                copies.setdefault(rel, path)
            diags.extend(named.diagnostics)
            for rel, path in tests.items():
                carried = _carry_test(
                    node,
                    rel,
                    path,
                    here=here,
                    outputs=outputs,
                    boundary=boundary,
                    inlined=_relative_calls(inlined_calls, node.address),
                    real_path=real_path,
                    options=options,
                    root=root,
                    left_out=left_out,
                    user_rules=user_rules,
                )
                copies.update(carried.copies)
                files.update(carried.files)
                diags.extend(carried.diagnostics)
            # A package is named by its address, never by where the cache keeps it on this machine.
            shown = (
                (
                    redact_url(node.package.source)
                    if node.package is not None
                    else display_path(node.directory, root)
                )
                if skipped or unreadable
                else ""  # named only in the messages below
            )
            diags.extend(
                Diagnostic.warning(
                    "Module file not copied",
                    f"{rel} in the module directory {shown} was not copied "
                    f"into the output because {reason}. If the module reads it at run time, put a regular "
                    "file inside the configuration in its place.",
                    module=node.address,
                )
                for rel, reason in skipped
            )
            for rel, reason in unreadable:
                name = _file_name(node, rel, root)
                diags.append(
                    Diagnostic.error(
                        "Failed to read file",
                        f"The file {rel} in the module directory {shown} cannot be read: {reason}. flatten "
                        "copies the files beside a module into the output (the module may read them through "
                        f"path.module; at most {_COPY_LIMIT:,} bytes each); make the file readable, leave "
                        "it out with a .terraformignore rule or --exclude, or move it out of the module "
                        "directory.",
                        Range.point(name),
                        module=node.address,
                    )
                )
        entry: dict[str, JsonValue] = {
            "module": node.address,
            "source": redact_url(node.call.source) if node.call is not None else ".",
            "directory": display_path(node.directory, root),
            "output": here or ".",
            "digest": digests[here],
        }
        if node.call is not None and node.call.version is not None:
            entry["version"] = node.call.version
        if node.package is not None:
            pkg = node.package
            entry["directory"] = redact_url(pkg.source)  # never a machine's cache path, nor a password
            record: dict[str, JsonValue] = {"address": redact_url(pkg.address), "subdir": pkg.subdir}
            if pkg.version is not None:
                record["version"] = pkg.version
            if pkg.commit is not None:
                record["commit"] = pkg.commit
            if pkg.digest:
                record["digest"] = pkg.digest
            entry["package"] = record
        manifest_modules.append(entry)
    manifest: dict[str, JsonValue] = {
        "flatten_version": __version__,
        "dialect": options.dialect.value,
        "modules": manifest_modules,
    }
    if root_place:  # only then, so a tree with every module inside the root keeps its bytes
        manifest["root"] = root_place
    if options.exclude:  # likewise: only a build with --exclude records its patterns
        manifest["exclude"] = list(options.exclude)
    if options.dialect.allows("terraform_releases"):
        manifest["terraform_version"] = release_text(options.terraform_version)
    if graph.early_values:
        # Which root variables chose a module source, version or the backend, and where each
        # value came from: names and sources, never a value (teams commit the output, and a value
        # may be a token whether or not the variable is marked sensitive; issue 38).
        manifest["variables"] = {
            v.name: {"source": v.source, **({"sensitive": True} if v.secret else {})}
            for v in graph.early_values
        }
    if inlined:
        manifest["inlined"] = inlined
    for rel, path in extra.items():
        copies.setdefault(posixpath.normpath(posixpath.join(root_place, rel)), path)
    # Generated files win over a copied file of the same name.
    for rel in files:
        copies.pop(rel, None)
    diags.extend(_keep_out_of_terraforms(files, copies, root_place, root))
    for path, exc in user_rules.problems:
        shown = printable(display_path(path, root))
        diags.append(
            Diagnostic.warning(
                "Failed to read .terraformignore",
                describe_os_error(exc, doing="read an ignore file", path=shown)
                + " Its rules were not applied: the default exclusions apply, as go-slug does.",
            )
        )
    # What flatten owns in the output (docs/ci.md, "Who owns what in OUT"): every file it writes,
    # with the digest of its content, so a rebuild keeps everything else there and --check tells
    # a file edited by hand from one a source changed (stages/stale.py).
    # The source's own manifest (a flattened tree built again) is never copied: the build writes
    # its own there, and listing the copy would break the fixed point.
    copies.pop(MANIFEST_NAME, None)
    owned: dict[str, JsonValue] = {rel: output_digest(data) for rel, data in files.items()}
    for rel, path in list(copies.items()):
        digest, kind, refused = _digest_and_scan(path)
        if refused is not None:
            # Not copied, and an error: the output would lack a file the configuration may read.
            del copies[rel]
            diags.append(_refused_copy(rel, path, refused, origin.get(rel), root))
            continue
        owned[rel] = digest
        if kind is not None:
            diags.append(_credential_warning(rel, path, kind, origin.get(rel), root, real_root))
    manifest["files"] = {rel: owned[rel] for rel in sorted(owned)}
    files[MANIFEST_NAME] = dumps(manifest).encode("utf-8")
    return OutputTree(files=files, copies=copies, diagnostics=diags, root=root_place)
