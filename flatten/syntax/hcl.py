"""Native syntax (``.tf``) to the representation: every value in its Terraform JSON form (spec §7).

The one module that imports python-hcl2. It parses to python-hcl2's raw Lark tree (exact
positions, no lossy serializer), then walks it once against the schema in ``fields.py``: each
argument is converted in the mode its position takes in JSON syntax. Literal values become JSON
values; every other expression becomes ``"${" + exact source slice + "}"`` (python-hcl2-notes
§1.5); quoted templates and heredocs are rebuilt from the source text by ``_hcl_templates``.

python-hcl2's grammar rejects some valid HCL (notes §1.4 #7–#13). Each gap is bridged by a
same-length rewrite of the text given to the parser (never of the text values are read from),
so positions and values stay those of the original. Problems are diagnostics, never exceptions.
"""

from __future__ import annotations

import bisect
import contextlib
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from types import MappingProxyType
from typing import Union

import hcl2
from lark import Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from flatten.lang.blocks import top_schema
from flatten.lang.diagnostics import Code, Diagnostics, Extra
from flatten.lang.didyoumean import name_suggestion
from flatten.lang.fields import (
    REQUIRED_PROVIDERS_DETAIL,
    REQUIRED_PROVIDERS_OBJECT,
    BlockSchema,
    Mode,
    Requirement,
    generic_schema,
)
from flatten.lang.model import Attribute, Block, Body, Expr, JsonValue, Pos, Range
from flatten.lang.options import Options
from flatten.lang.terraform_releases import accepts
from flatten.syntax._hcl_errors import _scan
from flatten.syntax._hcl_templates import (
    Literal,
    Part,
    TemplateError,
    escape_template,
    heredoc_parts,
    json_template,
    negate_number,
    parse_number,
    quoted_parts,
)
from flatten.syntax._hcl_templates import Sequence as TemplateSequence
from flatten.syntax.evaluate import constant_template
from flatten.syntax.references import ExpressionError, json_traversal, template_calls
from flatten.syntax.traversal_string import traversal_problem

__all__ = ["Piece", "PieceSource", "convert_expression", "parse_attributes", "parse_native", "parse_piece"]

_Node = Union["Tree[Token]", Token]
_NEWLINES_IGNORED = frozenset(("tuple", "function_call", "braces_index", "for_tuple_expr", "for_object_expr"))

# Data for the decode stage, which re-reports some of these in OpenTofu's words (decode.py).
# python-hcl2's own wording of a syntax error: on the error path HCL's errors replace these
# (syntax/_hcl_syntax_diags.py); _UNREADABLE where python-hcl2 could not parse the text at all.
_UNREADABLE = Extra(Code.UNREADABLE, reader_syntax=True)
_READER_SYNTAX = Extra(reader_syntax=True)
_READER_INVALID_EXPRESSION = Extra(Code.INVALID_EXPRESSION, reader_syntax=True)
# "A static ... expression is required": HCL's decoder, not its parser, says this; on the error
# path it is still replaced by HCL's errors, as it may stand on a value the partial body writes as
# null where HCL kept a partial expression (seed 40 of scripts/mutation-difftest, binary 1.11:
# 3 files where Terraform reports it on HCL's partial expression, 5 where it reports nothing).
_STATIC_EXPECTED = _READER_INVALID_EXPRESSION
_QUOTED = Extra(Code.QUOTED_KEYWORD)
_UNEXPECTED_BLOCK = Extra(Code.UNEXPECTED_ARGUMENT)  # no subject: never an argument reworded

_STATIC_REF_DETAIL = (
    "A single static variable reference is required: only attribute access and indexing with "
    "constant keys. No calculations, function calls, template expressions, etc are allowed here."
)
_NOT_AN_OBJECT = "required_providers entries must be strings or objects."
_QUOTED_REF_DETAIL = (
    "In this context, references are expected literally rather than in quotes. Terraform 0.11 and "
    "earlier required quotes, but quoted references are now deprecated and will be removed in a "
    "future version of Terraform. Remove the quotes surrounding this reference to silence this warning."
)
_QUOTED_KW_DETAIL = (
    "In this context, keywords are expected literally rather than in quotes. Terraform 0.11 and "
    "earlier required quotes, but quoted keywords are now deprecated and will be removed in a "
    "future version of Terraform. Remove the quotes surrounding this keyword to silence this warning."
)
_QUOTED_TYPE_DETAIL = (
    "Terraform 0.11 and earlier required type constraints to be given in quotes, but that form is "
    "now deprecated and will be removed in a future version of Terraform. Remove the quotes around "
)

# Same-length rewrites that bridge python-hcl2 grammar gaps (see module docstring).
_STRIP_OPEN = re.compile(r"(?<!\$)\$\{~")
_STRIP_CLOSE = re.compile(r"~\}")
_ESCAPES = re.compile(r"(\$\$|%%)\{")
_SHORT_NS_CALL = re.compile(r"(?<![\w:-])([A-Za-z_][\w-]*)::([A-Za-z_][\w-]*)(?=\s*\()")
_DOUBLE_UNARY = re.compile(r"([!-])(?=[ \t]*[!-])")
_UNARY_CONTEXT = frozenset("=([{,:?!-+*/%<>&|\n")
_HEREDOC_OPEN = re.compile(r"<<-?([A-Za-z][A-Za-z0-9._-]*)\r?\n")
_NON_ASCII_WORD = re.compile(r"[^\x00-\x7f]")
_NEWLINE_ARROW = re.compile(r"((?:\r?\n[ \t]*)+)=>")
# Tokens that matter to find line breaks inside a quoted template's ``${ }``/``%{ }`` sequences.
_TEMPLATE_TOKENS = re.compile(r'\\.|[$%]{2}\{|[$%]\{|["{}\n]|#|//|/\*|<<-?[A-Za-z]', re.S)
_TOP_LEVEL_TOKENS = re.compile(r'"|#|//|/\*|<<-?[A-Za-z]')  # outside strings: what may hide a quote


class _Source:
    """The original text and how to turn a character offset into a ``Pos``."""

    def __init__(self, text: str, filename: str, prefix: int = 0) -> None:
        self.text = text
        self.filename = filename
        self.prefix = prefix  # characters of synthetic wrapping before the user's text
        self.bom = 1 if text[prefix : prefix + 1] == "\ufeff" else 0
        self.line_starts: Sequence[int] = [0] + [m.end() for m in re.finditer("\n", text)]
        self.ascii = text.isascii()
        self.blanked: frozenset[int] = frozenset()

    def pos(self, i: int) -> Pos:
        i = max(0, min(i, len(self.text)))
        line = bisect.bisect_right(self.line_starts, i) - 1
        start = self.line_starts[line]
        column = i - start + 1
        byte = i if self.ascii else len(self.text[:i].encode("utf-8", "surrogatepass"))
        if line == 0:
            column -= self.prefix + self.bom
            byte -= self.prefix
        else:
            byte -= len(self.text[: self.prefix].encode("utf-8")) if self.prefix else 0
        return Pos(line + 1, max(column, 1), max(byte, 0))

    def range(self, start: int, end: int) -> Range:
        return Range(self.filename, self.pos(start), self.pos(end))


def _prepare(text: str) -> tuple[str, frozenset[int]]:
    """Return the text python-hcl2 is given (same length) and the offsets of blanked operators."""
    chars: list[str] | None = None

    def put(i: int, s: str) -> None:
        nonlocal chars
        if chars is None:
            chars = list(text)
        chars[i : i + len(s)] = s

    if text.startswith("\ufeff"):
        put(0, " ")
    if "~" in text:
        for m in _STRIP_OPEN.finditer(text):
            put(m.start() + 2, " ")
        for m in _STRIP_CLOSE.finditer(text):
            put(m.start(), " ")
    if "$${" in text or "%%{" in text:
        for m in _ESCAPES.finditer(text):
            put(m.start() + 2, "X")  # python-hcl2 needs a "}" after $${; the value is read from the source
    if "::" in text:
        for m in _SHORT_NS_CALL.finditer(text):
            if text[m.end() : m.end() + 2] != "::":
                put(m.end(1), "__")  # core::max( -> core__max( : one call node, sliced from the source
    blanked: set[int] = set()
    if "!" in text or "- " in text or "--" in text:
        for m in _DOUBLE_UNARY.finditer(text):
            i = m.start()
            if text[i] == "!" and text[i + 1 : i + 2] == "=":
                continue
            j = i - 1
            while j >= 0 and text[j] in " \t":
                j -= 1
            if text[i] == "-" and j >= 0 and text[j] not in _UNARY_CONTEXT and text[j - 1 : j + 1] != "${":
                continue
            put(i, " ")
            blanked.add(i)
    if "=>" in text:
        for m in _NEWLINE_ARROW.finditer(text):
            # HCL ignores newlines inside a `for` expression; python-hcl2 rejects one before `=>`.
            # Only where the line before holds no comment, string or heredoc that a joined line
            # would change.
            line_start = text.rfind("\n", 0, m.start()) + 1
            before = text[line_start : m.start()]
            if any(c in before for c in '"<*'):
                continue  # a string, heredoc or block comment: leave the parser's verdict
            comment = min((k for k in (before.find("#"), before.find("//")) if k >= 0), default=-1)
            if comment >= 0:  # a line comment would swallow the joined line: blank it (not a value)
                put(line_start + comment, " " * (len(before) - comment))
            put(m.start(), re.sub(r"[\r\n]", " ", m.group(1)))
    if "{" in text and '"' in text:
        _join_sequence_lines(text, put)
    if "<<" in text:
        for m in _HEREDOC_OPEN.finditer(text):
            _blank_marker_trailing_space(text, m, put)
    if not text.isascii():
        for m in _NON_ASCII_WORD.finditer(text):
            ch = m.group()
            if ch.isidentifier() or ch.isalnum():
                put(m.start(), "a")  # Unicode identifiers; names are read from the source
    return ("".join(chars) if chars is not None else text), frozenset(blanked)


def _join_sequence_lines(text: str, put: Callable[[int, str], None]) -> None:
    # HCL ignores newlines and comments inside a quoted template's ``${ }`` / ``%{ }``; python-hcl2
    # rejects a newline there outside brackets, and a ``/* */`` comment anywhere. Each such line
    # break becomes a space and each comment there is blanked (neither is part of a value: the
    # sequence is sliced from the source). A heredoc inside such a sequence needs its newlines,
    # and an unterminated string has no sequence to speak of: those are left to the parser.
    stack: list[list[int]] = []  # [0]: a quoted string; [1, brace depth]: a sequence in a string
    pending: list[tuple[int, str]] = []
    poisoned = False
    pos = 0
    end = len(text)
    while pos < end:
        m = (_TEMPLATE_TOKENS if stack else _TOP_LEVEL_TOKENS).search(text, pos)
        if m is None:
            break
        tok = m.group()
        pos = m.end()
        in_string = bool(stack) and stack[-1][0] == 0
        if in_string:
            if tok in ("${", "%{"):
                stack.append([1, 0])
            elif tok == '"' or tok == "\n":
                if tok == "\n":
                    poisoned = True  # an invalid string: leave its verdict to the parser
                stack.pop()
                if not stack:
                    if not poisoned:
                        for i, s in pending:
                            put(i, s)
                    pending.clear()
                    poisoned = False
            continue
        if tok[0] == "\\" or tok in ("$${", "%%{"):
            pos = m.start() + 1  # outside a string: not an escape, look again from the next character
            continue
        if tok == '"':
            stack.append([0])
        elif tok in ("#", "//"):
            nl = text.find("\n", m.start())
            pos = end if nl < 0 else nl
            if stack:
                pending.append((m.start(), " " * (pos - m.start())))
        elif tok == "/*":
            close = text.find("*/", pos)
            pos = end if close < 0 else close + 2
            if stack and close >= 0:
                pending.append((m.start(), " " * (pos - m.start())))  # python-hcl2 rejects one here
        elif tok.startswith("<<"):
            opener = _HEREDOC_OPEN.match(text, m.start())
            if opener is None:
                pos = m.start() + 2
                continue
            if stack:
                poisoned = True
            pos = _heredoc_end(text, opener)
        elif not stack:
            continue
        elif tok == "\n":
            cr = text[m.start() - 1 : m.start()] == "\r"
            pending.append((m.start() - cr, " " * (1 + cr)))
        elif tok in ("{", "${", "%{"):
            stack[-1][1] += 1
        elif tok == "}":
            if stack[-1][1] == 0:
                stack.pop()
            else:
                stack[-1][1] -= 1


def _heredoc_end(text: str, opener: re.Match[str]) -> int:
    """Return the offset just past a heredoc's closing-marker line (the end of text if none)."""
    marker = opener.group(1)
    pos = opener.end()
    while pos < len(text):
        nl = text.find("\n", pos)
        line_end = len(text) if nl < 0 else nl
        if text[pos:line_end].strip() == marker:
            return line_end
        pos = line_end + 1
    return len(text)


def _blank_marker_trailing_space(text: str, m: re.Match[str], put: Callable[[int, str], None]) -> None:
    # HCL accepts spaces after a heredoc's closing marker, python-hcl2 does not (issue #343).
    # That line is dropped from the value, so its spaces move before the marker.
    marker = m.group(1)
    pos = m.end()
    while pos < len(text):
        nl = text.find("\n", pos)
        end = len(text) if nl < 0 else nl
        line = text[pos:end].rstrip("\r")
        if line.strip() == marker:
            if line != line.rstrip():
                stripped = line.strip()
                lead = len(line) - len(line.lstrip())
                new = " " * (len(line) - lead - len(stripped)) + line[:lead] + stripped
                put(pos, new)
            return
        if nl < 0:
            return
        pos = nl + 1


def _children(node: Tree[Token]) -> Iterator[Tree[Token]]:
    for c in node.children:
        if isinstance(c, Tree) and c.data != "new_line_or_comment":
            yield c


def _unwrap(node: _Node) -> _Node:
    while isinstance(node, Tree) and node.data == "expr_term" and len(node.children) == 1:
        node = node.children[0]
    return node


def _first_token(node: _Node) -> Token:
    while isinstance(node, Tree):
        node = node.children[0]
    return node


def _last_token(node: _Node) -> Token | None:
    if isinstance(node, Token):
        return None if node.type == "NL_OR_COMMENT" else node
    for child in reversed(node.children):
        if isinstance(child, Tree) and child.data == "new_line_or_comment":
            continue
        tok = _last_token(child)
        if tok is not None:
            return tok
    return None


def _token_text(node: _Node) -> str:
    if isinstance(node, Token):
        return str(node)
    return "".join(str(t) for t in node.scan_values(lambda v: isinstance(v, Token)))


def _elem_key(elem: Tree[Token]) -> _Node:
    """The key expression of an ``object_elem`` (inside its ``object_elem_key`` wrapper)."""
    wrapper = elem.children[0]
    assert isinstance(wrapper, Tree)
    return wrapper.children[0]


_number = parse_number  # one definition for both readers


def _call_end(text: str, paren: int) -> int:
    """The offset after the ``)`` that closes the call whose ``(`` is at ``paren`` (HCL's
    tokens: strings and heredocs in the arguments skipped); the text's end when it is open."""
    depth = 0
    for tok in _scan(text[paren:]):
        if tok.type == "(":
            depth += 1
        elif tok.type == ")":
            depth -= 1
            if depth == 0:
                return paren + tok.end
    return len(text)


# Constant arguments Terraform's decoder reads with ``gohcl.DecodeExpression(attr.Expr, nil, &x)``
# (internal/configs: variable and output description/sensitive/nullable/ephemeral in
# named_values.go, a provider's alias in provider.go, create_before_destroy and prevent_destroy in
# resource.go): a reference or call in one is also "Unsuitable value type" (``not_constant``).
_DECODED = frozenset(
    {"description", "sensitive", "nullable", "ephemeral", "alias", "create_before_destroy", "prevent_destroy"}
)


def _number_key(value: int | Decimal) -> str:
    return str(value) if isinstance(value, int) else format(value.normalize(), "f")


def _pos_in(start: Pos, content: str, offset: int) -> Pos:
    """Where ``content[offset]`` is when ``content`` is read from one column after ``start`` (as
    ``shimTraversalInString`` positions its parse: escapes not counted, newlines are)."""
    before = content[:offset]
    byte = start.byte + 1 + len(before.encode("utf-8", "surrogatepass"))
    newline = before.rfind("\n")
    if newline < 0:
        return Pos(start.line, start.column + 1 + offset, byte)
    return Pos(start.line + before.count("\n"), offset - newline, byte)


class _Converter:
    """One file's walk: the source, the diagnostics, and the per-mode conversions."""

    def __init__(self, src: _Source, options: Options) -> None:
        self.src = src
        self.text = src.text
        self.options = options
        self.diags = Diagnostics()

    # -- positions ---------------------------------------------------------------------------

    def name(self, node: _Node) -> str:
        """The source text of an identifier-like node (the parser saw a rewritten text)."""
        tok = _first_token(node)
        return self.text[tok.start_pos or 0 : tok.end_pos or 0]

    def span(self, node: _Node) -> tuple[int, int]:
        """The source offsets of ``node``: first token to last token that is no newline/comment."""
        first = _first_token(node)
        last = _last_token(node)
        start = first.start_pos or 0
        end = (last.end_pos or start) if last is not None else (first.end_pos or start)
        if self.src.blanked:
            j = start - 1
            while j >= 0 and (self.text[j] in " \t" or j in self.src.blanked):
                if j in self.src.blanked:
                    start = j
                j -= 1
        return start, end

    def source(self, node: _Node) -> str:
        start, end = self.span(node)
        return self.text[start:end]

    def range(self, node: _Node) -> Range:
        start, end = self.span(node)
        while end > start and self.text[end - 1] in "\r\n":
            end -= 1  # a heredoc token ends with its newline; the expression does not
        return self.src.range(start, end)

    def error(self, summary: str, detail: str, node: _Node | Range, *, extra: Extra | None = None) -> None:
        rng = node if isinstance(node, Range) else self.range(node)
        self.diags.error(summary, detail, rng, extra=extra)

    # -- bodies ------------------------------------------------------------------------------

    def body(self, node: Tree[Token], schema: BlockSchema, rng: Range | None) -> Body:
        items: list[Attribute | Block] = []
        attrs: dict[str, Range] = {}
        block_types: dict[str, Range] = {}
        prev: Tree[Token] | None = None
        prev_end = 0
        # A body read with JustAttributes (locals, a module's inputs...): hclsyntax's
        # Body.JustAttributes reports only its first block ("Unexpected ... block", structure.go).
        just_attributes = schema.other is not None and not schema.other_blocks and not schema.blocks
        seen_block = False
        for child in node.children:
            if not isinstance(child, Tree) or child.data == "new_line_or_comment":
                continue
            start = self.span(child)[0]
            # python-hcl2 lets items share a line; HCL ends each with a newline (a heredoc's
            # token and an operator's trailing comment hold theirs).
            if prev is not None and "\n" not in self.text[prev_end - 1 : start]:
                if prev.data == "attribute":
                    summary, detail = (
                        "Missing newline after argument",
                        "An argument definition must end with a newline.",
                    )
                else:
                    summary, detail = (
                        "Missing newline after block definition",
                        "A block definition must end with a newline.",
                    )
                self.error(summary, detail, child, extra=_READER_SYNTAX)
            prev, prev_end = child, self.span(child)[1]
            if child.data == "attribute":
                attr = self.attribute(child, schema, attrs, block_types)
                if attr is not None:
                    items.append(attr)
            elif child.data == "block" and just_attributes:
                if not seen_block:
                    type_node = child.children[0]
                    self.error(
                        f'Unexpected "{self.name(type_node)}" block',
                        "Blocks are not allowed here.",
                        self.range(type_node),
                    )
                seen_block = True
            elif child.data == "block":
                block = self.block(child, schema, attrs, block_types)
                if block is not None:
                    items.append(block)
        return Body(tuple(items), rng)

    def attribute(
        self, node: Tree[Token], schema: BlockSchema, attrs: dict[str, Range], block_types: dict[str, Range]
    ) -> Attribute | None:
        name_node, value = node.children[0], node.children[-1]
        name = self.name(name_node)
        name_range = self.range(name_node)
        mode = schema.attribute_mode(name)
        if mode is None:
            hint = f' Did you mean to define a block of type "{name}"?' if name in schema.blocks else ""
            self.error(
                "Unsupported argument",
                f'An argument named "{name}" is not expected here.{hint}',
                name_range,
                extra=Extra(Code.UNEXPECTED_ARGUMENT, name),
            )
            return None
        if name in attrs:
            self.error(
                "Attribute redefined",
                f'The argument "{name}" was already set at {attrs[name]}. '
                "Each argument may be set only once.",
                name_range,
            )
            return None
        if name in block_types:
            self._clash(name, block_types[name], name_range)
        attrs[name] = name_range
        errors = len(self.diags.errors)
        # A module's source before 1.15 (module_call.go reads it with gohcl.DecodeExpression):
        # kept when its value is refused, so that the call is known to have one (no "Missing
        # required argument"); the loader installs no such call (stages/graph.py).
        module_source = (
            name == "source"
            and mode is Mode.LITERAL
            and schema.attributes.get("providers") is Mode.PROVIDER_MAP  # the module block's schema
        )
        at_init = module_source and accepts(self.options.terraform_version, "module_source_at_init")
        source = module_source and not at_init
        kept = len(self.diags)
        if mode is Mode.LITERAL:
            converted = self.literal(value, name, decoded=source or name in _DECODED)
        else:
            converted = self.convert(value, mode, name)
        if source and isinstance(converted, (bool, int, Decimal)):
            # gocty converts a bool or number to the string it writes (module_call.go then
            # parses that as an address).
            converted = (
                ("true" if converted else "false") if isinstance(converted, bool) else _number_key(converted)
            )
        if source and converted is None and len(self.diags.errors) == errors:
            # gocty cannot put null in a string (gohcl/decode.go: "Unsuitable value type").
            self.error("Unsuitable value type", "Unsuitable value: null value is not allowed", value)
        if len(self.diags.errors) > errors:
            if at_init:
                # From 1.15 the source is an expression kept as it is (module_call.go:
                # ``mc.SourceExpr = attr.Expr``) and evaluated at init, only when the module has
                # no other error (stages/graph.py ``_decode_calls``): nothing to report here.
                del self.diags[kept:]
            if source or at_init:
                return Attribute(name, Expr(None, self.range(value)), name_range)
            return None
        return Attribute(name, Expr(converted, self.range(value)), name_range)

    def _clash(self, name: str, attr_range: Range, block_range: Range) -> None:
        self.error(
            "Argument and block with the same name",
            f'"{name}" is set as an argument at {attr_range} and also written as a nested block here. '
            "One body cannot hold both; remove one of them or rename it.",
            block_range,
        )

    def block(
        self, node: Tree[Token], schema: BlockSchema, attrs: dict[str, Range], block_types: dict[str, Range]
    ) -> Block | None:
        head = node.children
        type_node = head[0]
        type_name = self.name(type_node)
        type_range = self.range(type_node)
        brace_idx = next(i for i, c in enumerate(head) if isinstance(c, Token) and c.type == "LBRACE")
        brace = head[brace_idx]
        assert isinstance(brace, Token)
        brace_range = self.src.range(brace.start_pos or 0, brace.end_pos or 0)
        label_nodes = [
            c for c in head[1:brace_idx] if isinstance(c, Tree) and c.data != "new_line_or_comment"
        ]
        if any(isinstance(c, Tree) and c.data == "new_line_or_comment" for c in head[1:brace_idx]):
            self.error(
                "Invalid block definition",
                'A block definition must have block content delimited by "{" and "}", starting on the '
                "same line as the block header.",
                brace_range,
                extra=_READER_SYNTAX,
            )
            return None
        labels: list[str] = []
        label_ranges: list[Range] = []
        for label in label_nodes:
            value = self.label(label)
            if value is None:
                return None
            labels.append(value)
            label_ranges.append(self.range(label))
        nested = schema.nested(type_name, len(labels))
        if nested is None:
            hint = ""
            if type_name in schema.attributes:
                hint = (
                    f' Did you mean to define argument "{type_name}"? '
                    "If so, use the equals sign to assign it a value."
                )
            elif near := name_suggestion(type_name, schema.blocks):
                # hclsyntax/structure.go: the nearest block type of the schema (nameSuggestion,
                # edit distance under 3).
                hint = f' Did you mean "{near}"?'
            self.error(
                "Unsupported block type",
                f'Blocks of type "{type_name}" are not expected here.{hint}',
                type_range,
                extra=_UNEXPECTED_BLOCK,  # decode.in_file_order: reported with its block's decoding
            )
            return None
        want = nested.labels
        if len(labels) > len(want):
            detail = (
                f"No labels are expected for {type_name} blocks."
                if not want
                else f"Only {len(want)} labels ({', '.join(want)}) are expected for {type_name} blocks."
            )
            self.error(f"Extraneous label for {type_name}", detail, label_ranges[len(want)])
            return None
        if len(labels) < len(want):
            self.error(
                f"Missing {want[len(labels)]} for {type_name}",
                f"All {type_name} blocks must have {len(want)} labels ({', '.join(want)}).",
                brace_range,
            )
            return None
        if type_name in attrs:
            self._clash(type_name, attrs[type_name], type_range)
        block_types.setdefault(type_name, type_range)
        body_node = head[brace_idx + 1]
        close = head[-1]
        assert isinstance(body_node, Tree) and isinstance(close, Token)
        body_range = self.src.range(brace.start_pos or 0, close.end_pos or 0)
        body = self.body(body_node, nested, body_range)
        def_range = Range(
            self.src.filename, type_range.start, (label_ranges[-1] if labels else type_range).end
        )
        return Block(type_name, tuple(labels), body, def_range, tuple(label_ranges))

    def label(self, node: Tree[Token]) -> str | None:
        if node.data != "string":
            return self.name(node)
        start, end = self.span(node)
        parts = self.template(start, end)
        if parts is None:
            return None
        if any(not isinstance(p, Literal) for p in parts):
            self.error(
                "Invalid string literal",
                'Template sequences are not allowed in this string. To include a literal "$" or "%", '
                'double it (as "$$" or "%%") to escape it.',
                node,
                extra=_READER_SYNTAX,
            )
            return None
        return "".join(p.value for p in parts if isinstance(p, Literal))

    # -- templates ---------------------------------------------------------------------------

    def template(self, start: int, end: int) -> list[Part] | None:
        try:
            return quoted_parts(self.text, start, end)
        except TemplateError as exc:
            self.diags.error(
                exc.summary, exc.detail, self.src.range(exc.offset, exc.end), extra=_READER_SYNTAX
            )
            return None

    def heredoc(self, node: Tree[Token]) -> list[Part] | None:
        tok = _first_token(node)
        raw = str(self.text[tok.start_pos or 0 : tok.end_pos or 0])
        opener_end = raw.index("\n") + 1
        body_end = raw.rstrip("\r\n").rfind("\n") + 1  # the closing-marker line is dropped
        body = raw[opener_end:body_end] if body_end > opener_end else ""
        try:
            return heredoc_parts(body, (tok.start_pos or 0) + opener_end, raw.startswith("<<-"))
        except TemplateError as exc:
            self.diags.error(
                exc.summary, exc.detail, self.src.range(exc.offset, exc.end), extra=_READER_SYNTAX
            )
            return None

    def string_parts(self, node: Tree[Token]) -> list[Part] | None:
        if node.data == "string":
            start, end = self.span(node)
            return self.template(start, end)
        return self.heredoc(node)

    # -- expressions -------------------------------------------------------------------------

    def convert(self, node: _Node, mode: Mode, name: str) -> JsonValue:
        if mode is Mode.EXPR:
            return self.expr(node, True)
        if mode is Mode.LITERAL:
            return self.literal(node, name)
        return _MODES[mode](self, node, name)

    def wrap(self, node: _Node, sensitive: bool) -> str:
        self.check(node, sensitive)
        return "${" + self.source(node) + "}"

    def expr(self, node: _Node, sensitive: bool) -> JsonValue:
        """EXPR mode: literals as JSON values, strings as templates, the rest as ``${...}``."""
        inner = _unwrap(node)
        if isinstance(inner, Token):
            return self.wrap(node, sensitive)
        kind = inner.data
        number = self.number(inner)
        if number is not None:
            return number
        if kind == "literal_value":
            return {"true": True, "false": False, "null": None}[self.name(inner)]
        if kind in ("string", "heredoc_template", "heredoc_template_trim"):
            parts = self.string_parts(inner)
            return None if parts is None else json_template(parts, quoted=kind == "string")
        if kind == "tuple":
            return [self.expr(c, False) for c in _children(inner)]
        if kind == "object":
            keys = self.object_keys(inner, literal=False)
            if keys is not None:
                return {k: self.expr(v, True) for k, v in keys}
        return self.wrap(node, sensitive)

    def number(self, node: Tree[Token]) -> int | Decimal | None:
        if node.data in ("int_lit", "float_lit"):
            return _number(self.name(node))
        if node.data == "unary_op" and self.name(node) == "-":
            operand = node.children[1]
            if isinstance(operand, Tree) and len(operand.children) == 1:
                op = operand.children[0]
                if isinstance(op, Tree) and op.data in ("int_lit", "float_lit"):
                    if self.src.blanked and self.span(node)[0] != (_first_token(node).start_pos or 0):
                        return None  # "- -1": a blanked operator precedes it
                    return negate_number(_number(self.name(op)))
        return None

    def object_keys(self, node: Tree[Token], *, literal: bool) -> list[tuple[str, _Node]] | None:
        """The elements of an object with static keys (template-escaped unless ``literal``)."""
        out: list[tuple[str, _Node]] = []
        for idx, elem in enumerate(c for c in _children(node) if c.data == "object_elem"):
            key_node = _elem_key(elem)
            value = elem.children[-1]
            key = _unwrap(key_node)
            text: str | None = None
            if isinstance(key, Tree) and key.data == "keyword":
                if idx == 0 and self.name(key) == "for":
                    return None  # HCL reads "{ for" as a for expression; check() reports it
                text = self.name(key)
            elif (isinstance(key, Tree) and key.data == "identifier") or (
                isinstance(key, Tree) and key.data == "literal_value" and self.name(key) != "null"
            ):
                text = self.name(key)
            elif isinstance(key, Tree) and key.data == "string":
                parts = self.string_parts(key)
                if parts is None:
                    return None
                if all(isinstance(p, Literal) for p in parts):
                    value_text = "".join(p.value for p in parts if isinstance(p, Literal))
                    text = value_text if literal else escape_template(value_text)
            elif isinstance(key, Tree):
                num = self.number(key)
                if num is not None:
                    text = _number_key(num)
            if text is None:
                return None
            out.append((text, value))
        return out

    def check(self, node: _Node, sensitive: bool) -> None:
        """Report what python-hcl2 accepts but HCL does not, inside an expression kept as source.

        ``sensitive`` is whether newlines end the expression here (an argument or an object
        element); inside parentheses, brackets, calls and for expressions they do not.
        """
        if isinstance(node, Token):
            return
        kind = node.data
        if sensitive and kind in ("binary_op", "conditional", "binary_term"):
            last = node.children[-1]
            for child in node.children:
                if kind == "binary_op" and child is last:
                    continue  # the newline that ends the argument
                operand = isinstance(child, Tree) and child.data not in (
                    "new_line_or_comment",
                    "binary_operator",
                )
                if not operand and "\n" in _token_text(child):
                    self.error(
                        "Invalid expression",
                        "Expected the start of an expression, but found an invalid expression token.",
                        child,
                        extra=_READER_INVALID_EXPRESSION,
                    )
                    return
        if kind == "string":
            start, end = self.span(node)
            self.template(start, end)
            return
        if kind == "template_string":
            self.error("Invalid character", "This character is not used within the language.", node)
            return
        if kind == "object":
            first = next((c for c in _children(node) if c.data == "object_elem"), None)
            key = None if first is None else _elem_key(first)
            if isinstance(key, Tree) and key.data == "keyword" and self.name(key) == "for":
                self.error(
                    "Invalid 'for' expression",
                    'An object whose first key is "for" reads as a for expression. Put the key in '
                    'quotes ("for") or parentheses to use it as a plain key.',
                    key,
                )
                return
            sensitive = True
        elif kind in _NEWLINES_IGNORED or (
            kind == "expr_term" and isinstance(node.children[0], Token) and node.children[0].type == "LPAR"
        ):
            sensitive = False
        for child in node.children:
            if isinstance(child, Tree) and child.data != "new_line_or_comment":
                self.check(child, sensitive)

    # -- other modes -------------------------------------------------------------------------

    def literal(self, node: _Node, name: str, *, decoded: bool = False) -> JsonValue:
        """LITERAL mode: a constant; strings are their decoded value, with no template escaping.
        ``decoded``: Terraform reads it with ``gohcl.DecodeExpression`` (``not_constant``)."""
        inner = _unwrap(node)
        if isinstance(inner, Tree):
            kind = inner.data
            number = self.number(inner)
            if number is not None:
                return number
            if kind == "literal_value":
                return {"true": True, "false": False, "null": None}[self.name(inner)]
            if kind in ("string", "heredoc_template", "heredoc_template_trim"):
                parts = self.string_parts(inner)
                if parts is None:
                    return None
                if all(isinstance(p, Literal) for p in parts):
                    return "".join(p.value for p in parts if isinstance(p, Literal))
                # A template of constants is a constant: Terraform evaluates it (evaluate.py).
                constant = constant_template(parts)
                if constant is not None:
                    return constant
            elif kind == "tuple":
                return [self.literal(c, name) for c in _children(inner)]
            elif kind == "object":
                keys = self.object_keys(inner, literal=True)
                if keys is not None:
                    return {k: self.literal(v, name) for k, v in keys}
        self.not_constant(node, name, decoded=decoded)
        return None

    def constant_primitive(self, inner: _Node) -> bool:
        """Whether ``inner`` (unwrapped) evaluates with no context to a string, number, bool or null."""
        if not isinstance(inner, Tree):
            return False
        if self.number(inner) is not None:
            return True
        if inner.data == "literal_value":
            return True  # true, false or null (a null is the decoder's)
        if inner.data in ("string", "heredoc_template", "heredoc_template_trim"):
            parts = self.string_parts(inner)
            return parts is not None and (
                all(isinstance(p, Literal) for p in parts) or constant_template(parts) is not None
            )
        return False

    def not_constant(self, node: _Node, name: str, *, decoded: bool = False) -> None:
        """Report an expression that needs an evaluation context where Terraform gives none.

        ``decoded``: Terraform reads the argument with ``gohcl.DecodeExpression(expr, nil, &s)``
        (hashicorp/hcl gohcl/decode.go), which adds "Unsuitable value type" for the unknown
        value the evaluation leaves."""
        errors = len(self.diags.errors)
        self.check(node, True)
        if len(self.diags.errors) > errors:
            return
        if self.nil_context(node, decoded=decoded):
            return
        tree = node if isinstance(node, Tree) else Tree("x", [node])
        kinds = {t.data for t in tree.iter_subtrees()}
        if "function_call" in kinds:
            self.error("Function calls not allowed", "Functions may not be called here.", node)
        elif kinds & {"identifier", "get_attr_expr_term", "index_expr_term"}:
            self.error("Variables not allowed", "Variables may not be used here.", node)
        else:
            self.error(
                "Literal value required",
                f'The value of "{name}" must be a literal (a string, number, bool, null, or a list or '
                "map of those): Terraform reads it without evaluating expressions. Replace the "
                "expression with the value it computes.",
                node,
            )

    def nil_context(self, node: _Node, *, decoded: bool) -> bool:
        """HCL's diagnostics for ``expr.Value(nil)``, when the expression holds a reference or a
        function call (False otherwise, or when the scanner cannot read it).

        hclsyntax evaluates every part (expression.go, expression_template.go): a traversal's
        root gives "Variables not allowed" at the root name (hcl traversal.go, ``TraverseAbs``
        with no context), a call gives "Function calls not allowed" at the whole call without
        evaluating its arguments (``FunctionCallExpr.Value``). The value is then unknown, and
        gohcl's ``DecodeExpression`` adds "Unsuitable value type" ("value must be known", from
        gocty) at the expression's ``StartRange``."""
        inner = _unwrap(node)
        start, end = self.span(node)
        pieces: list[tuple[str, int]] = []  # (template text, its offset in the file)
        parts: list[Part] | None = None
        if isinstance(inner, Tree) and inner.data in ("string", "heredoc_template", "heredoc_template_trim"):
            errors = len(self.diags.errors)
            parts = self.string_parts(inner)
            if parts is None or len(self.diags.errors) > errors:
                return False
            pieces = [(p.text, p.start) for p in parts if isinstance(p, TemplateSequence)]
        else:
            pieces = [("${" + self.text[start:end] + "}", start - 2)]
        found: list[tuple[int, int, str]] = []  # (start, end, summary)
        first: dict[int, tuple[int, int]] = {}  # a piece's offset -> its expression's start range
        for text, offset in pieces:
            try:
                refs, calls = template_calls(text)
            except ExpressionError:
                return False
            spans = [(c, _call_end(text, c.paren)) for c in calls]
            outer = [(c, e) for c, e in spans if not any(o.start < c.start < f for o, f in spans)]
            for c, e in outer:
                found.append((offset + c.start, offset + e, "Function calls not allowed"))
            for r in refs:
                if not any(c.start <= r.start < e for c, e in outer):
                    found.append((offset + r.start, offset + r.ends[0], "Variables not allowed"))
            # where the sequence's expression starts (after ``${``, a strip marker, blank space)
            body = len(text) - len(text[2:].lstrip(" \t~\r\n")) if text.startswith("${") else -1
            heads = [(c.start, c.paren + 1) for c, _ in outer if c.start == body]
            heads += [(r.start, r.end) for r in refs if r.start == body]
            if heads:
                first[offset] = (offset + heads[0][0], offset + heads[0][1])
        if not found:
            return False
        found.sort()
        for a, b, summary in found:
            detail = (
                "Functions may not be called here."
                if summary.startswith("Function")
                else "Variables may not be used here."
            )
            self.error(summary, detail, self.src.range(a, b))
        if decoded:
            self.error(
                "Unsuitable value type",
                "Unsuitable value: value must be known",
                self._start_range(parts, first, start, end),
            )
        return True

    def _start_range(
        self, parts: list[Part] | None, first: dict[int, tuple[int, int]], start: int, end: int
    ) -> Range:
        """hclsyntax's ``StartRange``: a template's first part (a quoted template of one
        interpolation is a ``TemplateWrapExpr``: its whole range), a traversal's whole range, a
        call's name and opening parenthesis; the whole expression otherwise."""
        if parts is None:
            a, b = first.get(start - 2, (start, end))
            return self.src.range(a, b)
        quoted = self.text[start : start + 1] == '"'
        if not parts or (quoted and len(parts) == 1 and isinstance(parts[0], TemplateSequence)):
            return self.src.range(start, end)
        head = parts[0]
        if isinstance(head, Literal):
            # HCL's literal part runs to the first sequence (heredoc lines are one literal)
            seqs = [p.start for p in parts if isinstance(p, TemplateSequence)]
            last = parts[-1]
            stop = seqs[0] if seqs else last.start + len(last.raw if isinstance(last, Literal) else last.text)
            return self.src.range(head.start, stop)
        a, b = first.get(head.start, (head.start, head.start + len(head.text)))
        return self.src.range(a, b)

    def quoted_content(self, node: _Node) -> str | None:
        """The value of a quoted string with no template sequences, else None."""
        inner = _unwrap(node)
        if not (isinstance(inner, Tree) and inner.data == "string"):
            return None
        start, end = self.span(inner)
        try:
            parts = quoted_parts(self.text, start, end)
        except TemplateError:
            return None
        if any(not isinstance(p, Literal) for p in parts):
            return None
        return "".join(p.value for p in parts if isinstance(p, Literal))

    def heredoc_content(self, node: _Node) -> str | None:
        """The text of a heredoc with no template sequences, else None."""
        inner = _unwrap(node)
        if not (isinstance(inner, Tree) and inner.data in ("heredoc_template", "heredoc_template_trim")):
            return None
        parts = self.string_parts(inner)
        if parts is None or any(not isinstance(p, Literal) for p in parts):
            return None
        return "".join(p.value for p in parts if isinstance(p, Literal))

    def is_traversal(self, node: _Node, *, step: bool = False) -> bool:
        inner = _unwrap(node)
        if isinstance(inner, Token):
            return False
        if inner.data == "identifier":
            return True
        if inner.data == "get_attr_expr_term":
            return self.is_traversal(inner.children[0], step=True)
        if inner.data == "index_expr_term":
            index = inner.children[1]
            if isinstance(index, Tree) and index.data == "braces_index":
                key = _unwrap(next(_children(index)))
                ok = isinstance(key, Tree) and (key.data in ("int_lit", "string") or self.is_traversal(key))
                if not ok or (
                    isinstance(key, Tree) and key.data == "string" and self.quoted_content(key) is None
                ):
                    return False
            return self.is_traversal(inner.children[0], step=True)
        # HCL's LiteralValueExpr.AsTraversal: null, true and false name a traversal's root when a
        # step follows (`null.plain[each.key]` in a provider argument), never on their own.
        if step and inner.data == "literal_value":
            return str(next(iter(inner.children), "")) in ("null", "true", "false")
        return False

    def traversal(self, node: _Node, name: str) -> JsonValue:
        if self.is_traversal(node):
            return json_traversal(self.source(node).strip())
        content = self.quoted_content(node)
        if content is None and name == "provider":
            # A heredoc is a template too: the same shim reads its text (newlines are skipped).
            content = self.heredoc_content(node)
        if content is not None:
            problem = traversal_problem(content) if name == "provider" else None
            if problem is not None:
                # Terraform parses a quoted provider reference as a traversal from one column
                # after the quote (configs/compat_shim.go ``shimTraversalInString``) and stops at
                # HCL's error (hclsyntax/parser_traversal.go).
                rng = self.range(node)
                at = Range(
                    rng.filename,
                    _pos_in(rng.start, content, problem.start),
                    _pos_in(rng.start, content, problem.end),
                )
                self.error(problem.summary, problem.detail, at)
                return None
            self.diags.warning("Quoted references are deprecated", _QUOTED_REF_DETAIL, self.range(node))
            return json_traversal(content.strip())
        if name == "provider":
            self.error(
                "Invalid provider configuration reference",
                "The provider argument requires a provider type name, optionally followed by a period "
                "and then a configuration alias.",
                node,
            )
        else:
            self.error("Invalid expression", _STATIC_REF_DETAIL, node, extra=_STATIC_EXPECTED)
        return None

    def tuple_items(self, node: _Node, what: str) -> list[_Node] | None:
        inner = _unwrap(node)
        if isinstance(inner, Tree) and inner.data == "tuple":
            return list(_children(inner))
        detail = f"A static list expression is required{what}."
        at: _Node | Range = node
        if isinstance(inner, Tree) and inner.data == "string":
            # hcl.ExprList reports at the expression's StartRange (a quoted template's first part)
            start, end = self.span(inner)
            with contextlib.suppress(TemplateError):
                at = self._start_range(quoted_parts(self.text, start, end), {}, start, end)
        self.error("Invalid expression", detail, at, extra=_STATIC_EXPECTED)
        return None

    def traversal_list(self, node: _Node, name: str) -> JsonValue:
        items = self.tuple_items(node, "")
        return None if items is None else [self.traversal(i, name) for i in items]

    def keyword(self, node: _Node, name: str) -> JsonValue:
        inner = _unwrap(node)
        if isinstance(inner, Tree) and inner.data in ("identifier", "keyword", "literal_value"):
            return self.name(inner)
        content = self.quoted_content(node)
        if content is not None:
            self.diags.warning(
                "Quoted keywords are deprecated", _QUOTED_KW_DETAIL, self.range(node), extra=_QUOTED
            )
            return content
        self.error(
            f'Invalid "{name}" keyword',
            f'The "{name}" argument requires a single keyword, without quotes.',
            node,
        )
        return None

    def keyword_list(self, node: _Node, name: str) -> JsonValue:
        items = self.tuple_items(node, "")
        return None if items is None else [self.keyword(i, name) for i in items]

    def type_expr(self, node: _Node, name: str) -> JsonValue:
        content = self.quoted_content(node)
        inner = _unwrap(node)
        if content is not None or (isinstance(inner, Tree) and inner.data == "string"):
            if content in ("string", "list", "map"):
                extra = (
                    "."
                    if content == "string"
                    else (
                        f" and write {content}(string) instead to explicitly indicate that the {content} "
                        "elements are strings."
                    )
                )
                self.error(
                    "Invalid quoted type constraints", f'{_QUOTED_TYPE_DETAIL}"{content}"{extra}', node
                )
            else:
                self.error(
                    "Invalid legacy variable type hint",
                    "To provide a full type expression, remove the surrounding quotes and give the type "
                    "expression directly.",
                    node,
                )
            return None
        self.check(node, False)
        return self.source(node).strip()

    def source_list(self, node: _Node, name: str) -> JsonValue:
        items = self.tuple_items(node, "")
        if items is None:
            return None
        for item in items:
            self.check(item, False)
        return [self.source(i).strip() for i in items]

    def ignore_changes(self, node: _Node, name: str) -> JsonValue:
        inner = _unwrap(node)
        if isinstance(inner, Tree) and inner.data == "identifier" and self.name(inner) == "all":
            return "all"
        if self.quoted_content(node) == "all":
            self.diags.warning(
                "Quoted keywords are deprecated", _QUOTED_KW_DETAIL, self.range(node), extra=_QUOTED
            )
            return "all"
        items = self.tuple_items(node, " (or the keyword all)")
        if items is None:
            return None
        out: list[JsonValue] = []
        wildcard: _Node | None = None
        for item in items:
            if self.quoted_content(item) == "*":
                self.error(
                    "Invalid ignore_changes wildcard",
                    'The ["*"] form of ignore_changes wildcard is was deprecated and is now invalid. Use '
                    '"ignore_changes = all" to ignore changes to all attributes.',
                    item,
                )
                wildcard = wildcard or item
                continue
            out.append(self.traversal(item, name))
        if wildcard is not None and out:
            # The attribute is dropped with the error above, so the decoder's check of the JSON
            # form never sees this list: report the mix here, at the wildcard, as OpenTofu does.
            self.error(
                "Invalid ignore_changes ruleset",
                'Cannot mix wildcard string "*" with non-wildcard references.',
                wildcard,
            )
        return out

    def provider_map(self, node: _Node, name: str) -> JsonValue:
        inner = _unwrap(node)
        if not (isinstance(inner, Tree) and inner.data == "object"):
            detail = "A static map expression is required."
            self.error("Invalid expression", detail, node, extra=_STATIC_EXPECTED)
            return None
        out: dict[str, JsonValue] = {}
        for elem in (c for c in _children(inner) if c.data == "object_elem"):
            key, value = _elem_key(elem), elem.children[-1]
            key_text = self.traversal(key, name)
            value_text = self.traversal(value, name)
            if not isinstance(key_text, str):
                continue
            if key_text in out:
                # decodePassedProviderConfigs: each child configuration is assigned once.
                self.error(
                    "Duplicate provider address",
                    f"A provider configuration was already passed to {key_text}. Each child provider "
                    "configuration can be assigned only once.",
                    value,
                )
                continue
            out[key_text] = value_text
        return out

    def required_provider(self, node: _Node, name: str) -> JsonValue:
        inner = _unwrap(node)
        if not (isinstance(inner, Tree) and inner.data == "object"):
            if self.constant_primitive(inner):
                return self.literal(node, name)
            # Anything else is no version string: Terraform evaluates it with no context only to
            # tell (``attr.Expr.Value(nil)``), drops that evaluation's errors ("Variables not
            # allowed"), and reports the entry as no object (internal/configs/
            # provider_requirements.go, after ``hcl.ExprMap``). A null is left to the decoder:
            # the partial body writes it in place of what a syntax error cut (Terraform's
            # partial expression), and an entry whose local name is not normalised gets that
            # error in Terraform instead (not modelled).
            errors = len(self.diags.errors)
            self.check(node, True)
            if len(self.diags.errors) == errors:
                self.error(REQUIRED_PROVIDERS_OBJECT, _NOT_AN_OBJECT, node)
            return None
        keys = self.object_keys(inner, literal=True)
        if keys is None:
            self.not_constant(node, name)
            return None
        elems = [c for c in _children(inner) if c.data == "object_elem"]
        out: dict[str, JsonValue] = {}
        ranges: dict[str, Range] = {}
        for (key, value), elem in zip(keys, elems, strict=True):
            if key == "configuration_aliases":
                out[key] = self.traversal_list(value, key)
            elif key in ("source", "version"):
                out[key] = self.literal(value, key)
            else:
                # Terraform reads the items in order and stops at the first other key, reported
                # at the key (internal/configs/provider_requirements.go, ``break LOOP``): the
                # items after it are not read.
                self.error(REQUIRED_PROVIDERS_OBJECT, REQUIRED_PROVIDERS_DETAIL, _elem_key(elem))
                break
            ranges[key] = self.range(value)
        return Requirement(out, ranges)


_MODES = MappingProxyType(
    {
        Mode.TRAVERSAL: _Converter.traversal,
        Mode.TRAVERSAL_LIST: _Converter.traversal_list,
        Mode.KEYWORD: _Converter.keyword,
        Mode.KEYWORD_LIST: _Converter.keyword_list,
        Mode.TYPE: _Converter.type_expr,
        Mode.EXPR_SOURCE_LIST: _Converter.source_list,
        Mode.IGNORE_CHANGES: _Converter.ignore_changes,
        Mode.PROVIDER_MAP: _Converter.provider_map,
        Mode.REQUIRED_PROVIDER: _Converter.required_provider,
    }
)


def _parse(src: _Source) -> Tree[Token] | None:
    """Parse with python-hcl2; on failure record the diagnostic on ``src`` and return None."""
    prepared, blanked = _prepare(src.text)
    src.blanked = blanked
    # python-hcl2 allocates many small objects and GC passes double the time (notes §1.7): the
    # shell switches the collector off around parsing (flatten/shell/memo.py).
    return hcl2.parses_to_tree(prepared)


def _syntax_error(exc: Exception, src: _Source, diags: Diagnostics) -> None:
    text = src.text
    if isinstance(exc, RecursionError):
        diags.error(
            "Configuration too deeply nested",
            "This file nests expressions or blocks too deeply for flatten's parser to read. "
            "Split the expression into local values.",
            src.range(len(text), len(text)),
            extra=_READER_SYNTAX,
        )
        return
    pos = getattr(exc, "pos_in_stream", None)
    if not isinstance(pos, int) or pos < 0:
        pos = len(text)
    if (isinstance(exc, UnexpectedToken) and exc.token.type == "$END") or isinstance(exc, UnexpectedEOF):
        pos = len(text)
        summary, detail = (
            "Unclosed configuration block",
            "There is no closing brace for this block before the end of the file. This may be caused "
            "by incorrect brace nesting elsewhere in this file.",
        )
    elif isinstance(exc, UnexpectedCharacters):
        summary, detail = "Invalid character", "This character is not used within the language."
    elif isinstance(exc, UnexpectedToken):
        line_start = text.rfind("\n", 0, pos) + 1
        expected = set(exc.expected or ())
        if not text[line_start:pos].strip():
            summary, detail = (
                "Argument or block definition required",
                "An argument or block definition is required here.",
            )
        elif "NL_OR_COMMENT" in expected and "EQ" not in expected:
            summary, detail = (
                "Missing newline after argument",
                "An argument definition must end with a newline.",
            )
        else:
            summary, detail = (
                "Invalid expression",
                "Expected the start of an expression, but found an invalid expression token.",
            )
    else:
        summary, detail = "Invalid configuration syntax", f"The file could not be parsed: {exc}"
    pos = min(pos, len(text))
    # Marked as python-hcl2's view of a syntax error: HCL's own errors replace it
    # (syntax/_hcl_syntax_diags.py).
    diags.error(summary, detail, src.range(pos, min(pos + 1, len(text))), extra=_UNREADABLE)


def _run(src: _Source, schema: BlockSchema, options: Options) -> tuple[Body, Diagnostics]:
    diags = Diagnostics()
    try:
        tree = _parse(src)
    except Exception as exc:  # python-hcl2/lark errors of every kind become one diagnostic
        _syntax_error(exc, src, diags)
        return Body(), diags
    if tree is None:
        return Body(), diags
    conv = _Converter(src, options)
    try:
        top = tree.children[0]
        assert isinstance(top, Tree)
        body = conv.body(top, schema, src.range(src.prefix, len(src.text)))
    except RecursionError as exc:
        _syntax_error(exc, src, conv.diags)
        return Body(), conv.diags
    return body, conv.diags


# -- one piece of a file -------------------------------------------------------------------------
# The fast reader (hcl_fast) hands the top-level items it declines to python-hcl2 one piece at a
# time, so a large file with one typo or one construct it does not read costs python-hcl2's
# 0.1 MB/s only on that piece (docs/performance.md, "The error path").


class PieceSource(_Source):
    """The slice ``[start, end)`` of a file, parsed on its own; every position is the whole file's.

    ``line_starts`` are the whole text's line offsets; ``line_bytes`` the UTF-8 bytes before each
    line (None for an ASCII text), so a position costs what it costs in the whole file's reader.
    """

    def __init__(  # the base class's fields, computed from the whole file instead of the slice
        self,
        text: str,
        filename: str,
        start: int,
        end: int,
        line_starts: Sequence[int],  # an array from the fast reader (hcl_fast._Reader)
        line_bytes: Sequence[int] | None,
    ) -> None:
        self.text = text[start:end]
        self.whole = text
        self.offset = start
        self.filename = filename
        self.prefix = 0
        self.bom = 1 if text[:1] == "\ufeff" else 0
        self.line_starts = line_starts
        self.line_bytes = line_bytes
        self.ascii = line_bytes is None
        self.blanked = frozenset()

    def pos(self, i: int) -> Pos:
        j = max(0, min(i, len(self.text))) + self.offset
        line = bisect.bisect_right(self.line_starts, j) - 1
        start = self.line_starts[line]
        column = j - start + 1
        if self.line_bytes is None:
            byte = j
        else:
            byte = self.line_bytes[line] + len(self.whole[start:j].encode("utf-8", "surrogatepass"))
        if line == 0:
            column -= self.bom
        return Pos(line + 1, max(column, 1), byte)


@dataclass(frozen=True, slots=True)
class Piece:
    """What python-hcl2 made of one piece of a file.

    ``status``: ``"ok"`` (``items`` and ``diags`` are the piece's part of the whole file's
    result), ``"error"`` (``diags`` holds the whole file's one syntax error: python-hcl2 stops at
    the first), ``"open"`` (the piece ends inside something, or a token may run past its end: read
    a longer piece) or ``"unsure"`` (only a whole-file parse can tell).
    """

    status: str
    items: tuple[Attribute | Block, ...] = ()
    diags: Diagnostics = field(default_factory=Diagnostics)
    # For "open": how many block bodies the piece leaves open, when it ends between the items of
    # such bodies (what a missing "}" does); 0 when it ends inside anything else.
    closes: int = 0


# Where a python-hcl2 terminal may span lines (and so run past a piece's end): block comments,
# heredocs, escaped sequences, escaped-quote strings in directives.
_SPANNING = re.compile(r'/\*|<<-?[A-Za-z]|\$\$\{|%%\{|\\"')
_TEMPLATE_STRING = re.compile(r'\\"(?:[^"\\]|\\.)*\\"')


def _spanning_end(text: str, m: re.Match[str]) -> int:
    """Return where the multi-line terminal starting at ``m`` ends in ``text`` (-1: nowhere).

    A superset of python-hcl2's terminals (a heredoc's closing marker may have trailing spaces,
    which ``_prepare`` moves), so an end past a piece's end is never missed.
    """
    tok, s = m.group(), m.start()
    if tok == "/*":
        end = text.find("*/", s + 2)
        return -1 if end < 0 else end + 2
    if tok.startswith("<<"):
        opener = _HEREDOC_OPEN.match(text, s)
        if opener is None:
            return -1
        closing = re.compile(r"^[ \t]*" + re.escape(opener.group(1)) + r"[ \t]*\r?$", re.M)
        found = closing.search(text, opener.end())
        return -1 if found is None else found.end() + 1
    if tok in ("$${", "%%{"):
        end = text.find("}", s)
        return -1 if end < 0 else end + 1
    found = _TEMPLATE_STRING.match(text, s)
    return -1 if found is None else found.end()


def _runs_past(src: PieceSource, upto: int) -> bool:
    """Return whether a multi-line token starting in the piece at or before ``upto`` could end
    past the piece's end in the whole file (then the piece alone may be lexed differently)."""
    end = src.offset + len(src.text)
    for m in _SPANNING.finditer(src.whole, src.offset, end):
        if m.start() > src.offset + upto:
            break
        if _spanning_end(src.whole, m) > end:
            return True
    return False


def _open_blocks(src: PieceSource) -> int:
    """Return how many block bodies the piece leaves open between their items (1 to 3), or 0.

    python-hcl2 parses the piece followed by that many ``}`` lines, each of which must close a
    block (not an object, a call or a template): then the whole file's parser, reading on past
    the piece, is between the items of those bodies, and reads what follows as their items.
    """
    end = len(src.text)
    for depth in range(1, 4):
        try:
            tree = hcl2.parses_to_tree(_prepare(src.text + "}\n" * depth)[0])
        except Exception:  # still open, or not closed by braces: try one more
            continue
        closers = 0
        stack: list[Tree[Token]] = [tree]
        while stack:
            node = stack.pop()
            for child in node.children:
                if isinstance(child, Tree):
                    stack.append(child)
                elif child.type == "RBRACE" and (child.start_pos or 0) >= end:
                    if node.data != "block":
                        return 0
                    closers += 1
        return depth if closers == depth and not _runs_past(src, end) else 0
    return 0


def unclosed_at_end(src: PieceSource) -> Diagnostics:
    """Return the whole file's diagnostic when its parse ends inside a block body (``src``: any
    piece of the file)."""
    whole = PieceSource(src.whole, src.filename, 0, len(src.whole), src.line_starts, src.line_bytes)
    diags = Diagnostics()
    _syntax_error(UnexpectedEOF([]), whole, diags)  # type: ignore[no-untyped-call]
    return diags


def parse_piece(src: PieceSource, schema: BlockSchema, options: Options, *, probe: bool = False) -> Piece:
    """Parse the piece ``src`` alone with python-hcl2 and say what it tells about the whole file.

    The piece starts at the start of a line where a top-level item starts, with only complete
    items before it, and ends before a line that starts with a name (or at the end of the file).
    With ``probe``, a piece that ends inside block bodies says how many (``Piece.closes``).
    """
    at_end = src.offset + len(src.text) == len(src.whole)
    try:
        tree = _parse(src)
    except RecursionError:
        return Piece("unsure")
    except UnexpectedInput as exc:
        if isinstance(exc, UnexpectedEOF) or (isinstance(exc, UnexpectedToken) and exc.token.type == "$END"):
            if not at_end:
                return Piece("open", closes=_open_blocks(src) if probe else 0)
            whole = PieceSource(src.whole, src.filename, 0, len(src.whole), src.line_starts, src.line_bytes)
            diags = Diagnostics()
            _syntax_error(exc, whole, diags)
            return Piece("error", diags=diags)
        pos = exc.pos_in_stream
        if not isinstance(pos, int) or pos < 0:
            return Piece("unsure")
        if not at_end and (pos >= len(src.text) - 1 or _runs_past(src, pos + 1)):
            return Piece("open")
        # The whole file's parse reads the same tokens up to here and fails here the same way.
        exc.pos_in_stream = pos + src.offset
        whole = PieceSource(src.whole, src.filename, 0, len(src.whole), src.line_starts, src.line_bytes)
        diags = Diagnostics()
        _syntax_error(exc, whole, diags)
        return Piece("error", diags=diags)
    except Exception:  # another failure's message may name this piece: the whole file decides
        return Piece("unsure")
    if tree is None:
        return Piece("unsure")
    if not at_end and _runs_past(src, len(src.text)):
        return Piece("open")
    conv = _Converter(src, options)
    try:
        top = tree.children[0]
        assert isinstance(top, Tree)
        body = conv.body(top, schema, None)
    except RecursionError:
        return Piece("unsure")
    return Piece("ok", body.items, conv.diags)


def parse_native(text: str, filename: str, *, options: Options) -> tuple[Body, Diagnostics]:
    """Return the file's top-level body in Terraform JSON form, and its diagnostics.

    Never raises: syntax errors give an empty body and an error diagnostic; structure and
    value problems give diagnostics and leave the offending item out of the body.

    >>> body, diags = parse_native('locals { a = "x-${var.y}" }', "main.tf", options=Options())
    >>> body.blocks[0].body.attribute("a").value
    'x-${var.y}'
    """
    try:
        return _run(_Source(text, filename), top_schema(options.dialect), options)
    except Exception as exc:  # a bug in this module must still not escape the library
        diags = Diagnostics()
        diags.error(
            "Internal error in flatten's HCL reader", f"{type(exc).__name__}: {exc}", Range.point(filename)
        )
        return Body(), diags


def parse_any_blocks(text: str, filename: str, *, options: Options) -> tuple[Body, Diagnostics]:
    """Return a native-syntax file whose blocks are not configuration (a ``.tftest.hcl`` file):
    every block type allowed, every argument an expression, with positions (never raises)."""
    try:
        return _run(_Source(text, filename), generic_schema(Mode.EXPR), options)
    except Exception as exc:  # a bug in this module must still not escape the library
        diags = Diagnostics()
        diags.error(
            "Internal error in flatten's HCL reader", f"{type(exc).__name__}: {exc}", Range.point(filename)
        )
        return Body(), diags


def parse_attributes(text: str, filename: str) -> tuple[Body, Diagnostics]:
    """Return a file of bare attributes (a ``.tfvars`` file: HCL's ``JustAttributes``) in JSON form."""
    return _run(_Source(text, filename), BlockSchema(other=Mode.EXPR), Options())


def convert_expression(
    text: str, mode: Mode = Mode.EXPR, *, options: Options | None = None
) -> tuple[JsonValue, Diagnostics]:
    """Return one native expression converted to its JSON form in ``mode``, and diagnostics.

    >>> convert_expression("1e3")[0]
    1000
    """
    prefix = "v = "
    schema = BlockSchema(other=mode)
    body, diags = _run(_Source(prefix + text + "\n", "<expr>", len(prefix)), schema, options or Options())
    attr = body.attribute("v")
    return (attr.value if attr is not None else None), diags
