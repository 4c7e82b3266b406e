"""``--check``: how an existing output differs from the tree a build writes now, as diagnostics.

Each changed, missing or extra file is one error diagnostic ("Output is out of date"), so that
every report format carries it (text, ``validate -json``, SARIF, JUnit, GitHub annotations) and
CI fails on it the way it fails on a configuration error. What Terraform wrote into the root
module's directory (flatten/lang/workdir.py: ``.terraform/``, state, lock files, saved plans) is
not the build's and is not counted: a rebuild keeps it too (flatten/stages/output.py).

Each finding says why, from the manifest the last build left in the output (its ``files``: a
digest of every file it wrote; older manifests give one per module's ``main.tf.json``):

- the output's file is not what the last build wrote: it was **edited by hand** (or deleted);
- it is what the last build wrote, and the build writes something else now: **a source changed**;
- the build writes a file the last one did not (**a source file or module was added**), or no
  longer writes one it did (**removed**); with no manifest at all, the output was never built.

and points where the cause is: a changed source at the block or argument (or, for a copied file,
the line) that differs, found by comparing the output's file with the new one; a hand edit at the
output's first line that differs. ``--diff`` (:func:`unified_diff`) prints each stale file's
difference as ``terraform fmt -check -diff`` does.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from flatten import gate
from flatten.lang.diagnostics import Code, Diagnostic, Diagnostics, Extra
from flatten.lang.model import Attribute, Block, JsonValue, Module, Pos, Range
from flatten.lang.oserror import Refused
from flatten.lang.printable import printable
from flatten.stages.emit import MANIFEST_NAME
from flatten.stages.graph import ModuleGraph
from flatten.stages.output import loads_configuration, terraform_entries

if TYPE_CHECKING:
    from flatten.stages.layout import OutputTree

__all__ = [
    "FOREIGN_SUMMARY",
    "STALE_SUMMARY",
    "Cause",
    "StaleFile",
    "Staleness",
    "foreign_diagnostics",
    "foreign_files",
    "module_outputs",
    "stale_diagnostics",
    "stale_files",
    "tree_stale_files",
    "unified_diff",
]

STALE_SUMMARY = "Output is out of date"
# A file of the user's in OUT (not in the manifest's "files") that Terraform loads: it is kept by
# every rebuild (stages/output.py) and named, a warning, since it is not flatten's to judge.
FOREIGN_SUMMARY = "File in the output that flatten did not write"
_NO_COPIES: Mapping[str, Path] = MappingProxyType({})
_NO_MODULES: Mapping[str, Module] = MappingProxyType({})
#: Files compared or shown line by line at most this large (a diff of a bigger one is one line).
_TEXT_LIMIT = 4 << 20
#: What ``--check`` reads of a file of OUT or a copy's source to compare them (in chunks): the
#: gate's copy budget, since no file the build writes is larger (a larger one in OUT, a 3 GiB
#: sparse file put there, is not the output: refused unread instead of hashed for minutes).
_COPY_LIMIT = gate.COPY_LIMIT


class Staleness(StrEnum):
    CHANGED = "changed"  # in both, with other bytes
    MISSING = "missing"  # the build writes it, the output has none
    EXTRA = "extra"  # the output has it, the build does not write it
    FOREIGN = "foreign"  # the user's (the manifest does not list it) and Terraform loads it


class Cause(StrEnum):
    """Why a file is stale, told apart by the output's manifest."""

    SOURCE = "source"  # the output's file is what the last build wrote; the sources changed since
    EDITED = "edited"  # the output's file is not what the last build wrote: edited by hand
    DELETED = "deleted"  # the last build wrote it and the output no longer has it
    ADDED = "added"  # the build writes it and the last one did not: a source or module added
    REMOVED = "removed"  # the last build wrote it and this one does not: a source or module removed
    UNBUILT = "unbuilt"  # the output has no manifest: no build wrote it


@dataclass(frozen=True, slots=True)
class StaleFile:
    """One file where the output differs from the build: its path relative to the output (POSIX),
    how, why, and where the cause is (``at``: a source range; None: the output's file, at its
    ``line``, the first that differs)."""

    path: str
    how: Staleness
    cause: Cause = Cause.SOURCE
    at: Range | None = None
    line: int = 1


def _existing(out: Path, root_place: str, written: Mapping[str, object]) -> set[str]:
    """Return the output's files (relative POSIX paths), without Terraform's entries in the root
    module's directory (nor anything below them)."""
    found: set[str] = set()
    root_dir = os.path.normpath(os.path.join(out, root_place))
    stack = [str(out)]
    while stack:  # as os.walk did (a link to a directory neither walked nor a file), through the gate
        current = stack.pop()
        listed = gate.list_dir(current)
        dirs = [e.name for e in listed if e.kind == "dir"]
        names = [
            e.name
            for e in listed
            if e.kind != "dir" and not (e.kind == "link" and os.path.isdir(os.path.join(current, e.name)))
        ]
        if os.path.normpath(current) == root_dir:
            rel_dir = os.path.relpath(current, out)
            prefix = "" if rel_dir == "." else rel_dir.replace(os.sep, "/") + "/"
            here = (rel[len(prefix) :] for rel in written if rel.startswith(prefix))
            mine = {name for name in here if "/" not in name}
            skipped = set(terraform_entries(current, mine))
            dirs = [d for d in dirs if d not in skipped]
            names = [n for n in names if n not in skipped]
        stack.extend(os.path.join(current, d) for d in dirs)
        for name in names:
            path = os.path.join(current, name)
            if os.path.isfile(path) or os.path.islink(path):
                found.add(os.path.relpath(path, out).replace(os.sep, "/"))
    return found


def _not_the_output(exc: OSError) -> bool:
    """Whether ``exc`` makes a file of OUT "not what the build writes" rather than an error: the
    gate refused the file for what it is (a FIFO, a device, a link not followed, a file over its
    budget: ``Refused.about_the_file``) or it is gone. Any other OSError (a failing disk, a
    permission, a deadline passed) is reported as itself by the command."""
    if isinstance(exc, Refused):
        return exc.about_the_file
    return isinstance(exc, (FileNotFoundError, NotADirectoryError, IsADirectoryError))


def _digest_of(path: Path) -> str | None:
    """Return the manifest's name for an output file's content (``sha256:<hex>``), None when
    unreadable (a link is not followed)."""
    digest = hashlib.sha256()
    try:
        with gate.open_read(path, limit=_COPY_LIMIT, follow=False) as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
    except OSError as exc:
        if not _not_the_output(exc):
            raise
        return None
    return "sha256:" + digest.hexdigest()


def _read(path: Path, limit: int = _TEXT_LIMIT, *, follow: bool = True) -> bytes | None:
    """Return a file's bytes through the gate (None when it cannot be read, or holds more than
    ``limit``: a FIFO or a link to /dev/zero in OUT is never read without end, issue 38)."""
    try:
        return gate.read_bytes(path, limit=limit, follow=follow)
    except OSError as exc:
        if not _not_the_output(exc):
            raise
        return None


def _same(made: Path, source: Path) -> bool:
    """Whether OUT's file ``made`` (a link not followed) holds the bytes of ``source``, compared in
    chunks (a large copy is never read whole)."""
    try:
        with (
            gate.open_read(made, limit=_COPY_LIMIT, follow=False) as fa,
            gate.open_read(source, limit=_COPY_LIMIT) as fb,
        ):
            if os.fstat(fa.fileno()).st_size != os.fstat(fb.fileno()).st_size:
                return False
            while True:
                ca, cb = fa.read(1 << 20), fb.read(1 << 20)
                if ca != cb:
                    return False
                if not ca:
                    return True
    except OSError as exc:
        if not _not_the_output(exc):
            raise
        return False


@dataclass(frozen=True, slots=True)
class _Record:
    """What the output's manifest says the last build wrote: digests by relative path, and
    whether that is every file (a manifest with ``files``) or each module's ``main.tf.json`` only
    (an older manifest's ``modules[].digest``)."""

    digests: dict[str, str]
    complete: bool


def _recorded(out: Path) -> _Record | None:
    """Return what the output's manifest records, or None when the output has no manifest
    flatten can read."""
    data = _read(out / MANIFEST_NAME)
    if data is None:
        return None
    try:
        doc = json.loads(data)
    except ValueError:
        return None
    if not isinstance(doc, dict):
        return None
    files = doc.get("files")
    if isinstance(files, dict):
        return _Record({str(k): v if isinstance(v, str) else "" for k, v in files.items()}, True)
    found: dict[str, str] = {}
    for entry in doc.get("modules") or ():
        if isinstance(entry, dict) and isinstance(entry.get("digest"), str):
            here = str(entry.get("output") or ".")
            found["main.tf.json" if here == "." else f"{here}/main.tf.json"] = entry["digest"]
    return _Record(found, False)


def _first_line(old: bytes, new: bytes) -> int:
    """Return the first line (1-based, lines ended by LF as Terraform counts them) where two
    texts differ."""
    old_lines, new_lines = old.split(b"\n"), new.split(b"\n")
    for number, (a, b) in enumerate(zip(old_lines, new_lines, strict=False), 1):
        if a != b:
            return number
    return min(len(old_lines), len(new_lines))


def _lines(text: str) -> list[str]:
    """Return ``text``'s lines with their LF (only LF ends a line: a CR or another separator
    inside one stays in it, to be shown escaped)."""
    parts = text.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _json_path(old: JsonValue, new: JsonValue) -> tuple[str | int, ...] | None:
    """Return the first key path where two JSON documents differ (None when equal)."""
    if old == new:
        return None
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new)):
            if key not in old or key not in new:
                return (key,)
            inner = _json_path(old[key], new[key])
            if inner is not None:
                return (key, *inner)
        return ()
    if isinstance(old, list) and isinstance(new, list):
        for index, (a, b) in enumerate(zip(old, new, strict=False)):
            inner = _json_path(a, b)
            if inner is not None:
                return (index, *inner)
        return (min(len(old), len(new)),)
    return ()


def _attribute(block: Block, name: str) -> Attribute | None:
    return next((i for i in block.body.items if isinstance(i, Attribute) and i.name == name), None)


def _locate(module: Module, path: tuple[str | int, ...]) -> Range | None:
    """Return the source range behind a key path of a module's output file: the argument when the
    path names one, else the block (labels matched as the emitted JSON nests them)."""
    keys = [k for k in path if isinstance(k, str)]
    if not keys:
        return None
    for block in module.blocks_of(keys[0]):
        count = len(block.labels)
        if tuple(keys[1 : 1 + count]) != block.labels:
            continue
        rest = keys[1 + count :]
        if rest:
            attribute = _attribute(block, rest[0])
            if attribute is not None:
                return attribute.name_range
            if count == 0:  # a locals or terraform block: another of them may hold the key
                continue
        if len(keys) > count or count == 0:
            return block.range
    return None


def _source_at(
    rel: str, old: bytes, new: bytes, modules: Mapping[str, Module], copies: Mapping[str, Path], root: Path
) -> Range | None:
    """Return where a source changed to turn ``old`` (the output's file) into ``new``, or None."""
    module = modules.get(rel)
    if module is not None:
        try:
            path = _json_path(json.loads(old), json.loads(new))
        except ValueError:
            return None
        return None if path is None else _locate(module, path)
    source = copies.get(rel)
    if source is not None:
        line = _first_line(old, new)
        name = os.path.relpath(source, root).replace(os.sep, "/")
        return Range(name, Pos(line, 1, 0), Pos(line, 1, 0))
    return None


def module_outputs(files: Mapping[str, bytes], graph: ModuleGraph | None) -> dict[str, Module]:
    """Return the module behind each generated ``main.tf.json`` of an output tree (``files``: the
    tree's generated files, its manifest among them; ``graph``: the build's), by relative path,
    from the manifest's ``modules[].output``."""
    by_address = {node.address: node.module for node in graph.walk()} if graph is not None else {}
    try:
        manifest = json.loads(files[MANIFEST_NAME])
    except (KeyError, ValueError):
        return {}
    found: dict[str, Module] = {}
    for entry in manifest.get("modules") or ():
        module = by_address.get(str(entry.get("module", "")))
        if module is not None:
            here = str(entry.get("output") or ".")
            found["main.tf.json" if here == "." else f"{here}/main.tf.json"] = module
    return found


def tree_stale_files(
    out: Path, tree: OutputTree, graph: ModuleGraph | None, *, root: Path
) -> list[StaleFile]:
    """``stale_files`` for the tree a build returned (its files, copies, root module's place and
    the modules behind its generated files): what ``--check`` reports of ``out``."""
    return stale_files(
        out,
        tree.files,
        copies=tree.copies,
        root_place=tree.root,
        modules=module_outputs(tree.files, graph),
        root=root,
    )


def stale_files(
    out: Path,
    files: Mapping[str, bytes],
    *,
    copies: Mapping[str, Path] = _NO_COPIES,
    root_place: str = "",
    modules: Mapping[str, Module] = _NO_MODULES,
    root: Path | None = None,
) -> list[StaleFile]:
    """Return how the output directory ``out`` differs from the tree a build writes (``files``:
    generated bytes, ``copies``: files copied from the sources, both by relative POSIX path;
    ``root_place``: where it puts the root module), sorted by path, each with its cause.

    ``modules`` (:func:`module_outputs`) and ``root`` (the absolute root module directory, which
    a source range's file name is relative to) let a changed source be found: without them a
    finding points at the output's file. A copy is compared in chunks, so a large file beside a
    module is never read whole."""
    written: dict[str, object] = {**dict.fromkeys(copies, b""), **files}
    existing = _existing(out, root_place, written) if out.is_dir() else set()
    recorded = _recorded(out) if out.is_dir() else None
    stale = []
    for rel in sorted(set(written) | existing):
        listed = recorded is not None and rel in recorded.digests
        # An older manifest lists each module's file only: another file's absence there says nothing.
        unknown = recorded is None or (not recorded.complete and not listed)
        if rel not in existing:
            cause = Cause.UNBUILT if recorded is None else Cause.DELETED if listed else Cause.ADDED
            at = None
            source = copies.get(rel)
            if cause is Cause.ADDED and source is not None and root is not None:
                at = Range.point(os.path.relpath(source, root).replace(os.sep, "/"))
            stale.append(StaleFile(rel, Staleness.MISSING, cause, at))
            continue
        if rel not in written:
            if not unknown and not listed:
                # The user's (the manifest lists every file flatten wrote): kept by every rebuild,
                # and named only when Terraform loads it (stages/output.py).
                if loads_configuration(rel):
                    stale.append(StaleFile(rel, Staleness.FOREIGN))
                continue
            stale.append(StaleFile(rel, Staleness.EXTRA, Cause.REMOVED))
            continue
        if rel in files:
            data = _read(out / rel, limit=max(_TEXT_LIMIT, len(files[rel]) + 1), follow=False)
            same = data == files[rel]
        else:
            data = None
            same = _same(out / rel, copies[rel])
        if same:
            continue
        digest = recorded.digests.get(rel) if recorded is not None else None
        edited = bool(digest) and _digest_of(out / rel) != digest
        if data is None and rel in copies:
            data = _read(out / rel, follow=False)
        new = files[rel] if rel in files else _read(copies[rel])
        line = _first_line(data, new) if data is not None and new is not None else 1
        if edited:
            stale.append(StaleFile(rel, Staleness.CHANGED, Cause.EDITED, None, line))
            continue
        at = None
        if root is not None and data is not None and new is not None:
            at = _source_at(rel, data, new, modules, copies, root)
        stale.append(StaleFile(rel, Staleness.CHANGED, Cause.SOURCE, at, line))
    return stale


_DETAIL = MappingProxyType(
    {
        (Staleness.CHANGED, Cause.SOURCE): "{shown} is not what the build writes now: a source it is built "
        "from changed since {out} was built{where}.",
        (Staleness.CHANGED, Cause.EDITED): "{shown} was edited by hand: it is not what the last build wrote "
        "(its digest in {out}'s manifest differs), and not what the build writes now.",
        (Staleness.MISSING, Cause.ADDED): "The build writes {shown}, which {out} does not have: a source "
        "file or module was added since {out} was built{where}.",
        (Staleness.MISSING, Cause.DELETED): "The build writes {shown}, which {out} does not have: it was "
        "deleted from {out} by hand (the last build wrote it).",
        (
            Staleness.MISSING,
            Cause.UNBUILT,
        ): "The build writes {shown}, which {out} does not have: {out} holds "
        "no manifest, so no build wrote it.",
        (Staleness.EXTRA, Cause.REMOVED): "{out} has {shown}, which the build no longer writes: the source "
        "file or module it came from was removed or renamed.",
    }
)
_FOREIGN_DETAIL = (
    "{out} has {shown}, which flatten did not write (its manifest does not list it), and Terraform "
    "loads it: it changes what runs in {out} beyond what the sources say. flatten keeps your files "
    "there and never changes them; if this one is not meant to be there, remove it, and if it is "
    "(a local override), nothing needs doing."
)


def foreign_diagnostics(stale: list[StaleFile], *, out: Path, root: Path, out_text: str) -> Diagnostics:
    """Return a "File in the output that flatten did not write" warning for each ``FOREIGN`` file
    of ``stale`` (``--check``) or of ``foreign_files`` (a build, which keeps them)."""
    diags = Diagnostics()
    for item in stale:
        if item.how is not Staleness.FOREIGN:
            continue
        shown = f"{out_text.rstrip('/')}/{item.path}"
        filename = os.path.relpath(os.path.join(out, item.path), root).replace(os.sep, "/")
        at = Pos(1, 1, 0)
        diags.append(
            Diagnostic.warning(
                FOREIGN_SUMMARY, _FOREIGN_DETAIL.format(shown=shown, out=out_text), Range(filename, at, at)
            )
        )
    return diags


def foreign_files(out: Path, written: Collection[str]) -> list[StaleFile]:
    """Return the user's files in the output ``out`` that Terraform loads (a build keeps them and
    names them), given the paths the build writes (``written``)."""
    if not out.is_dir():
        return []
    from flatten.stages.output import user_entries

    found: list[StaleFile] = []
    for rel in user_entries(out, written):
        below = [rel]
        if os.path.isdir(out / rel) and not os.path.islink(out / rel):
            below = sorted(_files_below(out, rel))
        found.extend(StaleFile(p, Staleness.FOREIGN) for p in below if loads_configuration(p))
    return found


def _files_below(out: Path, rel: str) -> list[str]:
    """Every non-directory entry below ``out/rel`` (POSIX, relative to ``out``), links not followed,
    listed through the gate (as os.walk listed them)."""
    found: list[str] = []
    stack = [rel]
    while stack:
        current = stack.pop()
        for entry in gate.list_dir(out / current):
            path = f"{current}/{entry.name}"
            if entry.kind == "dir":
                stack.append(path)
            elif not (entry.kind == "link" and os.path.isdir(out / path)):
                found.append(path)
    return found


def stale_diagnostics(
    stale: list[StaleFile], *, out: Path, root: Path, out_text: str, command: str
) -> Diagnostics:
    """Return one "Output is out of date" error for each of ``stale``: placed on the source that
    changed when it is known, else on that file of the output directory ``out`` (absolute) at its
    first differing line (the range's file name is relative to ``root``, the absolute root module
    directory, as every diagnostic's is). ``out_text`` is ``--out`` as typed and ``command`` the
    build command to run (``flatten build live --out flat``)."""
    diags = Diagnostics()
    for item in stale:
        if item.how is Staleness.FOREIGN:
            continue  # foreign_diagnostics
        shown = f"{out_text.rstrip('/')}/{item.path}"
        filename = os.path.relpath(os.path.join(out, item.path), root).replace(os.sep, "/")
        at = Pos(item.line, 1, 0)
        place = item.at if item.at is not None else Range(filename, at, at)
        where = f" (at {item.at.filename}:{item.at.start.line})" if item.at is not None else ""
        template = _DETAIL.get((item.how, item.cause)) or _DETAIL[(item.how, Cause.SOURCE)]
        detail = template.format(shown=shown, out=out_text, where=where)
        detail += f" Run `{command}` to rebuild the output, then commit it with its sources."
        diags.append(
            Diagnostic.error(
                STALE_SUMMARY,
                detail,
                place,
                extra=Extra(code=Code.STALE_OUTPUT, subject=f"{item.how.value}: {item.path}"),
            )
        )
    return diags


def unified_diff(
    stale: list[StaleFile],
    out: Path,
    files: Mapping[str, bytes],
    *,
    copies: Mapping[str, Path],
    out_text: str,
) -> str:
    """Return a unified diff per stale file, from the output's file (``a/``) to what the build
    writes (``b/``), as ``terraform fmt -check -diff`` prints one: a missing file from /dev/null,
    an extra one to it, a file that is not UTF-8 text (or over 4 MiB) as one "Binary files"
    line. Every line is printable (control characters escaped), so a file's content cannot forge
    a terminal sequence or a CI workflow command."""
    parts: list[str] = []
    base = out_text.rstrip("/")
    for item in stale:
        if item.how is Staleness.FOREIGN:
            continue  # the user's file: nothing of the build's to compare it with
        name = f"{base}/{item.path}"
        old = _read(out / item.path, follow=False) if item.how is not Staleness.MISSING else b""
        if item.how is Staleness.EXTRA:
            new: bytes | None = b""
        elif item.path in files:
            new = files[item.path]
        else:
            new = _read(copies[item.path])
        a = "/dev/null" if item.how is Staleness.MISSING else f"a/{name}"
        b = "/dev/null" if item.how is Staleness.EXTRA else f"b/{name}"
        try:
            old_text = (old if old is not None else b"\0").decode("utf-8")
            new_text = (new if new is not None else b"\0").decode("utf-8")
        except UnicodeDecodeError:
            old_text = new_text = "\0"
        if "\0" in old_text or "\0" in new_text:
            parts.append(printable(f"Binary files {a} and {b} differ") + "\n")
            continue
        lines = difflib.unified_diff(_lines(old_text), _lines(new_text), fromfile=a, tofile=b)
        for line in lines:
            body = line[:-1] if line.endswith("\n") else line
            parts.append(printable(body) + "\n")
            if not line.endswith("\n"):
                parts.append("\\ No newline at end of file\n")
    return "".join(parts)
