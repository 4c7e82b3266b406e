"""Test files carried into the output: ``.tftest.hcl``/``.tftest.json`` (``.tofutest.*`` for
OpenTofu), with every directory they name rewritten for the output layout.

What a test file can name (Terraform's internal/configs/test_file.go, ``decodeTestRunModuleBlock``
and ``decodeMockProviderBlock`` in internal/configs/mock_provider.go; the directories are read by
internal/configs/config_build.go ``loadTestModules`` and ``Parser.loadMockDataFiles``):

- ``run "x" { module { source = "./setup" } }``: a module the run applies instead of the one
  under test. A local source is a path relative to the working directory ``terraform test`` runs
  in (the module whose test it is), wherever the test file sits (``tests/main.tftest.hcl`` names
  ``./tests/setup``). Registry sources are left alone (``terraform init`` installs them).
- ``mock_provider "x" { source = "./mocks" }``: a directory of ``.tfmock.hcl``/``.tfmock.json``
  files, also relative to the working directory.
- Addresses (``assert`` conditions, ``expect_failures``, ``override_*`` targets,
  ``plan_options``' ``target``/``replace``): resource and module addresses of the configuration
  under test. The layout keeps every address, so they need no rewrite, except under ``--inline``,
  where an inlined call's resources move; a file naming ``module.<inlined call>`` is left out and
  named in a warning (``Rewrite.problem``).
- Other file paths (``file("./testdata/x.json")`` in ``variables``) are relative to the working
  directory too, and the layout keeps every file's place relative to its module, so they keep
  working unchanged.

A directory a run's ``module`` names that is not one of the build's modules is copied whole
(configuration files included), at its place relative to the module under test. Native syntax
stays native: each rewritten string literal is spliced in at the byte range the reader gives it,
so comments and formatting survive; JSON test files are re-encoded with their keys in order.
"""

from __future__ import annotations

import json
import os
import posixpath
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from flatten.lang.model import Attribute, Block, Body
from flatten.lang.options import Options
from flatten.syntax.references import ExpressionError, escape_literal, hcl_string, template_references

__all__ = ["TEST_DIRECTORY", "TEST_SUFFIXES", "Rewrite", "Target", "rewrite_test_file"]

# Both engines' test file names: a Terraform build carries OpenTofu's too (and the other way
# round), rewritten the same way, since either engine may run the output's tests.
TEST_SUFFIXES = (".tftest.hcl", ".tftest.json", ".tofutest.hcl", ".tofutest.json")

# The directory below a module whose test files ``terraform test`` also runs: ``-test-directory``'s
# default (``configs.DefaultTestDirectory``, which internal/command/test.go passes to the loader;
# internal/configs/parser_config_dir.go, ``LoadConfigDirWithTests``, reads the module directory's
# test files and this directory's, nothing deeper). Its test files are carried whatever else it
# holds: a ``.tf`` debug root beside them does not make them another module's.
TEST_DIRECTORY = "tests"


@dataclass(frozen=True, slots=True)
class Target:
    """Where a directory a test file names goes: its output directory, and whether the build
    vendors it already (a module of the graph) or it must be copied whole (``copy_from``)."""

    place: str
    copy_from: Path | None = None
    # Why the directory cannot come along (it is inside .git or .terraform, or the user's
    # .terraformignore/--exclude leaves it out): the test file is then left out with this reason.
    refused: str | None = None


@dataclass(frozen=True, slots=True)
class Rewrite:
    """A test file as the output carries it: its bytes (None: left out, ``problem`` says why)
    and the directories it needs copied whole (output place -> source directory)."""

    data: bytes | None
    helpers: tuple[tuple[str, Path], ...] = ()
    problem: str | None = None


#: Resolves a directory a test file names (its real path) to where it goes, or None (outside
#: what the output can hold).
Locate = Callable[[Path], Target | None]


def _is_local(source: str) -> bool:
    # Terraform's local-source rule (addrs.ParseModuleSource): "./" or "../" prefixes only.
    return source.startswith(("./", "../"))


@dataclass(frozen=True, slots=True)
class _Site:
    """A string a test file names a directory with: the value, what kind, and its span."""

    value: str
    kind: str  # "module" or "mock"
    start: int = 0  # byte range of the literal in native syntax
    end: int = 0
    path: tuple[int | str, ...] = ()  # where it is in a JSON file


def _native_sites(body: Body) -> Iterator[_Site]:
    for block in body.blocks:
        if block.type == "run":
            for module in block.body.blocks_of("module"):
                yield from _site(module.body.attribute("source"), "module")
        elif block.type == "mock_provider":
            yield from _site(block.body.attribute("source"), "mock")


def _site(attr: Attribute | None, kind: str) -> Iterator[_Site]:
    if attr is None or not isinstance(attr.value, str) or attr.expr.range is None:
        return
    if "${" in attr.value or "%{" in attr.value:
        return  # not a literal: Terraform rejects it (the source must be static)
    r = attr.expr.range
    yield _Site(attr.value.replace("$${", "${").replace("%%{", "%{"), kind, r.start.byte, r.end.byte)


def _native_expressions(body: Body) -> Iterator[str]:
    for item in body.items:
        if isinstance(item, Block):
            yield from _native_expressions(item.body)
        else:
            yield from _strings(item.value)


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, (list, tuple)):  # a _Pairs object is a list of (key, value) tuples
        for v in value:
            yield from _strings(v)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(k)
            yield from _strings(v)


class _Pairs(list[tuple[str, object]]):
    """A JSON object with its keys in order and duplicates kept (json.loads' object_pairs_hook)."""


def _json_items(value: object) -> Iterator[object]:
    # A JSON block body may be one object or an array of them (Terraform's JSON syntax).
    if isinstance(value, list) and not isinstance(value, _Pairs):
        yield from value
    else:
        yield value


def _labelled(value: object) -> Iterator[_Pairs]:
    """The bodies of a labelled block type in JSON: {"label": body | [body...]} (or an array)."""
    for obj in _json_items(value):
        if isinstance(obj, _Pairs):
            for _, body in obj:
                for item in _json_items(body):
                    if isinstance(item, _Pairs):
                        yield item


def _json_sites(top: _Pairs) -> Iterator[tuple[_Pairs, int, str]]:
    """(object, index of its "source" pair, kind) for each directory a JSON test file names."""
    for key, value in top:
        if key == "run":
            for run in _labelled(value):
                for k, module in run:
                    if k != "module":
                        continue
                    for body in _json_items(module):
                        if isinstance(body, _Pairs):
                            yield from _json_source(body, "module")
        elif key == "mock_provider":
            for body in _labelled(value):
                yield from _json_source(body, "mock")


def _json_source(body: _Pairs, kind: str) -> Iterator[tuple[_Pairs, int, str]]:
    for i, (k, v) in enumerate(body):
        if k == "source" and isinstance(v, str) and "${" not in v.replace("$${", ""):
            yield body, i, kind


def _encode(value: object, indent: str = "") -> str:
    """JSON text of a parsed test file, keys in order, duplicates kept, two-space indents."""
    inner = indent + "  "
    if isinstance(value, _Pairs):
        if not value:
            return "{}"
        items = [f"{inner}{json.dumps(k, ensure_ascii=False)}: {_encode(v, inner)}" for k, v in value]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if isinstance(value, list):
        if not value:
            return "[]"
        return "[\n" + ",\n".join(inner + _encode(v, inner) for v in value) + "\n" + indent + "]"
    return json.dumps(value, ensure_ascii=False)


def _moved_modules(texts: Iterator[str], inlined: frozenset[str]) -> list[str]:
    """The inlined calls (``module.a``) the expressions of a test file refer to, sorted."""
    found: set[str] = set()
    for text in texts:
        if "module." not in text:
            continue
        try:
            refs = template_references(text)
        except ExpressionError:
            continue
        for ref in refs:
            name = ref.name(1)
            if ref.root == "module" and name is not None and f"module.{name}" in inlined:
                found.add(f"module.{name}")
    return sorted(found)


def _relocate(
    site_value: str, kind: str, module_dir: Path, here: str, locate: Locate
) -> tuple[str | None, tuple[str, Path] | None, str | None]:
    """Return the new source, a directory to copy whole, or why the file cannot come along."""
    if not _is_local(site_value):
        return site_value, None, None
    real = Path(os.path.realpath(module_dir / site_value))
    target = locate(real)
    what = "module" if kind == "module" else "mock data directory"
    if target is not None and target.refused is not None:
        return None, None, f'the {what} "{site_value}" it names {target.refused}'
    if target is None or not real.is_dir():
        return None, None, f'the {what} "{site_value}" it names is not a directory inside the configuration'
    rel = posixpath.relpath(target.place or ".", here or ".")
    new = "./" if rel == "." else (rel if rel.startswith("../") else "./" + rel)
    if site_value.endswith("/") and not new.endswith("/"):
        new += "/"
    if posixpath.normpath(new) == posixpath.normpath(site_value):
        new = site_value  # same place: keep the author's spelling
    helper = (target.place, target.copy_from) if target.copy_from is not None else None
    return new, helper, None


def rewrite_test_file(
    data: bytes,
    name: str,
    *,
    module_dir: Path,
    here: str,
    locate: Locate,
    inlined: frozenset[str],
    options: Options,
) -> Rewrite:
    """Return the test file ``name`` (its ``data``) of the module in ``module_dir`` as the output
    carries it to ``here`` (the module's output directory): each local directory it names pointing
    at where ``locate`` puts it. ``inlined``: the calls ``--inline`` merged into their callers.

    A file that cannot be read, or names a directory the output cannot hold, or (under
    ``--inline``) refers to an inlined call, is left out with the reason in ``problem``; a file
    that needs no change keeps its bytes.
    """
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return Rewrite(None, problem="it is not valid UTF-8")
    if name.endswith(".json"):
        try:
            top = json.loads(text, object_pairs_hook=_Pairs)
        except ValueError as exc:
            return Rewrite(None, problem=f"it is not valid JSON ({exc})")
        except RecursionError:  # issue 38, item 12: nested deeper than Python's json reads
            return Rewrite(None, problem="it nests arrays or objects deeper than flatten reads")
        if not isinstance(top, _Pairs):
            return Rewrite(None, problem="its top level is not a JSON object")
        moved = _moved_modules(_strings(top), inlined) if inlined else []
        if moved:
            return Rewrite(None, problem=_moved_problem(moved))
        helpers: list[tuple[str, Path]] = []
        changed = False
        for obj, i, kind in _json_sites(top):
            value = obj[i][1]
            assert isinstance(value, str)
            new, helper, problem = _relocate(value.replace("$${", "${"), kind, module_dir, here, locate)
            if problem is not None or new is None:
                return Rewrite(None, problem=problem)
            if helper is not None:
                helpers.append(helper)
            if new != value.replace("$${", "${"):
                obj[i] = ("source", escape_literal(new))
                changed = True
        out = (_encode(top) + "\n").encode("utf-8") if changed else data
        return Rewrite(out, tuple(helpers))
    # Imported here: most trees have no test file, and the build's process otherwise never
    # imports the reader (prefetch's child parses), 7 ms of a small root's start.
    from flatten.syntax.hcl_fast import parse_any_blocks

    body, diags = parse_any_blocks(text, name, options=options)
    if diags.has_errors:
        first = next(d for d in diags if d.severity.value == "error")
        return Rewrite(None, problem=f"it cannot be read ({first.summary}: {first.detail})")
    moved = _moved_modules(_native_expressions(body), inlined) if inlined else []
    if moved:
        return Rewrite(None, problem=_moved_problem(moved))
    raw = text.encode("utf-8")
    pieces: list[bytes] = []
    at = 0
    helpers = []
    for site in _native_sites(body):
        new, helper, problem = _relocate(site.value, site.kind, module_dir, here, locate)
        if problem is not None or new is None:
            return Rewrite(None, problem=problem)
        if helper is not None:
            helpers.append(helper)
        if new != site.value:
            pieces.append(raw[at : site.start])
            pieces.append(hcl_string(new).encode("utf-8"))
            at = site.end
    if not pieces:
        return Rewrite(data, tuple(helpers))
    pieces.append(raw[at:])
    bom = b"\xef\xbb\xbf" if data.startswith(b"\xef\xbb\xbf") else b""  # offsets count from after it
    return Rewrite(bom + b"".join(pieces), tuple(helpers))


def _moved_problem(moved: list[str]) -> str:
    return (
        f"it refers to {', '.join(moved)}, which --inline merged into its caller (its resources "
        "have new addresses)"
    )
