"""Loading a module directory: select its files, read them, parse each into the representation.

The failure contract follows OpenTofu's ``parser_config_dir.go``: an unreadable directory gives
"Failed to read module directory" and no files; an unreadable or undecodable file gives
"Failed to read file" and is skipped; a syntax error gives the parser's diagnostic and an
empty body for that file. Nothing here raises for bad configuration.
"""

from __future__ import annotations

import os
from pathlib import Path

from flatten.lang.diagnostics import Code, Diagnostics, Extra
from flatten.lang.model import Body, ParsedFile, Range
from flatten.lang.options import Options
from flatten.shell import build_cache
from flatten.stages.decode import check_file, check_versions, incompatible, superseded
from flatten.stages.files import ConfigFile, DirectoryListing, list_config_files

__all__ = ["display_path", "load_dir", "load_file"]

# A file or directory that could not be read: the module graph ties it to the call that loads it.
_UNREADABLE = Extra(Code.UNREADABLE)


def display_path(path: Path, root: Path) -> str:
    """Return ``path`` relative to ``root`` with forward slashes, for ranges and messages."""
    rel = os.path.relpath(path, root)
    return Path(rel).as_posix()


def load_file(
    entry: ConfigFile, *, root: Path, options: Options, raw: bytes | None = None
) -> tuple[ParsedFile, Diagnostics]:
    """Return one file parsed into the representation, and its diagnostics.

    ``raw`` is the file's content when the caller has already read it (the module cache keys
    exactly the bytes that are parsed).
    """
    diags = Diagnostics()
    name = display_path(entry.path, root)
    try:
        if raw is None:
            raw = entry.path.read_bytes()
    except OSError as exc:
        diags.error(
            "Failed to read file",
            f"The configuration file {name!r} could not be read: {exc.strerror or exc}.",
            Range.point(name),
            extra=_UNREADABLE,
        )
        return ParsedFile(name, entry.syntax, Body(), entry.is_override), diags
    try:
        text = raw.decode("utf-8")
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
    body, parse_diags = _parse(text, name, entry.syntax, options=options)
    diags.extend(parse_diags)
    return ParsedFile(name, entry.syntax, body, entry.is_override), diags


def _parse(text: str, name: str, syntax: str, *, options: Options) -> tuple[Body, Diagnostics]:
    # The parse cache, then the fast reader (hcl_fast), then python-hcl2 (hcl.parse_native):
    # each gives exactly what parse_json / parse_native give (docs/performance.md).
    from flatten.shell.parse_cache import parse_cached

    return parse_cached(text, name, syntax, options=options)


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
    directory: Path, *, root: Path, options: Options, boundary: Path | None = None
) -> tuple[list[ParsedFile], Diagnostics]:
    """Return the parsed configuration files of ``directory`` (primary, then override) and diagnostics.

    Each file also goes through the decode checks (``decode.check_file``), and the module through
    OpenTofu's version gate: a module declared incompatible gives no files and only its
    "Incompatible module" errors (spec §1). With ``boundary`` (a module package's directory), a
    file that is a symlink leading outside it is not read, and is reported as an error.
    """
    diags = Diagnostics()
    # Performance (docs/performance.md, "Module cache"): a module whose files, names and options
    # are unchanged comes back from flatten/shell/build_cache.py with its merge result, which
    # merge_module then returns. Keyed by the exact bytes read here, which are also what is parsed;
    # or, after prefetch read the directory (a moment earlier), by the key of what it read.
    cached = build_cache.enabled() and boundary is None
    known = build_cache.preread(directory, root, options) if cached else None
    if known is not None:
        listing = known[0]
    else:
        try:
            listing = list_config_files(directory, dialect=options.dialect)
        except OSError as exc:
            diags.error(
                "Failed to read module directory",
                f"Module directory {display_path(directory, root)} does not exist or cannot be read: "
                f"{exc.strerror or exc}.",
                extra=_UNREADABLE,
            )
            return [], diags
    if boundary is not None:
        listing, diags = _outside(listing, boundary, root)
        if diags:  # rare: load what is left, past the cache, after the errors
            files, file_diags = _load_listing(listing.files, None, root=root, options=options)
            diags.extend(file_diags)
            return files, diags
    raws: list[bytes] | None = None
    key = ""
    rel = display_path(directory, root)
    if build_cache.enabled():
        if known is not None:
            found = build_cache.take(known[1], rel, options)
            if found is not None:
                return found
        try:
            raws = [entry.path.read_bytes() for entry in listing.files]
        except OSError:
            raws = None  # load_file reports it; such a module is not cached
        if raws is not None:
            key = build_cache.module_key(
                rel,
                [
                    (display_path(e.path, root), e.syntax, e.is_override, raw)
                    for e, raw in zip(listing.files, raws, strict=True)
                ],
                options,
            )
            found = build_cache.take(key, rel, options)
            if found is not None:
                return found
    files, diags = _load_listing(listing.files, raws, root=root, options=options)
    if raws is not None:
        build_cache.loaded(key, rel, options, files, diags)
    return files, diags


def _load_listing(
    entries: tuple[ConfigFile, ...], raws: list[bytes] | None, *, root: Path, options: Options
) -> tuple[list[ParsedFile], Diagnostics]:
    diags = Diagnostics()
    files: list[ParsedFile] = []
    for i, entry in enumerate(entries):
        raw = raws[i] if raws is not None else None
        parsed, file_diags = load_file(entry, root=root, options=options, raw=raw)
        files.append(parsed)
        decode_diags = check_file(parsed, options=options, parse_diags=file_diags)
        diags.extend(superseded(file_diags, decode_diags))
        diags.extend(decode_diags)
    gate = check_versions(files, options=options)
    if incompatible(gate):
        # OpenTofu discards every other diagnostic of a module declared incompatible (spec §1),
        # and nothing of the module is merged or followed.
        return [], Diagnostics(d for d in gate if d.code is Code.INCOMPATIBLE_MODULE)
    diags.extend(gate)
    return files, diags
