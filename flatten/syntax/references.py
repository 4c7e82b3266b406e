"""References in HCL expressions and Terraform JSON templates: find them, and rewrite them by parsing.

Rule for the whole file: a reference is found only where HCL would evaluate one (hclsyntax's
``Expression.Variables()``): never inside a string literal's literal text, a comment or a number,
never an object key written as a bare identifier, never a function name, and never a name that a
``for`` expression, a ``%{for}`` directive or the caller (``dynamic`` iterators) binds in that
scope. A reference is its root name plus every static step after it (``.attr``, ``.0``, ``[0]``,
``["key"]``); a splat or a computed index ends it. Rewriting replaces exactly the text of chosen
references and leaves every other byte alone (spec §7.3: expression-mode strings are templates;
traversal-mode and source-list strings are bare expressions).

>>> rename = lambda r: "local.b" if r.root == "var" else None
>>> rewrite_template("${var.a} var.a ${[for var in x : var]}", rename)
'${local.b} var.a ${[for var in x : var]}'
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from decimal import Decimal
from types import MappingProxyType

from flatten.lang.model import Block, Body, Call, JsonValue, Module, Reference, Scanned, Step

__all__ = [
    "KNOWN_KEPT",
    "RECORD_BLOCKS",
    "Call",
    "ExpressionError",
    "Reference",
    "Scans",
    "escape_literal",
    "expression_references",
    "has_legacy_index",
    "hcl_string",
    "json_to_hcl",
    "json_traversal",
    "literal_to_expression",
    "partial_references",
    "rewrite_expression",
    "rewrite_template",
    "scan_module",
    "share_record",
    "simplify_template",
    "single_interpolation",
    "template_calls",
    "template_references",
]

_IDENT = re.compile(r"[^\W\d][\w-]*", re.UNICODE)
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_HEREDOC = re.compile(r"<<(-?)([^\W\d][\w-]*)[ \t]*\r?\n")
_DIGITS = re.compile(r"[0-9]+")
_INDEX = re.compile(r'\[[ \t]*(?:([0-9]+)|"((?:[^"\\$%]|\\[nrt"\\])*)")[ \t]*\]')
_KEYWORDS = frozenset({"for", "in", "if", "true", "false", "null"})
# A template that is one interpolation of a name and attribute steps (``${var.a}``).
_SIMPLE = re.compile(r"\$\{([^\W\d][\w-]*)(?:\.[^\W\d][\w-]*)*\}")
_SPACE_STARTS = frozenset(" \t\r\n#/")  # what can start blank space or a comment
_TEMPLATE_MARKS = re.compile(r"[$%]")  # what a template's literal text can hold that matters
_QUOTED_MARKS = re.compile(r'[$%\\"\n]')  # and a quoted string's
_ESCAPES = MappingProxyType({"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\"})


class ExpressionError(ValueError):
    """Text that is not a readable HCL expression or template; ``offset`` says where."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(f"{message} at offset {offset}")
        self.offset = offset


class _Scanner:
    """Collect references with their offsets; ``scopes`` holds the names bound at this point."""

    def __init__(self, text: str, bound: Iterable[str] = (), functions: bool = False) -> None:
        self.text = text
        self.refs: list[Reference] = []
        self.calls: list[Call] = []
        self.functions = functions  # also collect provider-defined function names (see identifier)
        self.scopes: list[frozenset[str]] = [frozenset(bound)]
        # reading a cut expression (``partial_references``): an open heredoc keeps the
        # references of its lines
        self.partial = False

    def bound(self, name: str) -> bool:
        return any(name in s for s in self.scopes)

    # -- templates --------------------------------------------------------------------------
    def template(self, i: int, limit: int, quoted: bool) -> int:
        """Scan template text from ``i``; a quoted one stops after its closing quote."""
        text = self.text
        directives: list[str] = []
        # Only these characters change anything; the literal text between them is skipped in one
        # search (a heredoc's lines, a long string) instead of character by character.
        marks = _QUOTED_MARKS if quoted else _TEMPLATE_MARKS
        while i < limit:
            found = marks.search(text, i, limit)
            if found is None:
                i = limit
                break
            i = found.start()
            c = text[i]
            if quoted and c == "\\":
                if i + 1 >= limit:
                    raise ExpressionError("unterminated escape", i)
                i += 6 if text[i + 1] == "u" else 10 if text[i + 1] == "U" else 2
                continue
            if quoted and c == '"':
                if directives:
                    raise ExpressionError("unclosed template directive", i)
                return i + 1
            if quoted and c == "\n":
                raise ExpressionError("newline in a quoted string", i)
            if text.startswith("$${", i) or text.startswith("%%{", i):
                i += 3
                continue
            if text.startswith("${", i):
                i = self._close(self.expression(i + 2, limit, "}"), "}")
                continue
            if text.startswith("%{", i):
                i = self.directive(i + 2, limit, directives)
                continue
            i += 1
        if quoted:
            raise ExpressionError("unterminated string", i)
        if directives:
            raise ExpressionError("unclosed template directive", i)
        return i

    def directive(self, i: int, limit: int, open_: list[str]) -> int:
        text = self.text
        if text.startswith("~", i):
            i += 1
        i = self.space(i, limit)
        m = _IDENT.match(text, i, limit)
        word = m.group(0) if m else ""
        if word == "for":
            names, i = self.for_names(m.end() if m else i, limit)
            i = self._close(self.expression(i, limit, "}"), "}")
            self.scopes.append(frozenset(names))
            open_.append("for")
            return i
        if word == "if":
            open_.append("if")
            return self._close(self.expression(m.end() if m else i, limit, "}"), "}")
        if word in ("endfor", "endif", "else"):
            if word == "endfor":
                if not open_ or open_[-1] != "for":
                    raise ExpressionError("endfor without for", i)
                open_.pop()
                self.scopes.pop()
            elif word == "endif":
                if not open_ or open_[-1] != "if":
                    raise ExpressionError("endif without if", i)
                open_.pop()
            j = self.space(m.end() if m else i, limit)
            if text.startswith("~", j):
                j += 1
            return self._close(j, "}")
        raise ExpressionError("unknown template directive", i)

    def _close(self, i: int, closer: str) -> int:
        if not self.text.startswith(closer, i):
            raise ExpressionError(f"expected {closer!r}", i)
        return i + len(closer)

    def space(self, i: int, limit: int) -> int:
        text = self.text
        if i < limit and text[i] not in _SPACE_STARTS:
            return i  # most tokens follow another directly
        while i < limit:
            c = text[i]
            if c in " \t\r\n":
                i += 1
            elif c == "#" or text.startswith("//", i):
                while i < limit and text[i] != "\n":
                    i += 1
            elif text.startswith("/*", i):
                end = text.find("*/", i + 2, limit)
                if end < 0:
                    raise ExpressionError("unterminated comment", i)
                i = end + 2
            else:
                break
        return i

    def for_names(self, i: int, limit: int) -> tuple[list[str], int]:
        """Read ``k, v in`` after ``for``; return the names and the offset after ``in``."""
        names: list[str] = []
        while True:
            i = self.space(i, limit)
            if i < limit and self.text[i] == ",":
                i += 1
                continue
            m = _IDENT.match(self.text, i, limit)
            if m is None:
                raise ExpressionError("bad for expression", i)
            i = m.end()
            if m.group(0) == "in":
                return names, i
            names.append(m.group(0))

    # -- expressions ------------------------------------------------------------------------
    def expression(
        self, i: int, limit: int, stop: str, in_object: bool = False, for_body: bool = False
    ) -> int:
        """Scan an expression from ``i`` up to the unmatched character in ``stop`` (returned, not consumed).

        An empty ``stop`` scans to ``limit``. With ``:`` in ``stop``, a ``:`` answering a ``?``
        belongs to the conditional. ``in_object`` marks an object constructor body (keys).
        ``for_body`` marks what follows a ``for`` expression's ``:``, where ``if`` after a
        complete operand starts the filter clause (below).
        """
        text = self.text
        pending = 0  # unanswered "?" of conditionals
        key_position = in_object
        # Whether the last token ended an operand (a name, a number, a string, a closing
        # bracket): an identifier there cannot start another operand, so in a ``for`` body it is
        # the ``if`` keyword (hclsyntax parser.go ``finishParsingForExpr``: the value expression
        # ends at the first token no operator continues, then ``if`` is read as the keyword, also
        # when written against its parenthesis: ``v if(v.ok)``).
        operand = False
        while True:
            j = self.space(i, limit)
            if in_object and "\n" in text[i:j]:
                key_position = True  # a newline inside an object: a new item may start
            i = j
            if i >= limit:
                if stop:
                    raise ExpressionError("unterminated expression", i)
                return i
            c = text[i]
            if c in stop and not (c == ":" and pending):
                return i
            if c == "?":
                pending += 1
                i += 1
                key_position = operand = False
                continue
            if c == ":" and pending:
                pending -= 1
                i += 1
                operand = False
                continue
            if c == '"':
                i = self.template(i + 1, limit, quoted=True)
                key_position, operand = False, True
                continue
            heredoc = _HEREDOC.match(text, i, limit) if c == "<" else None
            if heredoc is not None:
                i = self.heredoc(heredoc, limit)
                key_position, operand = False, True
                continue
            if c.isdigit():
                m = _NUMBER.match(text, i, limit)
                i = m.end() if m else i + 1
                key_position, operand = False, True
                continue
            if _IDENT.match(c):
                if for_body and operand and text.startswith("if", i) and not _IDENT.match(text, i + 2, i + 3):
                    i += 2  # the filter clause: its condition is scanned as the rest of the body
                    operand = False
                    continue
                i = self.identifier(i, limit, key_position)
                key_position, operand = False, True
                continue
            if c in "([{":
                i = self.bracket(i, limit)
                key_position, operand = False, True
                continue
            if c in ")]}":
                raise ExpressionError("unbalanced brackets", i)
            if c == ",":
                key_position = in_object
                operand = False
                i += 1
                continue
            if c == ".":
                if text.startswith("...", i):
                    i += 3  # an object for's grouping mark ends the value: an operand
                    key_position, operand = False, True
                    continue
                # An attribute of a computed value ((x).a, f().a, x[0].a) or a splat (.*).
                attr = _IDENT.match(text, i + 1, limit)
                i = attr.end() if attr is not None else i + 2 if text.startswith(".*", i) else i + 1
                key_position, operand = False, True
                continue
            i += 1
            key_position = operand = False

    def bracket(self, i: int, limit: int) -> int:
        text = self.text
        opener = text[i]
        closer = {"(": ")", "[": "]", "{": "}"}[opener]
        j = self.space(i + 1, limit)
        m = _IDENT.match(text, j, limit)
        if opener in "[{" and m is not None and m.group(0) == "for":
            names, k = self.for_names(m.end(), limit)
            k = self.expression(k, limit, ":")
            self.scopes.append(frozenset(names))
            try:
                k = self.expression(k + 1, limit, closer, for_body=True)
            finally:
                self.scopes.pop()
            return self._close(k, closer)
        k = self.expression(i + 1, limit, closer, in_object=opener == "{")
        return self._close(k, closer)

    def heredoc(self, m: re.Match[str], limit: int) -> int:
        marker = m.group(2)
        end = re.compile(r"^[ \t]*" + re.escape(marker) + r"[ \t]*(?:\r?\n|$)", re.MULTILINE).search(
            self.text, m.end(), limit
        )
        if end is None:
            if self.partial:
                self.template(m.end(), limit, quoted=False)
            raise ExpressionError("unterminated heredoc", m.start())
        self.template(m.end(), end.start(), quoted=False)
        # The closing marker line's newline belongs to the surrounding expression.
        stop = end.end()
        if self.text[stop - 1 : stop] == "\n":
            stop -= 1
            if self.text[stop - 1 : stop] == "\r":
                stop -= 1
        return stop

    def identifier(self, i: int, limit: int, key_position: bool) -> int:
        text = self.text
        m = _IDENT.match(text, i, limit)
        assert m is not None
        name = m.group(0)
        j = m.end()
        k = j
        while k < limit and text[k] in " \t":
            k += 1
        if text.startswith("::", k):  # provider-defined function: provider::ns::name(...)
            parts: list[str] = []
            fn_ends = [j]
            while text.startswith("::", k):
                nm = _IDENT.match(text, k + 2, limit)
                if nm is None:
                    raise ExpressionError("bad function name", k)
                k = nm.end()
                parts.append(nm.group(0))
                fn_ends.append(k)
            if self.functions and name == "provider" and len(parts) == 2:
                # Root "provider" with steps (local name, function): no reference has that root.
                fn: tuple[Step, ...] = tuple(("attr", p) for p in parts)
                self.refs.append(Reference(name, fn, m.start(), k, tuple(fn_ends)))
            paren = k
            while paren < limit and text[paren] in " \t":
                paren += 1
            self.calls.append(Call("::".join([name, *parts]), m.start(), k, paren))
            return k
        nxt = text[k] if k < limit else ""
        if nxt == "(":
            self.calls.append(Call(name, m.start(), j, k))
            return j  # a function call; its arguments are scanned as they come
        if key_position and (nxt == ":" or (nxt == "=" and not text.startswith(("==", "=>"), k))):
            return j  # an object key written as a bare identifier is a literal string
        if name in _KEYWORDS:
            return j
        steps: list[Step] = []
        ends = [j]
        i = j
        while i < limit:
            c = text[i]
            if c == ".":
                nm = _IDENT.match(text, i + 1, limit)
                if nm is not None:
                    steps.append(("attr", nm.group(0)))
                    i = nm.end()
                    ends.append(i)
                    continue
                num = _DIGITS.match(text, i + 1, limit)
                if num is not None:  # legacy index syntax: foo.0.bar
                    steps.append(("index", int(num.group(0))))
                    i = num.end()
                    ends.append(i)
                    continue
                break  # ".*" splat
            if c == "[":
                lit = _INDEX.match(text, i, limit)
                if lit is None:
                    break  # a splat or a computed key: scanned as part of the surrounding expression
                key: str | int = int(lit.group(1)) if lit.group(1) is not None else _unescape(lit.group(2))
                steps.append(("index", key))
                i = lit.end()
                ends.append(i)
                continue
            break
        if not self.bound(name):
            self.refs.append(Reference(name, tuple(steps), m.start(), i, tuple(ends)))
        return i


def _unescape(s: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), s)


def template_references(text: str, *, bound: Iterable[str] = (), functions: bool = False) -> list[Reference]:
    """Return the references in a Terraform JSON template string, in source order.

    ``bound`` names are in scope already (a ``dynamic`` block's iterator) and are not references.
    ``functions`` adds each provider-defined function call ``provider::ns::f`` as a reference
    with root ``provider`` and steps ``ns``, ``f`` (``tail(text, 1)`` is ``::f``).
    Raises ``ExpressionError`` when the text cannot be read.

    >>> [r.root for r in template_references('${var.a} "var.b" ${"${local.c}"}')]
    ['var', 'local']
    """
    if "${" not in text and "%{" not in text:
        return []  # literal text: nothing to evaluate (most strings of a large tree)
    scanner = _Scanner(text, bound, functions)
    try:
        scanner.template(0, len(text), quoted=False)
    except (IndexError, RecursionError) as exc:
        raise ExpressionError(f"unreadable template ({exc})", 0) from None
    return sorted(scanner.refs, key=lambda r: r.start)


def template_calls(text: str, *, bound: Iterable[str] = ()) -> tuple[list[Reference], list[Call]]:
    """Return the references and the function calls of a Terraform JSON template string, each in
    source order (``template_references``, with the calls of the same scan).

    >>> refs, calls = template_calls('${lenght(var.a)} ${core::max(1)}')
    >>> [r.root for r in refs], [c.name for c in calls]
    (['var'], ['lenght', 'core::max'])
    """
    if "${" not in text and "%{" not in text:
        return [], []
    simple = _SIMPLE.fullmatch(text)
    if simple is not None:
        # ``${a.b.c}``, the commonest template, read in one match: what the scanner would find.
        name = simple.group(1)
        if name in _KEYWORDS or name in bound:
            return [], []
        steps: list[Step] = []
        ends = [simple.end(1)]
        for step in _IDENT.finditer(text, ends[0], len(text) - 1):
            steps.append(("attr", step.group(0)))
            ends.append(step.end())
        return [Reference(name, tuple(steps), 2, len(text) - 1, tuple(ends))], []
    scanner = _Scanner(text, bound)
    try:
        scanner.template(0, len(text), quoted=False)
    except (IndexError, RecursionError) as exc:
        raise ExpressionError(f"unreadable template ({exc})", 0) from None
    return sorted(scanner.refs, key=lambda r: r.start), sorted(scanner.calls, key=lambda c: c.start)


class Scans:
    """Each template of one module scanned once for every check that reads it.

    The scans come from the module's scan record (``Module.scans``, made by ``scan_module`` where
    the module is loaded and cached with it): every check of the module reads the same record,
    and none scans text the record holds. A text the record lacks (a module a later stage made,
    a string put together by a check) is scanned here and kept for the checks after it, at most
    ``limit`` of them (0: all), so that a module of one large file is not held scanned twice.
    An unreadable template raises ``ExpressionError`` each time it is asked for.
    """

    __slots__ = ("_done", "_limit", "_record")

    def __init__(self, limit: int = 0, record: Mapping[str, Scanned] | None = None) -> None:
        """``limit``: how many scans of texts outside ``record`` to keep at most, the oldest
        dropped first (0: all); ``record``: the module's scan record."""
        self._done: dict[str, Scanned] = {}
        self._limit = limit
        self._record: Mapping[str, Scanned] = record if record is not None else {}

    def calls(
        self, text: str, bound: frozenset[str] = frozenset()
    ) -> tuple[Sequence[Reference], Sequence[Call]]:
        """``template_calls(text, bound=bound)``."""
        if "${" not in text and "%{" not in text:
            return (), ()  # literal text (most strings of a module)
        found = self._record.get(text, _MISSING)
        if found is _MISSING:
            found = self._done.get(text, _MISSING)
            if found is _MISSING:
                found = _scan(text)
                self._done[text] = found
                if self._limit and len(self._done) > self._limit:
                    del self._done[next(iter(self._done))]
        if found is None:
            raise ExpressionError("unreadable template", 0)
        refs, calls = found
        if bound:
            # A name the caller binds is in scope everywhere in the text, so the scan with it
            # bound is the scan without, less the references rooted at it.
            refs = tuple(r for r in refs if r.root not in bound)
        return refs, calls

    def references(self, text: str, bound: frozenset[str] = frozenset()) -> Sequence[Reference]:
        """``template_references(text, bound=bound)``."""
        return self.calls(text, bound)[0]

    def expression(self, text: str) -> Sequence[Reference]:
        """``expression_references(text)`` of a bare expression (a ``depends_on`` item), read as
        the template ``${TEXT}`` (the form the scan record keeps it in): offsets are the
        template's, two more than the text's."""
        return self.references("${" + text + "}")


_MISSING: Scanned = ((), ())  # a sentinel (compared by identity)
RECORD_BLOCKS = 4096  # top-level blocks above which a module keeps no scan record (scan_module)
KNOWN_KEPT = 8192  # scans shared between the modules one process loads (scan_module's known)
# Arguments whose items are bare traversals or expressions rather than templates (spec §7.3).
_BARE_ITEMS = frozenset({"depends_on", "replace_triggered_by", "providers"})


def _scan(text: str) -> Scanned:
    try:
        refs, calls = template_calls(text)
    except ExpressionError:
        return None
    return tuple(refs), tuple(calls)


def scan_module(module: Module, known: dict[str, Scanned] | None = None) -> dict[str, Scanned]:
    """The scan record of ``module``: every template in it (values and object keys, at any
    depth) and every bare item of a ``depends_on``, ``replace_triggered_by`` or ``providers``
    argument (as ``${ITEM}``), each scanned once (``template_calls``); literal text is left out.

    ``known``: the scans of the modules loaded before this one by the same process (one build's
    loading, one prefetch helper), taken instead of scanning a text again and given this
    module's new ones, at most ``KNOWN_KEPT`` kept. A scan is a function of its text alone and
    immutable, so sharing it changes nothing; modules repeat their expressions (``${var.tags}``,
    a registry module called many times, generated trees), and a text seen in an earlier module
    costs a dictionary lookup (docs/performance.md, "Fifth round").

    A module of more than ``RECORD_BLOCKS`` top-level blocks (a generated file of megabytes) has
    none: its record would be several times its text, kept all build long (memtest's 10 MB
    file: 94 MiB peak without, 159 with), so its checks scan each block's text as they read it,
    a few dozen scans kept (``Scans``' limit; docs/reliability.md, "Memory").

    So a record is either empty or whole: every template of the module is in one that is not
    empty (stages/pathreads.py reads its texts instead of the module's bodies).
    """
    record: dict[str, Scanned] = {}
    if len(module.blocks) > RECORD_BLOCKS:  # read at call time (tests lower it)
        return record
    seen: dict[str, Scanned] = known if known is not None else {}

    def scan(text: str) -> None:
        found = seen.get(text, _MISSING)
        if found is _MISSING:
            found = _scan(text)
            if len(seen) >= KNOWN_KEPT:
                seen.clear()  # a bound on what a process loading many modules keeps
            seen[text] = found
        record[text] = found

    def value(v: JsonValue, bare: bool) -> None:
        if isinstance(v, str):
            if "${" in v or "%{" in v:
                if v not in record:
                    scan(v)
            elif bare and v:
                item = "${" + v + "}"
                if item not in record:
                    scan(item)
        elif isinstance(v, list):
            for x in v:
                value(x, bare)
        elif isinstance(v, dict):
            for k, x in v.items():
                value(k, False)
                value(x, bare or k in _BARE_ITEMS)

    def body(b: Body) -> None:
        for item in b.peek_items():
            if isinstance(item, Block):
                body(item.body)
            else:
                value(item.value, item.name in _BARE_ITEMS)

    for block in module.blocks:
        body(block.body)
    return record


def share_record(record: dict[str, Scanned], known: dict[str, Scanned]) -> None:
    """Make ``record`` (a module's scan record another process made: a prefetch helper, the
    module cache) hold the scans ``known`` holds for the same texts, in place, and give
    ``known`` the others (``scan_module``'s ``known``, at most ``KNOWN_KEPT``).

    A record comes back from another process unpickled, each scan a copy of its own: a tree's
    modules repeat their expressions, and 80 modules of memtest's many-modules shape held 41
    MiB of equal copies all build long (docs/reliability.md, "Memory"). The scans are equal and
    immutable, so the record reads the same.
    """
    for text, found in record.items():
        seen = known.get(text, _MISSING)
        if seen is _MISSING:
            if len(known) >= KNOWN_KEPT:
                known.clear()
            known[text] = found
        elif seen is not found:
            record[text] = seen  # a value replaced, no key added: iterating stays valid


def expression_references(
    text: str, *, bound: Iterable[str] = (), functions: bool = False
) -> list[Reference]:
    """Return the references in bare HCL expression source (a traversal or ``replace_triggered_by`` item)."""
    scanner = _Scanner(text, bound, functions)
    try:
        scanner.expression(0, len(text), "")
    except (IndexError, RecursionError) as exc:
        raise ExpressionError(f"unreadable expression ({exc})", 0) from None
    return sorted(scanner.refs, key=lambda r: r.start)


def partial_references(text: str) -> list[Reference]:
    """The references of ``text``, the start of an expression cut where HCL's partial expression
    ends (after a syntax error): those read before the text stops being readable. An open heredoc
    keeps the references of its lines read so far (parser_template.go keeps the parts read)."""
    scanner = _Scanner(text)
    scanner.partial = True
    with contextlib.suppress(ExpressionError, IndexError, RecursionError):
        scanner.expression(0, len(text), "")
    return sorted(scanner.refs, key=lambda r: r.start)


def _apply(text: str, refs: list[Reference], replace: Callable[[Reference], str | None]) -> str:
    out: list[str] = []
    at = 0
    for ref in refs:
        new = replace(ref)
        if new is None:
            continue
        out.append(text[at : ref.start])
        out.append(new)
        at = ref.end
    out.append(text[at:])
    return "".join(out)


def rewrite_template(
    text: str,
    replace: Callable[[Reference], str | None],
    *,
    bound: Iterable[str] = (),
    functions: bool = False,
) -> str:
    """Return ``text`` (a JSON template) with each reference ``replace`` answers replaced by its answer.

    ``replace`` returns the new source for the reference's whole span, or None to keep it.
    Raises ``ExpressionError`` when the text cannot be read.
    """
    return _apply(text, template_references(text, bound=bound, functions=functions), replace)


def rewrite_expression(
    text: str,
    replace: Callable[[Reference], str | None],
    *,
    bound: Iterable[str] = (),
    functions: bool = False,
) -> str:
    """Return bare expression source with references replaced, as ``rewrite_template`` does."""
    return _apply(text, expression_references(text, bound=bound, functions=functions), replace)


_LEGACY_INDEX = re.compile(r"\.[0-9]")


def json_traversal(text: str) -> str:
    """Return a native static traversal in the form Terraform's JSON syntax reads: ``a.0.b`` -> ``a[0].b``.

    Native syntax accepts HCL's legacy index steps (``aws_instance.a.0``), but in a ``.tf.json``
    file the string of a traversal-only argument (``depends_on``, ``ignore_changes``, ``provider``,
    ``moved.from``, ``providers`` map items, ...) is read by ``hclsyntax.ParseTraversalAbs``, which
    does not: Terraform rejects it with "Invalid expression" (docs/conversion.md). Every other byte
    is kept.

    >>> json_traversal("aws_instance.a.0")
    'aws_instance.a[0]'
    >>> json_traversal('scaling_config.0.desired_size["k.0"]')
    'scaling_config[0].desired_size["k.0"]'
    """
    if _LEGACY_INDEX.search(text) is None:
        return text
    try:
        refs = expression_references(text)
    except ExpressionError:
        return text
    out: list[str] = []
    at = 0
    for ref in refs:
        for k, (kind, key) in enumerate(ref.steps, start=1):
            start, end = ref.ends[k - 1], ref.ends[k]
            if kind == "index" and text.startswith(".", start):
                out.append(text[at:start])
                out.append(f"[{key}]")
                at = end
    out.append(text[at:])
    return "".join(out)


def has_legacy_index(text: str) -> bool:
    """Whether a static traversal holds a legacy index step (``a.0``), which JSON syntax rejects.

    >>> has_legacy_index("aws_instance.a.0"), has_legacy_index('a["x.0"]'), has_legacy_index("a[0]")
    (True, False, False)
    """
    return json_traversal(text) != text


def escape_literal(s: str) -> str:
    """Return ``s`` as literal template text: ``${`` and ``%{`` are escaped.

    >>> escape_literal("a ${b} %{c}")
    'a $${b} %%{c}'
    """
    return s.replace("${", "$${").replace("%{", "%%{")


def hcl_string(s: str) -> str:
    """Return ``s`` as a quoted HCL string literal (escapes and template sequences escaped).

    >>> hcl_string('a"b${c}')
    '"a\\\\"b$${c}"'
    """
    out = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return '"' + escape_literal(out.replace("\t", "\\t")) + '"'


_SIMPLE_STRING = re.compile(r'(?<!\$)\$\{"([^"\\$%\n{}]*)"\}')


def simplify_template(text: str) -> str:
    """Return ``text`` with every ``${"literal"}`` sequence folded into the literal text around it.

    This holds at any depth (also in quoted strings inside expressions) because the folded text
    has no character that needs escaping in either place.

    >>> simplify_template('${"modules/net"}/x.txt $${"kept"} ${file("${"m"}/a")}')
    'modules/net/x.txt $${"kept"} ${file("m/a")}'
    """
    return _SIMPLE_STRING.sub(lambda m: m.group(1), text) if '${"' in text else text


def literal_to_expression(value: JsonValue) -> JsonValue:
    """Return a literal-mode JSON value (a variable ``default``) as the same value in expression mode.

    >>> literal_to_expression({"a${": ["${x}", 1]})
    {'a$${': ['$${x}', 1]}
    """
    if isinstance(value, str):
        return escape_literal(value)
    if isinstance(value, list):
        return [literal_to_expression(v) for v in value]
    if isinstance(value, dict):
        return {escape_literal(k): literal_to_expression(v) for k, v in value.items()}
    if isinstance(value, (bool, int, Decimal)) or value is None:
        return value
    return value  # pragma: no cover - JSON values only


def _sequence_end(text: str, i: int) -> int:
    """Return the offset after the ``${...}``/``%{...}`` sequence starting at ``i``."""
    scanner = _Scanner(text)
    n = len(text)
    try:
        if text.startswith("${", i):
            return scanner._close(scanner.expression(i + 2, n, "}"), "}")
        # One sequence on its own: a closing directive closes a block opened in an earlier one.
        word = re.match(r"~?\s*([A-Za-z_]*)", text[i + 2 :])
        opened = {"endif": ["if"], "endfor": ["for"]}.get(word.group(1) if word else "", [])
        if opened == ["for"]:
            scanner.scopes.append(frozenset())
        return scanner.directive(i + 2, n, opened)
    except (IndexError, RecursionError) as exc:
        raise ExpressionError(f"unreadable template ({exc})", i) from None


def single_interpolation(text: str) -> str | None:
    """Return the expression source of a template that is exactly one ``${...}``, else None.

    >>> single_interpolation("${var.a}"), single_interpolation("x${var.a}")
    ('var.a', None)
    """
    if not text.startswith("${") or text.startswith("${~"):
        return None
    try:
        end = _sequence_end(text, 0)
    except ExpressionError:
        return None
    if end != len(text) or text[end - 2] == "~":
        return None
    return text[2:-1].strip()


def _quoted_template(text: str) -> str:
    out: list[str] = ['"']
    i = 0
    n = len(text)
    while i < n:
        if text.startswith(("$${", "%%{"), i):
            out.append(text[i : i + 3])
            i += 3
            continue
        if text.startswith(("${", "%{"), i):
            end = _sequence_end(text, i)
            out.append(text[i:end])
            i = end
            continue
        c = text[i]
        out.append({"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(c, c))
        i += 1
    out.append('"')
    return "".join(out)


def json_to_hcl(value: JsonValue) -> str:
    """Return native HCL source for an expression-mode JSON value (templates become quoted strings).

    Raises ``ExpressionError`` when a template cannot be read.

    >>> json_to_hcl({"a": ["${var.x}", 1, "n=${var.n}"], "${k}": None})
    '{"a" = [(var.x), 1, "n=${var.n}"], (k) = null}'
    """
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, Decimal)):
        return str(value)
    if isinstance(value, str):
        inner = single_interpolation(value)
        return f"({inner})" if inner is not None else _quoted_template(value)
    if isinstance(value, list):
        return "[" + ", ".join(json_to_hcl(v) for v in value) + "]"
    items = ", ".join(f"{json_to_hcl(k)} = {json_to_hcl(v)}" for k, v in value.items())
    return "{" + items + "}"
