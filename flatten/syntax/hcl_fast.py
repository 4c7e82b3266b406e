"""A fast reader for the common path of native syntax, agreeing exactly with ``hcl.parse_native``.

Rule for the whole file: this reader either returns exactly the ``(Body, Diagnostics)`` that
``parse_native`` (python-hcl2, the reference) returns for the same text, or it declines and the
reference runs. It is a hand-written scanner plus recursive-descent reader that only finds the
structure of bodies and the extent of each expression: literals are decoded (numbers, quoted
templates and heredocs through ``_hcl_templates``, tuples, objects with static keys) and every
other expression is kept as ``"${" + exact source + "}"`` (spec §7, python-hcl2-notes §1.5).

It accepts a strict subset of what both python-hcl2 and HCL accept: anything unusual (a syntax
python-hcl2 reads differently from HCL, a rewrite ``hcl._prepare`` would make, non-ASCII outside
strings and comments, any construct that would produce a diagnostic) raises ``_Unsure``, and
python-hcl2 reads that top-level item's piece of the file (``read_in_pieces``), or the whole
file through ``parse_native`` when a piece cannot vouch for the result.
``tests/syntax/test_hcl_fast.py`` compares both readers, ranges and diagnostics included, over
every corpus file and generated modules; ``tests/syntax/test_hcl_pieces.py`` the pieces with
the whole-file parse.
"""

from __future__ import annotations

import bisect
import re
from array import array
from decimal import Decimal
from itertools import accumulate
from types import MappingProxyType

from flatten.lang.blocks import top_schema
from flatten.lang.diagnostics import Diagnostics
from flatten.lang.fields import BlockSchema, Mode, Requirement, generic_schema
from flatten.lang.model import (
    Attribute,
    Block,
    Body,
    JsonValue,
    Key,
    Pos,
    Range,
    make_attribute_at,
    make_attribute_on_line,
    make_block_at,
    make_body_at,
    make_pos,
    make_range,
    make_range_at,
    range_key,
)
from flatten.lang.options import Options
from flatten.syntax._hcl_shapes import other_end
from flatten.syntax._hcl_templates import (
    Literal,
    Part,
    Sequence,
    TemplateError,
    _flush_heredoc,
    _sequence,
    escape_template,
    json_template,
    negate_number,
    parse_number,
    quoted_parts,
)
from flatten.syntax.evaluate import constant_template
from flatten.syntax.references import json_traversal
from flatten.syntax.sourcetext import SourceText, content, length

__all__ = ["parse", "read_fast", "read_in_pieces"]

# The model's objects are built with model.make_* (through their slots): the same objects
# as the dataclass constructors give, in about a third of the time (docs/performance.md).


class _Unsure(Exception):
    """The fast reader cannot vouch for this text; the reference parser decides."""


# Node kinds of the reader's small expression tree: (kind, start, end, payload).
_NUM = 0  # payload: (value, is a plain integer token as python-hcl2 lexes it)
_BOOL = 1  # true / false / null; payload: the value
_IDENT = 2  # a bare identifier (keywords never reach here)
_TRAV = 3  # a static traversal as hcl.py's is_traversal accepts it
_STR = 4  # a quoted template
_HEREDOC = 5  # payload: True for <<-
_TUPLE = 6  # payload: list of nodes
_OBJECT = 7  # payload: list of (key node, value node)
_OTHER = 8  # anything else: kept as source

_Node = tuple[int, int, int, object]

# python-hcl2 lexes these as keywords; as identifiers in expressions they are left to it.
_KEYWORDS = frozenset(("if", "in", "for", "for_each", "else", "endif", "endfor"))
_LITERALS = MappingProxyType({"true": True, "false": False, "null": None})

_WS = re.compile(r"(?:[ \t]|\r(?=\n))*")
# Newlines and comments, where python-hcl2's grammar takes a new_line_or_comment.
_GAP = re.compile(r"(?:[ \t]|\r(?=\n)|\n|(?:#|//)[^\n\x00]*(?:\n|(?=\x00))|/\*.*?\*/)*", re.S)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_AFTER_NUMBER = re.compile(r"[A-Za-z0-9_.]")
_DIGITS = re.compile(r"[0-9]+")
# Binary operators; a newline may precede all but "-" (python-hcl2's postlexer merges it).
_BINOP = re.compile(r"==|!=|<=|>=|&&|\|\||[-+*/%<>]")
_STRING_CHARS = re.compile(r"(?:[^\"\\$%\n\r\x00]+|\\[^\n\r\x00]|\$\$\{|%%\{|\$(?!\{)|%(?!\{))*")
_HEREDOC_OPEN = re.compile(r"<<(-?)([A-Za-z][A-Za-z0-9._-]*)\r?\n")
_DOUBLE_UNARY = re.compile(r"([!-])(?=[ \t]*[!-])")
_UNARY_CONTEXT = frozenset("=([{,:?!-+*/%<>&|\n")
_NUMBER_CHARS = frozenset("0123456789")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789-")
_NAME_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")


_number = parse_number  # one definition for both readers


def _number_key(value: int | Decimal) -> str:
    # Must agree with hcl._number_key.
    return str(value) if isinstance(value, int) else format(value.normalize(), "f")


# One reference (attribute access only), number or plain quoted string.
_SIMPLE = re.compile(
    r"([A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z_][A-Za-z0-9_-]*)*)(?![A-Za-z0-9_.\[(:-])"
    r"|([0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?)(?![A-Za-z0-9_.\[])"
    r'|("[^"\\$%\n\r\x00]*")(?![.\[])'
).match
# An object element's name key and its "=" (object_key: a name, not a literal, then "=" or ":").
_NAME_EQUALS = re.compile(
    r"(?!(?:true|false|null)(?![A-Za-z0-9_-]))([A-Za-z_][A-Za-z0-9_-]*+)[ \t]*+=(?![=>])[ \t]*+"
).match
_PLAIN_LABEL = re.compile(r'"([^"\\$%{}\n\r\x00]*)"').match
_PLUS_ONE = (1).__add__
# Lines whose ``other_end`` answer a reader keeps (``_Reader.expr``): a module's repeated lines
# are far fewer; a 10 MB file of distinct computed lines would otherwise keep each line's rest.
_SHAPES_KEPT = 4096
_HEREDOC_SPECIAL = re.compile(r"\$\$\{|%%\{|[$%]\{|\n")


def heredoc_parts(body: str, offset: int, flush_indent: bool) -> list[Part]:
    """Return ``_hcl_templates.heredoc_parts(body, offset, flush_indent)``, scanning by regex.

    The same parts: literal runs split after each newline and at each sequence, ``$${``/``%%{``
    kept in the literal (decoded to ``${``/``%{``), sequences as exact source slices. A literal
    is one slice of the body, its raw text and value the same string unless it holds an escape.
    """
    parts: list[Part] = []
    lit_start = 0  # where the literal run being read starts
    escaped = False  # whether it holds a "$${" or "%%{"
    i = 0
    n = len(body)
    search = _HEREDOC_SPECIAL.search
    while True:
        m = search(body, i)
        if m is None:
            break
        s = m.start()
        c = body[s]
        if c == "\n":
            i = s + 1
            parts.append(_literal(body, lit_start, i, escaped, offset))
            lit_start = i
            escaped = False
        elif body[s + 1] == c:  # "$${" or "%%{"
            escaped = True
            i = s + 3
        else:
            if s > lit_start:
                parts.append(_literal(body, lit_start, s, escaped, offset))
            try:
                seq, i = _sequence(body, s, n)
            except TemplateError as exc:
                exc.offset += offset
                exc.end += offset
                raise
            parts.append(Sequence(seq.text, seq.start + offset, seq.trim_before, seq.trim_after))
            lit_start = i
            escaped = False
    if lit_start < n:
        parts.append(_literal(body, lit_start, n, escaped, offset))
    if flush_indent:
        _flush_heredoc(parts)
    return parts


def _literal(body: str, start: int, end: int, escaped: bool, offset: int) -> Literal:
    raw = body[start:end]
    # Left to right, as the scan found them: "$$${" is "$" and the escape "$${".
    value = raw.replace("$${", "${").replace("%%{", "%{") if escaped else raw
    return Literal(raw, value, offset + start)


def _blanks_operators(text: str) -> bool:
    """Return whether ``hcl._prepare`` would blank a doubled unary operator in ``text``."""
    if not ("!" in text or "- " in text or "--" in text):
        return False
    for m in _DOUBLE_UNARY.finditer(text):
        i = m.start()
        if text[i] == "!" and text[i + 1 : i + 2] == "=":
            continue
        j = i - 1
        while j >= 0 and text[j] in " \t":
            j -= 1
        if text[i] == "-" and j >= 0 and text[j] not in _UNARY_CONTEXT and text[j - 1 : j + 1] != "${":
            continue
        return True
    return False


class _Reader:
    """One file: the scanner, the reader and the per-mode conversions."""

    def __init__(self, text: str, filename: str) -> None:
        # A sentinel no rule accepts: no bounds checks needed (a SourceText has it already).
        self.text = text if isinstance(text, SourceText) else text + "\x00"
        self.n = length(text)
        self.filename = filename
        self.bom = 1 if text[:1] == "\ufeff" else 0
        # An array, not a list: a list of a large file's line offsets was two int objects' worth
        # a line (36 bytes each, 14 MB for 400,000 lines; docs/reliability.md, "Memory").
        # Each line's length plus its newline, summed: no Python-level step per line.
        self.line_starts = array("q", [0])
        self.line_starts.extend(accumulate(map(_PLUS_ONE, map(len, text.split("\n")[:-1]))))
        self.ascii = text.isascii()
        self.line_bytes: array[int] | None = None
        # One object per distinct string of the file (names, expression sources, keys): a big
        # file repeats them by the thousand, and a short string costs 50 to 90 bytes each time.
        # Dropped with the reader, so nothing outlives the file.
        self.memo: dict[str, str] = {}
        self.share = self.memo.setdefault
        # ``other_end``'s answers by the rest of the line it read (``expr``), for this file only.
        self.shapes: dict[str, int] = {}

    # -- positions (must agree with hcl._Source) ----------------------------------------------

    def pos(self, i: int) -> Pos:
        line = bisect.bisect_right(self.line_starts, i) - 1
        start = self.line_starts[line]
        if self.ascii:  # no BOM either
            return make_pos(line + 1, i - start + 1, i)
        column = i - start + 1
        if self.line_bytes is None:
            text = self.text
            acc = 0
            sizes = array("q", [0])
            for a, b in zip(self.line_starts, self.line_starts[1:], strict=False):
                acc += len(text[a:b].encode("utf-8", "surrogatepass"))
                sizes.append(acc)
            self.line_bytes = sizes
        byte = self.line_bytes[line] + len(self.text[start:i].encode("utf-8", "surrogatepass"))
        if line == 0:
            column -= self.bom
        return make_pos(line + 1, max(column, 1), byte)

    def range(self, start: int, end: int) -> Range:
        if self.ascii and end >= start:  # pos() twice, in one call (77,000 ranges for 1.9 MB)
            starts = self.line_starts
            a = bisect.bisect_right(starts, start) - 1
            b = bisect.bisect_right(starts, end, a) - 1
            return make_range_at(
                self.filename, a + 1, start - starts[a] + 1, start, b + 1, end - starts[b] + 1, end
            )
        return make_range(self.filename, self.pos(start), self.pos(end))

    def key(self, start: int, end: int) -> Key:
        """``self.range(start, end)``'s key, without making the Range (model.range_key)."""
        if self.ascii and end >= start:
            starts = self.line_starts
            a = bisect.bisect_right(starts, start) - 1
            s = starts[a]
            if a + 1 < len(starts) and end >= starts[a + 1]:
                b = bisect.bisect_right(starts, end, a) - 1
                return range_key(a + 1, start - s + 1, start, b + 1, end - starts[b] + 1, end)
            return range_key(a + 1, start - s + 1, start, a + 1, end - s + 1, end)  # on one line
        p, q = self.pos(start), self.pos(end)
        return range_key(p.line, p.column, p.byte, q.line, q.column, q.byte)

    def node_key(self, node: _Node) -> Key:
        start, end = node[1], node[2]
        text = self.text
        while end > start and text[end - 1] in "\r\n":
            end -= 1  # a heredoc token ends with its newline; the expression does not
        return self.key(start, end)

    def node_range(self, node: _Node) -> Range:
        start, end = node[1], node[2]
        text = self.text
        while end > start and text[end - 1] in "\r\n":
            end -= 1  # a heredoc token ends with its newline; the expression does not
        return self.range(start, end)

    # -- scanning ------------------------------------------------------------------------------

    # Each tests the next character first: most calls find none to skip, and a string test is
    # a fraction of a regex match.

    def ws(self, i: int) -> int:
        text = self.text
        if text[i] not in " \t\r":
            return i
        return _WS.match(text, i).end()  # type: ignore[union-attr]

    def gap(self, i: int) -> int:
        text = self.text
        if text[i] not in " \t\r\n#/":
            return i
        return _GAP.match(text, i).end()  # type: ignore[union-attr]

    def name_at(self, i: int) -> int:
        m = _NAME.match(self.text, i)
        if m is None:
            raise _Unsure
        return m.end()

    # -- bodies --------------------------------------------------------------------------------

    def file(self, schema: BlockSchema) -> Body:
        text = self.text
        i = self.bom
        i = self.gap(i)
        items: list[Attribute | Block] = []
        attrs: set[str] = set()
        blocks: set[str] = set()
        while i < self.n:
            item, end = self.item(i, schema, attrs, blocks)
            items.append(item)
            j = self.gap(end)
            if j >= self.n and text[j] == "\x00":
                i = j
                break
            if "\n" not in text[end - 1 : j]:
                raise _Unsure  # items must end with a newline
            i = j
        if i != self.n:
            raise _Unsure
        return make_body_at(tuple(items), self.filename, self.key(0, self.n))

    def item(
        self, i: int, schema: BlockSchema, attrs: set[str], blocks: set[str]
    ) -> tuple[Attribute | Block, int]:
        text = self.text
        m = _NAME.match(text, i)
        if m is None:
            raise _Unsure
        name_end = m.end()
        name = text[i:name_end]
        name = self.share(name, name)
        j = name_end if text[name_end] not in " \t\r" else _WS.match(text, name_end).end()  # type: ignore[union-attr]
        c = text[j]
        if c == "=":
            if text[j + 1] in "=>":
                raise _Unsure
            mode = schema.attribute_mode(name)
            if mode is None or name in attrs or name in blocks:
                raise _Unsure
            attrs.add(name)
            j += 1
            if text[j] in " \t\r":
                j = _WS.match(text, j).end()  # type: ignore[union-attr]
            value, end = self.expr(j, False)
            converted = self.expr_value(value) if mode is Mode.EXPR else self.convert(value, mode)
            if mode is Mode.LITERAL and name == "source" and not isinstance(converted, str):
                raise _Unsure  # a module source that is no string: hcl._Converter.attribute decodes it
            if not self.ascii:
                name_key = self.key(i, name_end)
                return make_attribute_at(name, converted, self.filename, name_key, self.node_key(value)), end
            # The name and the value start on one line: one search for both keys (key()).
            starts = self.line_starts
            a = bisect.bisect_right(starts, i) - 1
            s = starts[a]
            start, stop = value[1], value[2]
            while stop > start and text[stop - 1] in "\r\n":
                stop -= 1  # a heredoc token ends with its newline; the expression does not
            b = a
            if a + 1 < len(starts) and stop >= starts[a + 1]:
                b = bisect.bisect_right(starts, stop, a) - 1
            attribute = make_attribute_on_line(
                name,
                converted,
                self.filename,
                a + 1,
                i - s + 1,
                i,
                name_end,
                start,
                b + 1,
                stop - starts[b] + 1,
                stop,
            )
            return attribute, end
        # A block: labels, then "{" on the same line.
        labels: list[str] = []
        label_keys: list[Key] = []
        last_end = name_end
        while c != "{":
            if c == '"' and (m := _PLAIN_LABEL(text, j)) is not None:
                end = m.end()  # what string() and parts() give a label without escapes or sequences
                labels.append(m.group(1))
            elif c == '"':
                end = self.string(j)
                parts = self.parts(j, end)
                if any(not isinstance(p, Literal) for p in parts):
                    raise _Unsure
                labels.append("".join(p.value for p in parts if isinstance(p, Literal)))
            elif c in _NAME_START:
                end = self.name_at(j)
                labels.append(text[j:end])
            else:
                raise _Unsure
            label_keys.append(self.key(j, end))
            last_end = end
            j = self.ws(end)
            if j == end and text[j] != "{":
                raise _Unsure  # labels run together
            c = text[j]
        nested = schema.nested(name, len(labels))
        if nested is None or len(labels) != len(nested.labels) or name in attrs:
            raise _Unsure
        blocks.add(name)
        brace = j
        body_items: list[Attribute | Block] = []
        inner_attrs: set[str] = set()
        inner_blocks: set[str] = set()
        k = self.gap(brace + 1)
        if "\n" in text[brace + 1 : k]:
            # A multi-line body: each item ends with a newline, "}" starts its own line.
            while text[k] != "}":
                item, end = self.item(k, nested, inner_attrs, inner_blocks)
                body_items.append(item)
                k = self.gap(end)
                if "\n" not in text[end - 1 : k]:
                    raise _Unsure
        elif text[k] != "}":
            # A single-line body holds one argument.
            if k != self.ws(brace + 1):
                raise _Unsure
            item, end = self.item(k, nested, inner_attrs, inner_blocks)
            if not isinstance(item, Attribute) or text[end - 1] == "\n":
                raise _Unsure
            body_items.append(item)
            k = self.ws(end)
            if text[k] != "}":
                raise _Unsure
        close = k + 1
        body = make_body_at(tuple(body_items), self.filename, self.key(brace, close))
        # The definition range: from the type to the end of the last label.
        def_key = self.key(i, last_end)
        return make_block_at(name, tuple(labels), body, self.filename, def_key, tuple(label_keys), ()), close

    # -- expressions ---------------------------------------------------------------------------
    # ``nl``: newlines are ignored here (inside parentheses, brackets, calls, for expressions).
    # Each function returns a node and the end of its last token; trailing space is not consumed.

    def expr(self, i: int, nl: bool) -> tuple[_Node, int]:
        text = self.text
        m = _SIMPLE(text, i)
        if m is not None:
            # The common case: one reference, number or plain string that certainly ends here.
            end = m.end()
            c = text[end] if text[end] not in " \t" else text[_WS.match(text, end).end()]  # type: ignore[union-attr]
            if c in ",)]}" or (not nl and (c in "\n#\x00" or text.startswith("\r\n", end) or c == "/")):
                if c == "/" and not text.startswith("//", _WS.match(text, end).end()):  # type: ignore[union-attr]
                    pass
                else:
                    kind = m.lastindex
                    word = m.group()
                    if kind == 1:
                        if "." not in word:
                            if word in _LITERALS:
                                return (_BOOL, i, end, _LITERALS[word]), end
                            if word not in _KEYWORDS:
                                return (_IDENT, i, end, None), end
                        elif not _KEYWORDS.intersection(word.split(".")):
                            return (_TRAV, i, end, None), end
                    elif kind == 2:
                        return (_NUM, i, end, (_number(word), m.group(3) is None and m.group(4) is None)), end
                    else:
                        return (_STR, i, end, None), end
        # other_end reads no further than the end of the line (_hcl_shapes): the rest of a line
        # seen before in this file ends where it ended then. A module repeats its lines by the
        # dozen (``count = var.n > 0 ? 1 : 0`` in every resource): flat 200 asks other_end 5,800
        # times instead of 24,800, hier 200 8,400 instead of 50,200 (docs/performance.md).
        eol = text.find("\n", i)
        rest = text[i : eol + 1] if eol >= 0 else text[i:]
        shape = self.shapes.get(rest)
        if shape is None:
            end = other_end(text, i)
            if len(self.shapes) >= _SHAPES_KEPT:
                self.shapes.clear()  # a bound on what a file of distinct lines keeps
            self.shapes[rest] = end - i if end >= 0 else -1
        else:
            end = i + shape if shape >= 0 else -1
        if end >= 0:
            # A common computed shape on one line (_hcl_shapes): kept as source, so only its end
            # matters; it ends here when the same terminators follow as for _SIMPLE.
            k = end if text[end] not in " \t" else _WS.match(text, end).end()  # type: ignore[union-attr]
            c = text[k]
            if c in ",)]}" or (not nl and (c in "\n#\x00" or text.startswith("//", k))):
                return (_OTHER, i, end, None), end
        node, end = self.binary(i, nl)
        if text[end - 1] == "\n":
            return node, end  # a heredoc ended it
        j = self.ws(end)
        if text[j] != "?":
            return node, end
        k = self.gap(j + 1) if nl else self.ws(j + 1)
        _, e = self.expr(k, nl)
        if text[e - 1] == "\n":
            raise _Unsure
        k = self.gap(e) if nl else self.ws(e)
        if text[k] != ":" or text[k + 1] == ":":
            raise _Unsure
        k = self.gap(k + 1) if nl else self.ws(k + 1)
        _, end = self.expr(k, nl)
        return (_OTHER, i, end, None), end

    def binary(self, i: int, nl: bool) -> tuple[_Node, int]:
        text = self.text
        node, end = self.unary(i, nl)
        first = node
        while text[end - 1] != "\n":
            j = self.ws(end)
            m = _BINOP.match(text, j)
            if m is not None and m.group() == "/" and text[j + 1] in "/*":
                m = None  # a comment
            if m is None and nl:
                # python-hcl2 merges a newline into a following operator other than "-".
                j2 = self.gap(j)
                if j2 != j:
                    m = _BINOP.match(text, j2)
                    if m is not None and m.group() == "-":
                        m = None
            if m is None:
                break
            op = m.group()
            if op == "<" and text[m.end()] == "<":
                raise _Unsure
            if op in ("-", "*", "/", "%", "+", "<", ">") and text[m.end()] == "=":
                raise _Unsure
            if op == "-" and text[m.end()] in _NUMBER_CHARS:
                raise _Unsure  # python-hcl2 may lex "-1.5" here as one number
            k = self.gap(m.end()) if nl else self.ws(m.end())
            _, end = self.unary(k, nl)
            node = (_OTHER, i, end, None)
        if node is first:
            return first, end
        return node, end

    def unary(self, i: int, nl: bool) -> tuple[_Node, int]:
        text = self.text
        c = text[i]
        if c == "-" or c == "!":
            if c == "-" and text[i + 1] in _NUMBER_CHARS:
                # python-hcl2 lexes "-1" as one number token.
                return self.number(i)
            j = self.ws(i + 1)
            if text[j] in "-!" or j == self.n:
                raise _Unsure
            operand, end = self.term(j, nl)
            if c == "-" and operand[0] == _NUM:
                number: int | Decimal = operand[3][0]  # type: ignore[index]
                return (_NUM, i, end, (negate_number(number), False)), end
            return (_OTHER, i, end, None), end
        return self.term(i, nl)

    def number(self, i: int) -> tuple[_Node, int]:
        m = _NUMBER.match(self.text, i)
        if m is None:
            raise _Unsure
        end = m.end()
        if _AFTER_NUMBER.match(self.text, end):
            raise _Unsure
        raw = m.group()
        return (_NUM, i, end, (_number(raw), m.group(1) is None and m.group(2) is None)), end

    def term(self, i: int, nl: bool) -> tuple[_Node, int]:
        text = self.text
        c = text[i]
        node: _Node
        if c in _NAME_START:
            end = self.name_at(i)
            name = text[i:end]
            if name in _LITERALS:
                if text[end] in ".[":
                    raise _Unsure
                return (_BOOL, i, end, _LITERALS[name]), end
            if name in _KEYWORDS:
                raise _Unsure
            if text[end] == ":" and text[end + 1] == ":":
                raise _Unsure  # namespaced functions are left to the reference
            j = self.ws(end)
            if text[j] == "(":
                end = self.call(j)
                node = (_OTHER, i, end, None)
            else:
                node = (_IDENT, i, end, None)
        elif c in _NUMBER_CHARS:
            return self.number(i)
        elif c == '"':
            end = self.string(i)
            if text[end] in ".[":
                raise _Unsure
            if "\\" in text[i:end]:
                self.parts(i, end)  # hcl.py reports a bad escape in any string it keeps as source
            return (_STR, i, end, None), end
        elif c == "(":
            _, e = self.expr(self.gap(i + 1), True)
            k = self.gap(e)
            if text[k] != ")":
                raise _Unsure
            end = k + 1
            node = (_OTHER, i, end, None)
        elif c == "[":
            node, end = self.tuple_cons(i)
        elif c == "{":
            node, end = self.object_cons(i)
        elif c == "<":
            return self.heredoc(i)
        else:
            raise _Unsure
        return self.postfix(node, end)

    def postfix(self, node: _Node, end: int) -> tuple[_Node, int]:
        text = self.text
        c = text[end]
        if c != "." and c != "[":
            return node, end
        start = node[1]
        trav = node[0] == _IDENT
        while True:
            c = text[end]
            if c == ".":
                d = text[end + 1]
                if d == ".":
                    break  # "..." after the last argument
                if d == "*":
                    end += 2
                    trav = False
                elif d in _NUMBER_CHARS:
                    m = _DIGITS.match(text, end + 1)
                    assert m is not None
                    e = m.end()
                    if text[e] in "eE" or (text[e] == "." and text[e + 1] in _NUMBER_CHARS):
                        raise _Unsure
                    if text[e] in _NAME_START:
                        raise _Unsure
                    end = e
                elif d in _NAME_START:
                    e = self.name_at(end + 1)
                    if text[end + 1 : e] in _KEYWORDS:
                        raise _Unsure
                    end = e
                else:
                    raise _Unsure
            elif c == "[":
                if text.startswith("[*]", end):
                    end += 3
                    trav = False
                    continue
                key, e = self.expr(self.gap(end + 1), True)
                k = self.gap(e)
                if text[k] != "]":
                    raise _Unsure
                end = k + 1
                if trav:
                    kind = key[0]
                    if kind == _NUM:
                        trav = key[3][1]  # type: ignore[index]
                    elif kind == _STR:
                        trav = all(isinstance(p, Literal) for p in self.parts(key[1], key[2]))
                    else:
                        trav = kind in (_IDENT, _TRAV)
            else:
                break
        return (_TRAV if trav else _OTHER, start, end, None), end

    def call(self, i: int) -> int:
        """Return the end of the argument list starting at ``i`` (``(``)."""
        text = self.text
        j = self.gap(i + 1)
        if text[j] == ")":
            return j + 1
        while True:
            _, e = self.expr(j, True)
            k = self.gap(e)
            c = text[k]
            if c == ",":
                j = self.gap(k + 1)
                if text[j] == ")":
                    return j + 1
            elif c == ")":
                return k + 1
            elif text.startswith("...", k):
                k = self.gap(k + 3)
                if text[k] != ")":
                    raise _Unsure
                return k + 1
            else:
                raise _Unsure

    def is_for(self, j: int) -> bool:
        text = self.text
        return text.startswith("for", j) and text[j + 3] in " \t\n"

    def for_intro(self, j: int) -> int:
        """Read ``for a, b in coll :`` from ``j``; return where the next expression starts."""
        text = self.text
        j = self.gap(j + 3)
        for n in range(2):
            e = self.name_at(j)
            if text[j:e] in _KEYWORDS or text[j:e] in _LITERALS:
                raise _Unsure
            k = self.ws(e)
            if n == 0 and text[k] == ",":
                j = self.ws(k + 1)
                continue
            j = self.gap(e)
            break
        if not (text.startswith("in", j) and text[j + 2] in " \t\n"):
            raise _Unsure
        _, e = self.expr(self.gap(j + 2), True)
        k = self.gap(e)
        if text[k] != ":" or text[k + 1] == ":":
            raise _Unsure
        return self.gap(k + 1)

    def for_tail(self, e: int, close: str) -> int:
        """Read an optional ``if cond`` and the closing bracket after the body's last token."""
        text = self.text
        k = self.gap(e)
        if text.startswith("if", k) and text[k + 2] in " \t\n(":
            _, e = self.expr(self.gap(k + 2), True)
            k = self.gap(e)
        if text[k] != close:
            raise _Unsure
        return k + 1

    def tuple_cons(self, i: int) -> tuple[_Node, int]:
        text = self.text
        j = self.gap(i + 1)
        if self.is_for(j):
            _, e = self.expr(self.for_intro(j), True)
            end = self.for_tail(e, "]")
            return (_OTHER, i, end, None), end
        items: list[_Node] = []
        while text[j] != "]":
            node, e = self.expr(j, True)
            items.append(node)
            k = self.gap(e)
            if text[k] == ",":
                j = self.gap(k + 1)
            elif text[k] == "]":
                j = k
            else:
                raise _Unsure
        return (_TUPLE, i, j + 1, items), j + 1

    def object_cons(self, i: int) -> tuple[_Node, int]:
        text = self.text
        j = self.gap(i + 1)
        if self.is_for(j):
            _, e = self.expr(self.for_intro(j), True)
            k = self.gap(e)  # HCL ignores newlines inside a for expression, before "=>" too
            if not text.startswith("=>", k):
                raise _Unsure
            _, e = self.expr(self.gap(k + 2), True)
            k = self.gap(e)
            if text.startswith("...", k):
                e = k + 3
            end = self.for_tail(e, "}")
            return (_OTHER, i, end, None), end
        if text.startswith("for", j) and text[j + 3] not in _NAME_CHARS:
            raise _Unsure  # hcl.py: "Invalid 'for' expression" (a first key "for" reads as one)
        elems: list[tuple[_Node, _Node]] = []
        key: _Node
        while text[j] != "}":
            m = _NAME_EQUALS(text, j)
            if m is not None:  # the common "name = ": what object_key() and the checks below give
                key = (_IDENT, j, m.end(1), None)
                value, e = self.expr(m.end(), False)
                elems.append((key, value))
            else:
                key, e = self.object_key(j)
                k = self.ws(e)
                c = text[k]
                if c == "=":
                    if text[k + 1] in "=>":
                        raise _Unsure
                elif c != ":" or text[k + 1] == ":":
                    raise _Unsure
                value, e = self.expr(self.ws(k + 1), False)
                elems.append((key, value))
            if text[e - 1] == "\n":
                j = self.gap(e)
                continue
            k = self.ws(e)
            c = text[k]
            if c == ",":
                j = self.gap(k + 1)
            elif c == "}":
                j = k
            else:
                j = self.gap(k)
                if "\n" not in text[k:j]:
                    raise _Unsure
        return (_OBJECT, i, j + 1, elems), j + 1

    def object_key(self, j: int) -> tuple[_Node, int]:
        text = self.text
        c = text[j]
        if c in _NAME_START:
            e = self.name_at(j)
            name = text[j:e]
            k = self.ws(e)
            if text[k] in "=:" and name not in _LITERALS:
                return (_IDENT, j, e, None), e
            if name in _KEYWORDS:
                raise _Unsure
        key, e = self.expr(j, False)
        if key[0] in (_HEREDOC, _TUPLE, _OBJECT) or (key[0] == _OTHER and c != "("):
            raise _Unsure
        return key, e

    def string(self, i: int) -> int:
        """Return the end of the quoted template starting at ``i`` (just past its closing quote)."""
        text = self.text
        j = i + 1
        while True:
            j = _STRING_CHARS.match(text, j).end()  # type: ignore[union-attr]
            c = text[j]
            if c == '"':
                return j + 1
            if c == "$":  # an interpolation: HCL ignores newlines and comments inside it
                k = j + 2
                if text[k] == "~":
                    k += 1
                _, e = self.expr(self.gap(k), True)
                if text[e - 1] == "\n":
                    raise _Unsure
                k = self.gap(e)
                if text[k] == "~":
                    k += 1
                if text[k] != "}":
                    raise _Unsure
                k += 1
            elif c == "%":  # a directive
                k = self.directive(j + 2)
            else:
                raise _Unsure
            if "\n" in text[j:k] and "<<" in text[j:k]:
                raise _Unsure  # hcl.py leaves line breaks around a heredoc to python-hcl2
            j = k

    def directive(self, k: int) -> int:
        text = self.text
        if text[k] == "~":
            k += 1
        k = self.gap(k)
        e = self.name_at(k)
        word = text[k:e]
        if word == "if":
            _, e = self.expr(self.gap(e), True)
        elif word == "for":
            j = self.gap(e)
            e = self.name_at(j)
            j = self.gap(e)
            if text[j] == ",":
                e = self.name_at(self.gap(j + 1))
                j = self.gap(e)
            if not (text.startswith("in", j) and text[j + 2] in " \t"):
                raise _Unsure
            _, e = self.expr(self.gap(j + 2), True)
        elif word not in ("else", "endif", "endfor"):
            raise _Unsure
        if text[e - 1] == "\n":
            raise _Unsure
        k = self.gap(e)
        if text[k] == "~":
            k += 1
        if text[k] != "}":
            raise _Unsure
        return k + 1

    def heredoc(self, i: int) -> tuple[_Node, int]:
        text = self.text
        m = _HEREDOC_OPEN.match(text, i)
        if m is None:
            raise _Unsure
        marker = m.group(2)
        pos = m.end()
        while True:
            nl = text.find("\n", pos)
            if nl < 0:
                raise _Unsure  # no closing marker line ending in a newline
            line = text[pos:nl]
            if line.strip() == marker:
                if line.lstrip(" \t").rstrip("\r") != marker:
                    raise _Unsure
                end = nl + 1
                return (_HEREDOC, i, end, m.group(1) == "-"), end
            pos = nl + 1

    # -- templates -----------------------------------------------------------------------------

    def parts(self, start: int, end: int) -> list[Part]:
        text = self.text
        content = text[start + 1 : end - 1]
        if "\n" in content:
            # A quoted template spans lines only inside an interpolation or directive, where
            # python-hcl2 refuses some of what this reader would take (an object's items split by
            # a newline: "Missing newline after argument"); it decides.
            raise _Unsure
        if "\\" not in content and "{" not in content:
            return [Literal(content, content, start + 1)] if content else []
        try:
            return quoted_parts(text, start, end)
        except TemplateError:
            raise _Unsure from None

    def heredoc_parts(self, node: _Node) -> list[Part]:
        start, end = node[1], node[2]
        raw = self.text[start:end]
        opener_end = raw.index("\n") + 1
        body_end = raw.rstrip("\r\n").rfind("\n") + 1  # the closing-marker line is dropped
        body = raw[opener_end:body_end] if body_end > opener_end else ""
        try:
            return heredoc_parts(body, start + opener_end, bool(node[3]))
        except TemplateError:
            raise _Unsure from None

    def string_parts(self, node: _Node) -> list[Part]:
        if node[0] == _STR:
            return self.parts(node[1], node[2])
        return self.heredoc_parts(node)

    # -- conversions by mode (must agree with hcl._Converter) ---------------------------------

    def convert(self, node: _Node, mode: Mode) -> JsonValue:
        if mode is Mode.EXPR:
            return self.expr_value(node)
        if mode is Mode.LITERAL:
            return self.literal(node)
        if mode is Mode.TRAVERSAL:
            return self.traversal(node)
        if mode is Mode.TRAVERSAL_LIST:
            return [self.traversal(n) for n in self.items(node)]
        if mode is Mode.KEYWORD:
            return self.keyword(node)
        if mode is Mode.KEYWORD_LIST:
            return [self.keyword(n) for n in self.items(node)]
        if mode is Mode.TYPE:
            if node[0] in (_STR, _HEREDOC):
                raise _Unsure
            return self.source(node)
        if mode is Mode.EXPR_SOURCE_LIST:
            return [self.source(n) for n in self.items(node)]
        if mode is Mode.IGNORE_CHANGES:
            if node[0] == _IDENT and self.source(node) == "all":
                return "all"
            return [self.traversal(n) for n in self.items(node)]
        if mode is Mode.PROVIDER_MAP:
            if node[0] != _OBJECT:
                raise _Unsure
            out: dict[str, JsonValue] = {}
            for key, value in node[3]:  # type: ignore[attr-defined]
                key_text = self.traversal(key)
                if key_text in out:
                    raise _Unsure  # "Duplicate provider address": hcl.py reports it
                out[key_text] = self.traversal(value)
            return out
        if mode is Mode.REQUIRED_PROVIDER:
            if node[0] != _OBJECT:
                return self.literal(node)
            keys = self.object_keys(node, literal=True)
            if keys is None:
                raise _Unsure
            req: dict[str, JsonValue] = {}
            ranges: dict[str, Range] = {}
            for name, value in keys:
                if name == "configuration_aliases":
                    req[name] = [self.traversal(n) for n in self.items(value)]
                elif name in ("source", "version"):
                    req[name] = self.literal(value)
                else:
                    raise _Unsure
                ranges[name] = self.node_range(value)
            return Requirement(req, ranges)
        raise _Unsure

    def source(self, node: _Node) -> str:
        text = self.text[node[1] : node[2]].strip()
        return self.share(text, text)

    def items(self, node: _Node) -> list[_Node]:
        if node[0] != _TUPLE:
            raise _Unsure
        return node[3]  # type: ignore[return-value]

    def expr_value(self, node: _Node) -> JsonValue:
        kind = node[0]
        if kind == _NUM:
            return node[3][0]  # type: ignore[index,no-any-return]
        if kind == _BOOL:
            return node[3]  # type: ignore[return-value]
        if kind == _STR:
            text = self.text
            content = text[node[1] + 1 : node[2] - 1]
            if "\\" not in content and "{" not in content:
                return self.share(content, content)
            return json_template(self.parts(node[1], node[2]), quoted=True)
        if kind == _HEREDOC:
            return json_template(self.heredoc_parts(node), quoted=False)
        if kind == _TUPLE:
            return [self.expr_value(n) for n in node[3]]  # type: ignore[attr-defined]
        if kind == _OBJECT:
            keys = self.object_keys(node, literal=False)
            if keys is not None:
                return {k: self.expr_value(v) for k, v in keys}
        value = "${" + self.text[node[1] : node[2]] + "}"
        return self.share(value, value)

    def literal(self, node: _Node) -> JsonValue:
        kind = node[0]
        if kind == _NUM:
            return node[3][0]  # type: ignore[index,no-any-return]
        if kind == _BOOL:
            return node[3]  # type: ignore[return-value]
        if kind in (_STR, _HEREDOC):
            parts = self.string_parts(node)
            if any(not isinstance(p, Literal) for p in parts):
                constant = constant_template(parts)  # a template of constants (evaluate.py)
                if constant is None:
                    raise _Unsure
                return self.share(constant, constant)
            value = "".join(p.value for p in parts if isinstance(p, Literal))
            return self.share(value, value)
        if kind == _TUPLE:
            return [self.literal(n) for n in node[3]]  # type: ignore[attr-defined]
        if kind == _OBJECT:
            keys = self.object_keys(node, literal=True)
            if keys is not None:
                return {k: self.literal(v) for k, v in keys}
        raise _Unsure

    def object_keys(self, node: _Node, *, literal: bool) -> list[tuple[str, _Node]] | None:
        out: list[tuple[str, _Node]] = []
        text = self.text
        for key, value in node[3]:  # type: ignore[attr-defined]
            kind = key[0]
            key_text: str | None = None
            if kind == _IDENT:
                key_text = text[key[1] : key[2]]
            elif kind == _BOOL:
                if key[3] is not None:
                    key_text = text[key[1] : key[2]]
            elif kind == _STR:
                parts = self.parts(key[1], key[2])
                if all(isinstance(p, Literal) for p in parts):
                    value_text = "".join(p.value for p in parts if isinstance(p, Literal))
                    key_text = value_text if literal else escape_template(value_text)
            elif kind == _NUM:
                key_text = _number_key(key[3][0])
            if key_text is None:
                return None
            out.append((self.share(key_text, key_text), value))
        return out

    def traversal(self, node: _Node) -> str:
        if node[0] != _IDENT and node[0] != _TRAV:
            raise _Unsure
        return json_traversal(self.source(node))

    def keyword(self, node: _Node) -> str:
        if node[0] != _IDENT and node[0] != _BOOL:
            raise _Unsure
        return self.text[node[1] : node[2]]


def read_fast(text: str, filename: str, *, options: Options) -> tuple[Body, Diagnostics] | None:
    """Return what ``parse_native`` returns for ``text``, or None when the fast reader cannot vouch for it.

    >>> body, diags = read_fast('locals {\\n  a = "x-${var.y}"\\n}\\n', "main.tf", options=Options())
    >>> body.blocks[0].body.attribute("a").value
    'x-${var.y}'
    """
    if text.find("\x00", 0, length(text)) != -1 or ("\r" in text and "\r" in text.replace("\r\n", "")):
        return None
    if _blanks_operators(text):
        return None
    try:
        return _Reader(text, filename).file(top_schema(options.dialect)), Diagnostics()
    except (_Unsure, RecursionError):
        return None
    except Exception:  # a bug here must never change a result: the reference decides
        return None


def parse(text: str, filename: str, *, options: Options) -> tuple[Body, Diagnostics]:
    """Return the file's top-level body and diagnostics, exactly as ``hcl.parse_native`` does.

    The fast reader reads the file item by item and gives python-hcl2 only the items it
    declines (``read_in_pieces``; a file it reads whole gives what ``read_fast`` gives); when
    that cannot vouch for the result, python-hcl2 (``parse_native``) reads the whole file.
    """
    accepted: list[tuple[int, int]] = []
    result = read(text, filename, options=options, accepted=accepted)
    if not result[1].has_errors and accepted:
        # What python-hcl2 read, HCL's parser must accept too (it is the reference for syntax:
        # python-hcl2 reads a one-line block closed on the next line, which HCL rejects).
        from flatten.syntax._hcl_errors import config_errors

        whole = content(text)
        if not any(config_errors(whole[start:end]) for start, end in accepted):
            return result
    elif not result[1].has_errors:
        return result
    # The error path: HCL's own errors for the file (syntax/_hcl_errors.py), not the readers'.
    from flatten.syntax._hcl_syntax_diags import with_hcl_errors

    return with_hcl_errors(content(text), filename, result, options, _read_positional)


def _read_positional(text: str, filename: str, options: Options) -> tuple[Body, Diagnostics]:
    return read(text, filename, options=options)


def read(
    text: str, filename: str, *, options: Options, accepted: list[tuple[int, int]] | None = None
) -> tuple[Body, Diagnostics]:
    """What the readers make of ``text``: the fast reader, python-hcl2 where it declines (the
    spans python-hcl2 read go to ``accepted``)."""
    result = read_in_pieces(text, filename, options=options, accepted=accepted)
    if result is None:
        from flatten.syntax.hcl import parse_native

        result = parse_native(content(text), filename, options=options)
        if accepted is not None:
            accepted.append((0, length(text)))
    return result


def parse_any_blocks(text: str, filename: str, *, options: Options) -> tuple[Body, Diagnostics]:
    """Return a native-syntax file of any block types (a test file: ``run``, ``mock_provider``),
    each argument an expression with its source range; python-hcl2 reads what this reader declines."""
    if "\x00" not in text and not _blanks_operators(text):
        try:
            return _Reader(text, filename).file(generic_schema(Mode.EXPR)), Diagnostics()
        except (_Unsure, RecursionError):
            pass
        except Exception:  # a bug here must never change a result: the reference decides
            pass
    from flatten.syntax.hcl import parse_any_blocks as reference

    return reference(text, filename, options=options)


# A line that starts with a name: where a top-level item may start (a piece may end before it).
_ITEM_LINE = re.compile(r"\n(?=[A-Za-z_])")


def read_in_pieces(
    text: str, filename: str, *, options: Options, accepted: list[tuple[int, int]] | None = None
) -> tuple[Body, Diagnostics] | None:
    """Return what ``parse_native`` returns for ``text``, reading python-hcl2 only where needed; or
    None when only a whole-file parse can tell.

    The fast reader reads the top-level items it can; an item it declines (a syntax error, or a
    construct it leaves to python-hcl2) starts a *piece*, which runs to the next line starting
    with a name, and python-hcl2 parses the piece alone with the whole file's positions
    (``hcl.parse_piece``). A piece that parses gives its items and diagnostics; a syntax error
    in it is the whole file's (python-hcl2 stops at the first, and everything before it was
    read); a piece that ends inside something (an unclosed brace, a heredoc whose body has such
    a line) is made about twice as long until it closes, up to the end of the file. So a 20 MB
    file with one typo costs the fast reader's time plus python-hcl2 on a few KB.

    ``accepted`` collects the spans of the pieces python-hcl2 read without a syntax error (which
    ``parse`` has HCL's parser confirm: python-hcl2 accepts some input HCL rejects).
    """
    if (
        text.find("\x00", 0, length(text)) != -1
        or ("\r" in text and "\r" in text.replace("\r\n", ""))
        or _blanks_operators(text)
        or text.find("\ufeff", 1) != -1  # a BOM only at a piece's start would be read as the file's
    ):
        return None  # the whole text is rewritten for python-hcl2 in ways a piece would not see
    try:
        reader = _Reader(text, filename)
        n = reader.n
        if not reader.ascii:
            reader.pos(n)  # fills reader.line_bytes, which pieces share
        schema = top_schema(options.dialect)
        items: list[Attribute | Block] = []
        diags = Diagnostics()
        attrs: set[str] = set()
        blocks: set[str] = set()
        # Inside how many block bodies python-hcl2 would be reading (a "}" was left out): the
        # rest must then read as their items, and the file ends inside them.
        open_blocks = 0
        i = reader.gap(reader.bom)
        while i < n:
            try:
                item, end = reader.item(i, schema, attrs, blocks)
                j = reader.gap(end)
                if j < n and "\n" not in reader.text[end - 1 : j]:
                    raise _Unsure  # items must end with a newline
                items.append(item)
                i = j
                continue
            except (_Unsure, RecursionError):
                pass
            # python-hcl2 (and lark) are imported only when a file has a piece for them.
            from flatten.syntax.hcl import PieceSource, parse_piece, unclosed_at_end

            if isinstance(text, SourceText):  # pieces are cut from the text alone: copied once
                text = text.content

            start = text.rfind("\n", 0, i) + 1
            if text[start:i].strip():
                return None  # a comment before the item on its line: pieces start at a line start
            end = _piece_end(text, i + 1)
            probe = not open_blocks
            while True:
                src = PieceSource(text, filename, start, end, reader.line_starts, reader.line_bytes)
                piece = parse_piece(src, schema, options, probe=probe)
                if piece.status == "ok":
                    if accepted is not None:
                        accepted.append((start, end))
                    items.extend(piece.items)
                    diags.extend(piece.diags)
                    break
                if piece.status == "error" and not open_blocks:
                    return Body(), piece.diags
                if piece.status == "open" and piece.closes:
                    open_blocks = piece.closes
                    break
                if piece.status != "open" or end >= n:
                    return None  # in open bodies, an error (a stray "}"?) may read otherwise
                probe = False
                end = _piece_end(text, start + 2 * (end - start))
            i = end
        if open_blocks:
            whole = PieceSource(content(text), filename, 0, n, reader.line_starts, reader.line_bytes)
            return Body(), unclosed_at_end(whole)
        return make_body_at(tuple(items), reader.filename, reader.key(0, n)), diags
    except Exception:  # a bug here must never change a result: the whole-file parse decides
        return None


def _piece_end(text: str, i: int) -> int:
    """Return the start of the first line at or after ``i`` that starts with a name, else the end."""
    m = _ITEM_LINE.search(text, max(i - 1, 0))
    return len(text) if m is None else m.end()
