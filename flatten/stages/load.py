"""Loading a module directory: select its files, read them, parse each into the representation.

The failure contract follows OpenTofu's ``parser_config_dir.go``: an unreadable directory gives
"Failed to read module directory" and no files; an unreadable or undecodable file gives
"Failed to read file" and is skipped; a syntax error gives the parser's diagnostic and an
empty body for that file. Nothing here raises for bad configuration.

Performance (docs/performance.md): parsing a file, listing a directory and loading a whole
module go through the ``memo`` the caller passes (flatten/stages/memo.py); the command line's
memo keeps them on disk between builds, and prefetches them in parallel.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from flatten import gate
from flatten.lang.diagnostics import Code, Diagnostics, Extra
from flatten.lang.model import Body, ParsedFile, Range, Scanned
from flatten.lang.options import Options
from flatten.lang.oserror import describe_os_error
from flatten.stages.core_version import check_release_features
from flatten.stages.decode import check_file, check_versions, in_file_order, incompatible
from flatten.stages.files import ConfigFile, DirectoryListing, list_config_files
from flatten.stages.memo import NO_MEMO, LoadedModule, Memo, MemoKey, ModuleSource, ParseSource, Raws
from flatten.stages.merge import merge_module
from flatten.syntax.references import scan_module, share_record
from flatten.syntax.sourcetext import source_text

__all__ = ["display_path", "load_dir", "load_file", "load_module", "read_config"]

# A file or directory that could not be read: the module graph ties it to the call that loads it.
_UNREADABLE = Extra(Code.UNREADABLE)


def read_config(path: Path, root: Path) -> bytes:
    """Return a configuration file's bytes through the gate (flatten/gate.py; issue 38, items 6
    and 9): a regular file of at most ``gate.CONFIG_LIMIT`` bytes (a FIFO, device or socket is
    refused without blocking), and a symlink only when its target lies inside the root module's
    directory or the file's own module directory (a committed ``leak.tf.json`` linking to the
    runner's credentials is never read). The memo and prefetch read through this too, so what is
    keyed and parsed passed the same rule."""
    return gate.read_bytes(path, inside=(root, path.parent))


def display_path(path: Path, root: Path) -> str:
    """Return ``path`` relative to ``root`` with forward slashes, for ranges and messages."""
    # os.path on strings: a Path built per call cost more than the relpath itself.
    return os.path.relpath(path, root).replace(os.sep, "/")


def load_file(
    entry: ConfigFile, *, root: Path, options: Options, raw: bytes | None = None, memo: Memo = NO_MEMO
) -> tuple[ParsedFile, Diagnostics]:
    """Return one file parsed into the representation, and its diagnostics.

    ``raw`` is the file's content when the caller has already read it (the module memo keys
    exactly the bytes that are parsed).
    """
    diags = Diagnostics()
    name = display_path(entry.path, root)
    try:
        if raw is None:
            raw = read_config(entry.path, root)
    except OSError as exc:
        diags.error(
            "Failed to read file",
            describe_os_error(exc, doing=f"read the configuration file {name!r}", path=name, reading=True),
            Range.point(name),
            extra=_UNREADABLE,
        )
        return ParsedFile(name, entry.syntax, Body(), entry.is_override), diags
    try:
        # A native file is decoded with the fast reader's end-of-file sentinel in place: adding it
        # later copied the whole text (hcl_fast.SourceText).
        text = source_text(raw) if entry.syntax == "native" else raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        diags.error(
            "Invalid character encoding",
            "All input files must be UTF-8 encoded. Ensure that UTF-8 encoding is selected "
            "in your editor and save the file again.",
            Range.point(name, line, column, exc.start),
            extra=_UNREADABLE,
        )
        return ParsedFile(name, entry.syntax, Body(), entry.is_override), diags
    del raw  # decoded: not held while the text is parsed
    syntax = entry.syntax
    body, parse_diags = memo.parsed(
        ParseSource(text, name, syntax, options.dialect), lambda: _parse(text, name, syntax, options=options)
    )
    diags.extend(parse_diags)
    return ParsedFile(name, entry.syntax, body, entry.is_override), diags


def _parse(text: str, name: str, syntax: str, *, options: Options) -> tuple[Body, Diagnostics]:
    # The fast reader (hcl_fast), which falls back to python-hcl2 (hcl.parse_native) when it
    # cannot vouch for a file: exactly what parse_native gives (docs/performance.md).
    if syntax == "json":
        from flatten.syntax.jsonsyntax import parse_json

        return parse_json(text, name, options=options)
    from flatten.syntax.hcl_fast import parse

    return parse(text, name, options=options)


def _outside(listing: DirectoryListing, boundary: Path, root: Path) -> tuple[DirectoryListing, Diagnostics]:
    """Return ``listing`` without the files that resolve (through symlinks) outside ``boundary``,
    and an error naming each one: such a file is never read."""
    diags = Diagnostics()
    real_boundary = os.path.realpath(boundary)
    kept: dict[bool, list[ConfigFile]] = {False: [], True: []}
    for entry in listing.files:
        real = os.path.realpath(entry.path)
        if os.path.commonpath([real, real_boundary]) == real_boundary:
            kept[entry.is_override].append(entry)
            continue
        name = display_path(entry.path, root)
        diags.error(
            "Failed to read file",
            f"The configuration file {name!r} is a symbolic link to {real}, outside the module package it "
            "belongs to. flatten reads only files inside a downloaded package, so it did not read this one "
            "and the module is incomplete. If you maintain the package, put the file itself in it.",
            Range.point(name),
            extra=_UNREADABLE,
        )
    return DirectoryListing(tuple(kept[False]), tuple(kept[True])), diags


def load_dir(
    directory: Path, *, root: Path, options: Options, boundary: Path | None = None, memo: Memo = NO_MEMO
) -> tuple[list[ParsedFile], Diagnostics]:
    """Return the parsed configuration files of ``directory`` (primary, then override) and diagnostics.

    Each file also goes through the decode checks (``decode.check_file``), and the module through
    OpenTofu's version gate: a module declared incompatible gives no files and only its
    "Incompatible module" errors (spec §1). With ``boundary`` (a module package's directory), a
    file that is a symlink leading outside it is not read, and is reported as an error.
    """
    loaded, _ = load_module(directory, root=root, options=options, boundary=boundary, memo=memo)
    return list(loaded.files), Diagnostics(loaded.load_diags)


def load_module(
    directory: Path,
    *,
    root: Path,
    options: Options,
    boundary: Path | None = None,
    memo: Memo = NO_MEMO,
    known_scans: dict[str, Scanned] | None = None,
) -> tuple[LoadedModule, MemoKey | None]:
    """Return ``directory``'s files as ``load_dir`` loads them and the module ``merge.merge_module``
    makes of them (named by the directory's display path), and the memo's name for the module.
    ``known_scans``: the scans of the modules loaded before by the caller (``scan_module``'s
    ``known``), shared by every module it loads.

    Loading and merging are one step here because a module directory is the unit the memo keeps
    (a rebuild after one edit redoes only the module that changed).
    """
    rel = display_path(directory, root)

    def merged(files: list[ParsedFile], diags: Diagnostics) -> LoadedModule:
        module, merge_diags = merge_module(files, directory=rel, options=options)
        if options.graph_checks():
            # Every expression scanned once, here, for every check that reads it, and cached
            # with the module (syntax/references.py ``scan_module``); --checks init reads few.
            module = replace(module, scans=scan_module(module, known_scans))
        return LoadedModule(tuple(files), tuple(diags), module, tuple(merge_diags))

    def listed() -> DirectoryListing:
        return list_config_files(directory, dialect=options.dialect)

    try:
        # A package's directory is listed afresh: only the root's local modules are prefetched.
        listing = memo.listing(directory, options.dialect, listed) if boundary is None else listed()
    except OSError as exc:
        diags = Diagnostics()
        diags.error(
            "Failed to read module directory",
            f"Module directory {display_path(directory, root)} does not exist or cannot be read. "
            + describe_os_error(exc, doing="list it", path=display_path(directory, root), reading=True),
            extra=_UNREADABLE,
        )
        return merged([], diags), None
    if boundary is not None:
        listing, diags = _outside(listing, boundary, root)
        if diags:  # rare: load what is left, past the memo, after the errors
            files, file_diags = _load_listing(listing.files, None, root=root, options=options, memo=memo)
            diags.extend(file_diags)
            return merged(files, diags), None
    entries = listing.files

    def compute(raws: Raws | None) -> LoadedModule:
        return merged(*_load_listing(entries, raws, root=root, options=options, memo=memo))

    loaded, key = memo.module(ModuleSource(directory, root, rel, listing, options), compute)
    if known_scans is not None:
        # A module the memo gave (from a prefetch helper or the cache) holds its own copies
        # of the scans; share them (the module object stays the one ``key`` names).
        share_record(loaded.module.scans, known_scans)
    return loaded, key


def _load_listing(
    entries: tuple[ConfigFile, ...],
    raws: Raws | None,
    *,
    root: Path,
    options: Options,
    memo: Memo,
) -> tuple[list[ParsedFile], Diagnostics]:
    diags = Diagnostics()
    files: list[ParsedFile] = []
    for i, entry in enumerate(entries):
        # Taken, not looked up: the bytes live only until load_file has decoded them.
        parsed, file_diags = load_file(
            entry, root=root, options=options, raw=raws.take(i) if raws is not None else None, memo=memo
        )
        files.append(parsed)
        decode_diags = check_file(parsed, options=options, parse_diags=file_diags)
        decode_diags.extend(check_release_features(parsed, options=options))
        diags.extend(in_file_order(parsed, file_diags, decode_diags))
    gate = check_versions(files, options=options)
    if incompatible(gate):
        # OpenTofu discards every other diagnostic of a module declared incompatible (spec §1),
        # and nothing of the module is merged or followed.
        return [], Diagnostics(d for d in gate if d.code is Code.INCOMPATIBLE_MODULE)
    diags.extend(gate)
    return files, diags
