# ruff: noqa: E501 - the diagnostics are HCL's sentences, kept whole for grep
"""HCL's syntax errors for a native file: hclsyntax's scanner and parser, diagnostics only.

The readers (``hcl_fast``, python-hcl2 in ``hcl.py``) build the model; on a file they find
broken, this module says what Terraform says about it: every error HCL's parser reports, with
its recovery (it goes on after an error, so one file may give several), its summaries, details,
subject and context ranges. It runs only on the error path, so it builds no expression tree.

Ported from hashicorp/hcl v2 ``hclsyntax``: ``scan_tokens.rl`` (the tokens: ``_scan``),
``token.go`` (``checkInvalidTokens``: ``_token_diags``), ``peeker.go`` (newlines significant or
not, comments skipped: ``_Parser.peek``), ``parser.go`` (bodies, blocks, attributes, expressions,
recovery: ``_Parser``), ``parser_template.go`` (templates and their directives) and ``public.go``
(``ParseConfig``: the token diagnostics first, then the parser's).
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from types import MappingProxyType

from flatten.lang.didyoumean import name_suggestion
from flatten.syntax.references import partial_references

__all__ = ["SyntaxDiag", "config_errors", "template_errors"]


@dataclass(frozen=True, slots=True)
class SyntaxDiag:
    """One HCL error: offsets into the text (subject, and context when HCL gives one)."""

    summary: str
    detail: str
    start: int
    end: int
    context: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class Placeholder:
    """A brace the partial body writes for a block HCL kept without a body (a header broken by
    a newline): its ``OpenBraceRange`` and its body's range are the block type's (parser.go,
    ``finishParsingBodyBlock``), so what the decoder reports at the brace Terraform reports at
    ``block_type`` (offsets into the text). The brace is ``into`` characters after ``at``, where
    the edit writing it starts (on that edit's first line: its newlines go after it)."""

    at: int
    into: int
    block_type: tuple[int, int]


# Token types (hclsyntax/token.go); a one-character token is its character.
IDENT, NUMBER, NEWLINE, COMMENT, EOF = "ident", "number", "nl", "comment", "eof"
OQUOTE, CQUOTE, OHEREDOC, CHEREDOC = "oquote", "cquote", "oheredoc", "cheredoc"
QUOTED_LIT, STRING_LIT, QUOTED_NEWLINE = "qlit", "slit", "qnl"
INTERP, CONTROL, SEQ_END = "${", "%{", "seqend"
OBRACE, CBRACE = "{", "}"
INVALID = "invalid"
EQ, NEQ, GE, LE, AND, OR, DCOLON, ELLIPSIS, FATARROW = "==", "!=", ">=", "<=", "&&", "||", "::", "...", "=>"
_SELF = frozenset("[]().,*/%+-=<>!?:&|~^;`'")

_NUMBER = re.compile(r"\d(?:(?:\d|\.|[eE][+-]?\d)*(?:\d|[eE][+-]?\d))?")
_IDENT = re.compile(r"(?:[^\W\d]|_)[\w-]*")
_SPACES = re.compile(r"[ \t]+")
_LINE_COMMENT = re.compile(r"(?:#|//)[^\r\n]*(?:\r?\n)?")
_HEREDOC_OPEN = re.compile(r"<<(-?)((?:[^\W\d]|_)[\w-]*)\r?\n")
_QUOTED_RUN = re.compile(r'(?:\\[^\r\n]|[^$%"\\\r\n])+')
_NEWLINES = re.compile(r"[\r\n]+")
_HEREDOC_RUN = re.compile(r"[^$%\r\n]*")
_BARE_RUN = re.compile(r"[^$%\r\n]*(?:\r?\n)?")
_OPS = (EQ, NEQ, GE, LE, AND, OR, DCOLON, ELLIPSIS, FATARROW)
# The main scanner (scan_tokens.rl's ``main``), longest match first where two rules overlap.
_MAIN = re.compile(
    r"""(?P<sp>[ \t]+)
    | (?P<num>\d(?:(?:\d|\.|[eE][+-]?\d)*(?:\d|[eE][+-]?\d))?)
    | (?P<id>(?:[^\W\d]|_)[\w-]*)
    | (?P<com>(?:\#|//)[^\r\n]*(?:\r?\n)?|/\*.*?\*/)
    | (?P<nl>\r?\n)
    | (?P<op>==|!=|>=|<=|&&|\|\||::|\.\.\.|=>)
    | (?P<hd><<-?(?P<hdw>(?:[^\W\d]|_)[\w-]*)\r?\n)
    | (?P<tilde>~\})
    | (?P<self>[\[\]().,*/%+\-=<>!?:&|~^;`'])
    | (?P<ob>\{)
    | (?P<cb>\})
    | (?P<q>")
    | (?P<bad>.)""",
    re.VERBOSE | re.DOTALL,
)
_MAIN_KINDS = MappingProxyType(
    {"num": "number", "id": "ident", "com": "comment", "nl": "nl", "bad": "invalid"}
)


@dataclass(slots=True)
class Tok:
    type: str
    start: int
    end: int


def _scan(text: str, template: bool = False) -> list[Tok]:
    """The tokens of ``text`` (``scan_tokens.rl``): ``template`` scans a bare template (a JSON
    string's), else a configuration file."""
    toks: list[Tok] = []
    add = toks.append
    n = len(text)
    i = 0
    braces = 0
    ret_braces: list[int] = []
    # the mode stack: "main", "string", ("heredoc", marker, [start_of_line]) or "bare"
    stack: list[object] = ["bare" if template else "main"]
    while i < n:
        mode = stack[-1]
        c = text[i]
        if mode == "main":
            m = _MAIN.match(text, i)
            assert m is not None
            kind = m.lastgroup or "bad"
            j = m.end()
            if kind == "sp":
                i = j
                continue
            if kind == "hd":
                add(Tok(OHEREDOC, i, j))
                stack.append(("heredoc", m.group("hdw"), [True]))
            elif kind == "tilde":
                add(Tok(SEQ_END, i, j))
                braces -= 1
                if ret_braces and ret_braces[-1] == braces + 1:
                    ret_braces.pop()
                    stack.pop()
            elif kind == "ob":
                add(Tok(OBRACE, i, j))
                braces += 1
            elif kind == "cb":
                if ret_braces and ret_braces[-1] == braces:
                    add(Tok(SEQ_END, i, j))
                    ret_braces.pop()
                    stack.pop()
                else:
                    add(Tok(CBRACE, i, j))
                braces -= 1
            elif kind == "q":
                add(Tok(OQUOTE, i, j))
                stack.append("string")
            elif kind == "op" or kind == "self":
                add(Tok(m.group(kind), i, j))
            else:
                add(Tok(_MAIN_KINDS[kind], i, j))
            i = j
            continue
        # template modes: an interpolation or a directive opens main mode
        if c in "$%" and text.startswith("{", i + 1):
            w = 3 if text.startswith("~", i + 2) else 2
            add(Tok(INTERP if c == "$" else CONTROL, i, i + w))
            braces += 1
            ret_braces.append(braces)
            if isinstance(mode, tuple):
                mode[2][0] = False
            stack.append("main")
            i += w
            continue
        if mode == "string":
            if c == '"':
                add(Tok(CQUOTE, i, i + 1))
                stack.pop()
                i += 1
                continue
            if c in "$%":
                # "$${" is a literal "${"; a lone "$" is literal
                w = 3 if text.startswith(c + "{", i + 1) else 1
                add(Tok(QUOTED_LIT, i, i + w))
                i += w
                continue
            if c in "\r\n":
                m = _NEWLINES.match(text, i)
                assert m is not None
                add(Tok(QUOTED_NEWLINE, i, m.end()))
                i = m.end()
                continue
            m = _QUOTED_RUN.match(text, i)
            if m:
                add(Tok(QUOTED_LIT, i, m.end()))
                i = m.end()
                continue
            add(Tok(INVALID, i, i + 1))
            i += 1
            continue
        if isinstance(mode, tuple):  # heredoc
            if c in "$%":
                w = 3 if text.startswith(c + "{", i + 1) else 1
                end = i + w
            else:
                m = _HEREDOC_RUN.match(text, i)
                assert m is not None
                end = m.end()
            nl = 2 if text.startswith("\r\n", end) else 1 if text.startswith("\n", end) else 0
            if nl:
                if mode[2][0] and text[i:end].strip() == mode[1]:
                    add(Tok(CHEREDOC, i, end))
                    add(Tok(NEWLINE, end, end + nl))
                    stack.pop()
                    i = end + nl
                    continue
                mode[2][0] = True
                add(Tok(STRING_LIT, i, end + nl))
                i = end + nl
                continue
            mode[2][0] = False
            add(Tok(STRING_LIT, i, end))
            i = end
            continue
        # bare template (a JSON string)
        if c in "$%":
            w = 3 if text.startswith(c + "{", i + 1) else 1
            add(Tok(STRING_LIT, i, i + w))
            i += w
            continue
        m = _BARE_RUN.match(text, i)
        assert m is not None
        end = m.end() if m.end() > i else i + 1
        add(Tok(STRING_LIT, i, end))
        i = end
    add(Tok(EOF, n, n))
    return toks


def _token_diags(toks: list[Tok], text: str) -> list[SyntaxDiag]:
    """``checkInvalidTokens`` (hclsyntax/token.go)."""
    out: list[SyntaxDiag] = []
    told = {"bit": 0, "`": 0, "'": 0, ";": 0}
    for t in toks:
        ty = t.type
        if ty in ("&", "|", "^", "~"):
            if told["bit"] < 4:
                hint = {
                    "&": ' Did you mean boolean AND ("&&")?',
                    "|": ' Did you mean boolean OR ("||")?',
                    "~": ' Did you mean boolean NOT ("!")?',
                }.get(ty, "")
                out.append(
                    SyntaxDiag(
                        "Unsupported operator", f"Bitwise operators are not supported.{hint}", t.start, t.end
                    )
                )
                told["bit"] += 1
        elif ty == "`":
            if told["`"] % 2 == 0:
                out.append(
                    SyntaxDiag(
                        "Invalid character",
                        'The "`" character is not valid. To create a multi-line string, use the "heredoc" '
                        'syntax, like "<<EOT".',
                        t.start,
                        t.end,
                    )
                )
            if told["`"] <= 2:
                told["`"] += 1
        elif ty == "'":
            if told["'"] % 2 == 0:
                out.append(
                    SyntaxDiag(
                        "Invalid character",
                        'Single quotes are not valid. Use double quotes (") to enclose strings.',
                        t.start,
                        t.end,
                    )
                )
            if told["'"] <= 2:
                told["'"] += 1
        elif ty == ";":
            if told[";"] < 1:
                out.append(
                    SyntaxDiag(
                        "Invalid character",
                        'The ";" character is not valid. Use newlines to separate arguments and blocks, and '
                        "commas to separate items in collection values.",
                        t.start,
                        t.end,
                    )
                )
                told[";"] += 1
        elif ty == QUOTED_NEWLINE:
            out.append(
                SyntaxDiag(
                    "Invalid multi-line string",
                    "Quoted strings may not be split over multiple lines. To produce a multi-line string, "
                    'either use the \\n escape to represent a newline character or use the "heredoc" '
                    "multi-line template syntax.",
                    t.start,
                    t.end,
                )
            )
        elif ty == INVALID:
            if text[t.start : t.end] in ("\u201c", "\u201d"):
                detail = (
                    '"Curly quotes" are not valid here. These can sometimes be inadvertently introduced when '
                    "sharing code via documents or discussion forums. It might help to replace the character "
                    'with a "straight quote".'
                )
            else:
                detail = "This character is not used within the language."
            out.append(SyntaxDiag("Invalid character", detail, t.start, t.end))
    return out


_BINARY_OPS: tuple[frozenset[str], ...] = (
    frozenset({OR}),
    frozenset({AND}),
    frozenset({EQ, NEQ}),
    frozenset({">", GE, "<", LE}),
    frozenset({"+", "-"}),
    frozenset({"*", "/", "%"}),
)
_OP_LEVEL = MappingProxyType({op: level for level, ops in enumerate(_BINARY_OPS) for op in ops})
_OPPOSITE = MappingProxyType({
    OBRACE: CBRACE, "[": "]", "(": ")", OQUOTE: CQUOTE, OHEREDOC: CHEREDOC,
    CBRACE: OBRACE, "]": "[", ")": "(", CQUOTE: OQUOTE, CHEREDOC: OHEREDOC,
    CONTROL: SEQ_END, INTERP: SEQ_END, SEQ_END: INTERP,
})  # fmt: skip
_UNCLOSED_BLOCK = (
    "There is no closing brace for this block before the end of the file. This may be caused by "
    "incorrect brace nesting elsewhere in this file."
)
# Words that start no reference (hclsyntax: literals and the keywords of for expressions).
_NEED_ITEM = "An argument or block definition is required here."


class _Parser:
    """hclsyntax's ``parser`` with its ``peeker``; records diagnostics, returns no tree."""

    def __init__(self, text: str, toks: list[Tok]) -> None:
        self.text = text
        self.toks = toks
        self.pos = 0
        self.prev: Tok = toks[0]
        self.newlines = [True]
        self.recovery = False
        self.diags: list[SyntaxDiag] = []
        # How the text must change to read as the partial body HCL's recovery keeps
        # (``repaired``): (start, end, what to put first), and bodies left open at the end.
        self.edits: list[tuple[int, int, str]] = []
        self.unclosed = 0
        # The top-level blocks: (start, end, header as HCL's ContextString writes it).
        self.top_blocks: list[tuple[int, int, str]] = []
        self.depth = 0
        self.blocks: list[str] = []  # the types of the blocks around the parser, outermost first
        # Where HCL's partial expression of the attribute being read stops keeping what was read
        # (``drop``): a failed operand after an operator, a failed object item, a failed ``for``
        # expression, a traversal cut at a dot are left out of the expression it returns.
        self.dropped = len(text)
        # The braces the partial body writes for a block HCL kept without a body: (where the
        # edit starts, how far into its text the "{" is, the block type's range).
        self.placeholders: list[tuple[int, int, int, int]] = []

    def item_end(self) -> int:
        """Where the item just read ends (before the newline that ended it)."""
        prev = self.prev
        return prev.start if prev.type == NEWLINE else prev.end

    # --- the peeker (hclsyntax/peeker.go) ---
    def _next(self) -> tuple[Tok, int]:
        i = self.pos
        toks = self.toks
        include = self.newlines[-1]
        while True:
            t = toks[i]
            if t.type == COMMENT:
                # a line comment holds its newline: kept as a newline where newlines count
                if include and self.text[t.end - 1 : t.end] == "\n":
                    return Tok(NEWLINE, t.start, t.end), i + 1
                i += 1
                continue
            if t.type == NEWLINE and not include:
                i += 1
                continue
            if t.type == EOF:
                return t, i
            return t, i + 1

    def peek(self) -> Tok:
        return self._next()[0]

    def read(self) -> Tok:
        t, self.pos = self._next()
        self.prev = t
        return t

    def err(
        self,
        summary: str,
        detail: str,
        subject: Tok | tuple[int, int],
        context: tuple[int, int] | None = None,
    ) -> None:
        s = (subject.start, subject.end) if isinstance(subject, Tok) else subject
        self.diags.append(SyntaxDiag(summary, detail, s[0], s[1], context))

    @staticmethod
    def between(a: Tok | tuple[int, int], b: Tok | tuple[int, int]) -> tuple[int, int]:
        start = a.start if isinstance(a, Tok) else a[0]
        end = b.end if isinstance(b, Tok) else b[1]
        return (start, max(start, end))

    def drop(self, at: int) -> None:
        """HCL's partial expression leaves out what was read from ``at`` on (``dropped``)."""
        self.dropped = min(self.dropped, at)

    # --- recovery ---
    def recover(self, end: str) -> Tok:
        start = _OPPOSITE.get(end)
        self.recovery = True
        nest = 0
        while True:
            t = self.read()
            ty = t.type
            if end == SEQ_END and ty == CONTROL:
                ty = INTERP
            if ty == start:
                nest += 1
            elif ty == end:
                if nest < 1:
                    return t
                nest -= 1
            elif ty == EOF:
                return t

    def recover_over(self, start: str) -> None:
        while True:
            t = self.read()
            if t.type in (start, EOF):
                break
        self.recover(_OPPOSITE[start])

    def recover_after_body_item(self) -> None:
        self.recovery = True
        opened: list[str] = []
        while True:
            t = self.read()
            ty = t.type
            if ty == NEWLINE:
                if not opened:
                    return
            elif ty == EOF:
                return
            elif ty in (OBRACE, "[", "(", OQUOTE, OHEREDOC, INTERP, CONTROL):
                opened.append(ty)
            elif ty in (CBRACE, "]", ")", CQUOTE, CHEREDOC):
                opener = _OPPOSITE[ty]
                while opened and opened[-1] != opener:
                    opened.pop()
                if opened:
                    opened.pop()
            elif ty == SEQ_END:
                while opened and opened[-1] not in (INTERP, CONTROL):
                    opened.pop()
                if opened:
                    opened.pop()

    # --- bodies ---
    def body(self, end: str) -> None:
        start = self.prev
        while True:
            nxt = self.peek()
            if nxt.type == end:
                self.read()
                return
            if nxt.type == NEWLINE:
                self.read()
                continue
            if nxt.type == IDENT:
                self.body_item()
                continue
            bad = self.read()
            if not self.recovery:
                if bad.type == OQUOTE:
                    self.err("Invalid argument name", "Argument names must not be quoted.", bad)
                elif bad.type == EOF:
                    if end == CBRACE:
                        self.err("Unclosed configuration block", _UNCLOSED_BLOCK, start)
                    else:
                        self.err(
                            "Unclosed configuration body",
                            "Found end of file before the end of this configuration body.",
                            start,
                        )
                else:
                    self.err("Argument or block definition required", _NEED_ITEM, bad)
            closed = self.recover(end)
            if closed.type == EOF:
                if end == CBRACE:
                    self.unclosed += 1
                self.edits.append((bad.start, len(self.text), ""))
            else:
                self.edits.append((bad.start, closed.start, ""))
            return

    def body_item(self) -> None:
        ident = self.read()
        nxt = self.peek()
        if nxt.type == "=":
            self.attribute(ident, single_line=False)
        elif nxt.type in (OQUOTE, OBRACE, IDENT):
            self.block(ident)
        else:
            self.recover_after_body_item()
            self.edits.append((ident.start, self.item_end(), ""))
            self.err(
                "Argument or block definition required",
                _NEED_ITEM + ' To set an argument, use the equals sign "=" to introduce the argument value.',
                ident,
            )

    def single_attr_body(self) -> None:
        ident = self.read()
        if ident.type != IDENT:
            self.recover_after_body_item()
            self.err("Argument or block definition required", _NEED_ITEM, ident)
            return
        nxt = self.peek()
        if nxt.type == "=":
            self.attribute(ident, single_line=True)
        elif nxt.type in (OQUOTE, OBRACE, IDENT):
            self.recover_after_body_item()
            name = self.text[ident.start : ident.end]
            self.err(
                "Argument definition required",
                f"A single-line block definition can contain only a single argument. If you meant to define "
                f'argument "{name}", use an equals sign to assign it a value. To define a nested block, place '
                "it on a line of its own within its parent block.",
                self.between(ident, nxt),
            )
        else:
            self.recover_after_body_item()
            self.err(
                "Argument or block definition required",
                _NEED_ITEM + ' To set an argument, use the equals sign "=" to introduce the argument value.',
                ident,
            )

    def attribute(self, ident: Tok, *, single_line: bool) -> None:
        eq = self.read()
        had = len(self.diags)
        first = self.pos
        self.dropped = len(self.text)
        expr = self.expression()
        if len(self.diags) > had:
            partial = self._partial_heredoc(first, had)
            # kept by HCL with a placeholder value: read as null
            if self.recovery:
                self.recover_after_body_item()
            if partial is not None:
                self.edits.append(partial)
            elif (quoted := self._partial_quoted(first, had)) is not None:
                self.edits.append(quoted)
            elif self.blocks == ["variable"] and self.text[ident.start : ident.end] == "type":
                # Terraform's type reader judges the partial type expression HCL keeps
                # (``_partial_type``); " any" where it cannot be written (no further error).
                self.edits.append(self._partial_type(first, had) or (eq.end, self.item_end(), " any"))
            elif (refs := self._partial_condition(ident, first, had)) is not None:
                self.edits.append((eq.end, self.item_end(), refs))
            elif self.blocks == ["variable"] and self.text[ident.start : ident.end] == "default":
                # the partial default is checked against the type ("Invalid default value")
                self.edits.append(self._partial_type(first, had) or (eq.end, self.item_end(), " null"))
            else:
                self.edits.append((eq.end, self.item_end(), " null"))
            return
        if single_line:
            return
        end = self.peek()
        if end.type not in (NEWLINE, EOF):
            if not self.recovery:
                summary, detail = (
                    "Missing newline after argument",
                    "An argument definition must end with a newline.",
                )
                if end.type == ",":
                    summary = "Unexpected comma after argument"
                    detail = "Argument definitions must be separated by newlines, not commas. " + detail
                self.err(summary, detail, end, self.between(ident, end))
            self.recover_after_body_item()
            self.edits.append((expr[1], self.item_end(), ""))
        else:
            self.read()

    def _partial_quoted(self, first: int, had: int) -> tuple[int, int, str] | None:
        """A value that is a quoted string broken by a newline: HCL keeps the template read
        before the newline (parser_template.go: "Unterminated template string" there), a known
        string the decoder then judges: a module source read as an address (no "Unsuitable value
        type", which an unknown value gives), a variable type ("Invalid quoted type constraints"
        for ``"string``, "Invalid legacy variable type hint" for any other text), a default.
        Written as that first line, closed, at the opening quote. None for any other value."""
        toks = self.toks
        while toks[first].type in (COMMENT, NEWLINE):
            first += 1
        opener = toks[first]
        summaries = {d.summary for d in self.diags[had:]}
        if opener.type != OQUOTE or not summaries <= {
            "Invalid multi-line string",
            "Unterminated template string",
        }:
            return None
        nl = self.text.find("\n", opener.end)
        line = self.text[opener.end : nl if nl >= 0 else len(self.text)].removesuffix("\r")
        if any(c in line for c in '"\\$%'):
            return None
        return (opener.start, self.item_end(), '"' + line + '"')

    def _partial_condition(self, ident: Tok, first: int, had: int) -> str | None:
        """A precondition's or postcondition's ``condition`` with a syntax error: HCL keeps the
        partial expression (parser.go: what was read before the error, less what a failed
        operand left out, ``dropped``), whose references Terraform's decoder counts
        (internal/configs/checks.go, ``decodeCheckRuleBlock``: "Invalid precondition expression"
        only when it refers to nothing). Written as a tuple of those references, read by the one
        reference scanner (``references.partial_references``) in the text HCL kept (only the
        decoder reads it: the file has errors, so no walk follows); None when there is none
        (then the decoder's error stands)."""
        if not self.blocks or self.blocks[-1] not in ("precondition", "postcondition"):
            return None
        if self.text[ident.start : ident.end] != "condition":
            return None
        toks = self.toks
        while toks[first].type in (COMMENT, NEWLINE):
            first += 1
        start = toks[first].start
        kept = self.text[start : max(start, min(self.dropped, *(d.start for d in self.diags[had:])))]
        refs = partial_references(kept)
        return " [" + ", ".join(kept[r.start : r.end] for r in refs) + "]" if refs else None

    def _partial_type(self, first: int, had: int) -> tuple[int, int, str] | None:
        """The partial value HCL keeps after a syntax error in a variable's ``type`` or
        ``default``, which Terraform's type reader (typeexpr) and default check then judge.

        hclsyntax parser.go: a call's argument loop keeps the arguments read (the one with the
        error too); ``parseObjectCons`` keeps the items read before the error and drops an item
        whose value had an error (``if p.recovery && valueDiags.HasErrors()``: it bails out), so
        an error inside a nested object drops the whole item of every object around it, while an
        error at the separator after a complete item keeps that item. ``object(\n foo = ...``
        keeps ``object(foo)`` ("Invalid type specification"); a default object whose item ``a``
        is an open heredoc keeps ``{}`` ("Invalid default value for variable"). Written in place:
        the text kept as it is, the closing brackets after it (every kept position stays). None
        when it cannot be written so (no room, or the kept text is no expression HCL reads)."""
        err = min(d.start for d in self.diags[had:])
        toks = self.toks
        i = first
        while toks[i].type in (COMMENT, NEWLINE):
            i += 1
        start = toks[i].start
        # open brackets: [closer, start of the current item, whether it has "=" and a value]
        frames: list[list[object]] = []
        pairs = {"(": ")", "[": "]", OBRACE: "}"}
        string: str | None = None  # the closer of an open string or heredoc
        for tok in toks[i:]:
            if tok.start >= err:
                break
            if string is not None:
                if tok.type == string:
                    string = None
                continue
            if tok.type in (OQUOTE, OHEREDOC):
                string = CQUOTE if tok.type == OQUOTE else CHEREDOC
            elif tok.type in pairs:
                if frames:
                    frames[-1][2] = frames[-1][2] or frames[-1][3]
                frames.append([pairs[tok.type], tok.end, False, False])
                continue
            elif tok.type in (")", "]", CBRACE):
                if not frames or frames[-1][0] != tok.type:
                    return None
                frames.pop()
            elif frames and (tok.type == "," or (tok.type == NEWLINE and frames[-1][0] == "}")):
                frames[-1][1:] = [tok.end, False, False]
                continue
            elif frames and tok.type in ("=", ":"):
                frames[-1][3] = True
                continue
            if frames and tok.type not in (NEWLINE, COMMENT):
                frames[-1][2] = bool(frames[-1][3])
        if not frames:
            return None
        cut = err
        objects = [k for k, f in enumerate(frames) if f[0] == "}"]
        if objects and objects[0] < len(frames) - 1:
            k = objects[0]  # an object around the error drops the item holding it
        elif frames[-1][0] == "}" and (string is not None or not frames[-1][2]):
            k = len(frames) - 1  # the innermost object's item was not complete
        else:
            k = -1
        if k >= 0:
            item = frames[k][1]
            assert isinstance(item, int)
            cut = item
            frames = frames[: k + 1]
        elif string is not None:
            return None
        close = "".join(str(f[0]) for f in reversed(frames))
        end = self.item_end()
        span = self.text[cut:end]
        if end <= cut or len(span) - span.count("\n") < len(close):
            return None
        kept = self.text[start:cut]
        if _scan_errors("x = " + kept + close + "\n"):
            return None
        return (cut, end, close)

    def _keep_labels(self, ident: Tok, written: list[tuple[int, int, str]], end: int, brace: str) -> None:
        """HCL keeps a block whose quoted label has an error, with each label as
        ``parseQuotedStringLiteral`` returned it (the literal read before the error: ``"a`` and a
        newline keeps ``a``), and Terraform's decoder then judges the labels ("Invalid variable
        name", "Extraneous label for resource"). Written from the first broken label to ``end``
        (the text after the header's brace, or after the header HCL gave up on): each label in
        its kept form, the text between the labels without its newlines, then ``brace``. Every
        kept label is no longer than its source, so the header fits where it was (the newlines
        go after it, every line after it keeps its place)."""
        start = written[0][0]
        parts: list[str] = []
        at = start
        for first, last, label in written:
            parts.append(self.text[at:first].replace("\r", "").replace("\n", ""))
            parts.append(label)
            at = last
        self.edits[:] = [e for e in self.edits if not ident.start <= e[0] < end]
        self.edits.append((start, end, "".join(parts) + brace))

    def _partial_heredoc(self, first: int, had: int) -> tuple[int, int, str] | None:
        """A heredoc left open to the end of the file, as the value HCL keeps for it: the
        template of what was read, its parts as they were (parser_template.go returns the parts
        read before "Unterminated template string", and the attribute keeps that expression).
        Terraform's decoder then judges that text (a module source, a provider alias, a version
        constraint, a default): written as the same heredoc closed at the end of the file (its
        marker on a line of its own), so that every part keeps its position (a reference in it
        is reported where it is: "Variables not allowed" in a module source). None otherwise."""
        toks = self.toks
        while toks[first].type in (COMMENT, NEWLINE):
            first += 1
        opener = toks[first]
        if opener.type != OHEREDOC or [d.summary for d in self.diags[had:]] != [
            "Unterminated template string"
        ]:
            return None
        if any(tok.type == CHEREDOC for tok in toks[first + 1 :]):
            return None
        marker = self.text[opener.start : opener.end].lstrip("<-").strip()
        end = len(self.text)
        return (end, end, ("" if self.text.endswith("\n") else "\n") + marker + "\n")

    def block(self, ident: Tok) -> None:
        top = self.depth == 0
        self.depth += 1
        labels: list[str] = []
        self.blocks.append(self.text[ident.start : ident.end])
        try:
            self._block(ident, labels)
        finally:
            self.blocks.pop()
            self.depth -= 1
            if top:
                name = self.text[ident.start : ident.end]
                header = " ".join([name, *(f'"{label}"' for label in labels)])
                # HCL's Block.Range ends at the closing brace, not at the newline read after it
                # (hclsyntax/navigation.go): a subject at the start of the next line, asked one
                # byte before, has no context ("Duplicate output definition" after a one-line block).
                end = self.prev.start if self.prev.type == NEWLINE else self.prev.end
                self.top_blocks.append((ident.start, max(end, ident.end), header))

    def _block(self, ident: Tok, labels: list[str]) -> None:
        had = len(self.diags)
        # the labels from the first one with an error on: (start, end, as HCL keeps it)
        broken: list[tuple[int, int, str]] = []
        clean_end = ident.end  # where the last label before it ends
        while True:
            tok = self.peek()
            if tok.type == OBRACE:
                obrace = self.read()
                if broken:
                    self._keep_labels(ident, broken, obrace.end, "{")
                break
            if tok.type == OQUOTE:
                kept = self.quoted_string_literal()
                # its value, as HCL's ContextString quotes it (``%q``): the escapes it reads back
                labels.append(kept[1:-1].replace("$${", "${").replace("%%{", "%{"))
                if broken or len(self.diags) > had or "\n" in self.text[tok.start : self.prev.end]:
                    broken.append((tok.start, self.prev.end, kept))
                else:
                    clean_end = self.prev.end
                continue
            if tok.type == IDENT:
                self.read()
                labels.append(self.text[tok.start : tok.end])
                if broken:
                    broken.append((tok.start, tok.end, labels[-1]))
                else:
                    clean_end = tok.end
                continue
            if tok.type == "=":
                self.err(
                    "Invalid block definition",
                    'The equals sign "=" indicates an argument definition, and must not be used when defining '
                    "a block.",
                    tok,
                    self.between(ident, tok),
                )
            elif tok.type == NEWLINE:
                self.err(
                    "Invalid block definition",
                    'A block definition must have block content delimited by "{" and "}", starting on the same '
                    "line as the block header.",
                    tok,
                    self.between(ident, tok),
                )
            elif not self.recovery:
                self.err(
                    "Invalid block definition",
                    'Either a quoted string block label or an opening brace ("{") is expected here.',
                    tok,
                    self.between(ident, tok),
                )
            self.recover_after_body_item()
            # HCL keeps the block, with the labels read and an empty body (parser.go,
            # ``finishParsingBodyBlock``): Terraform's decoder then reports on it ("Missing
            # required argument", "Extraneous label for resource").
            # Its placeholder braces stand at the block type (``OpenBraceRange: ident.Range``), and
            # so does its empty body (``SrcRange: ident.Range``): what the decoder reports at
            # either ("Missing name for resource", "Missing required argument") is at the type.
            end = self.item_end()
            if broken:
                self._keep_labels(ident, broken, end, "{}")
            else:
                self.edits[:] = [e for e in self.edits if not ident.start <= e[0] < end]
                self.edits.append((clean_end, end, " {}"))
            self.placeholders.append((self.edits[-1][0], len(self.edits[-1][2]) - 2, ident.start, ident.end))
            return
        body_start = len(self.diags)
        if self.peek().type in (NEWLINE, EOF, CBRACE):
            self.body(CBRACE)
        else:
            # one-line, single-argument block: the body's diagnostics come after the block's own
            self.single_attr_body()
            body_diags = self.diags[body_start:]
            del self.diags[body_start:]
            attr_end = self.item_end() if not body_diags else obrace.end
            nxt = self.peek()
            if nxt.type == CBRACE:
                self.read()
                if body_diags:
                    self.edits.append((obrace.end, self.prev.end, "}"))
            elif nxt.type == ",":
                self.err(
                    "Invalid single-argument block definition",
                    "Single-line block syntax can include only one argument definition. To define multiple "
                    "arguments, use the multi-line block syntax with one argument definition per line.",
                    nxt,
                )
                self.recover(CBRACE)
            elif nxt.type == NEWLINE:
                self.err(
                    "Invalid single-argument block definition",
                    "An argument definition on the same line as its containing block creates a single-line "
                    "block definition, which must also be closed on the same line. Place the block's closing "
                    "brace immediately after the argument definition.",
                    nxt,
                )
                self.recover(CBRACE)
            else:
                if not self.recovery:
                    if nxt.type == EOF:
                        self.err(
                            "Unclosed configuration block",
                            _UNCLOSED_BLOCK,
                            obrace,
                            self.between(ident, obrace),
                        )
                    else:
                        self.err(
                            "Invalid single-argument block definition",
                            "A single-line block definition must end with a closing brace immediately after its "
                            "single argument definition.",
                            nxt,
                        )
                self.recover(CBRACE)
            if body_diags or self.diags[body_start:]:
                if self.prev.type == EOF:
                    self.unclosed += 1
                    self.edits.append((attr_end, len(self.text), ""))
                else:
                    self.edits.append((attr_end, self.prev.end, "}"))
            self.diags.extend(body_diags)
        eol = self.peek()
        if eol.type in (NEWLINE, EOF):
            self.read()
        else:
            if not self.recovery:
                self.err(
                    "Missing newline after block definition",
                    "A block definition must end with a newline.",
                    eol,
                    self.between(ident, eol),
                )
            self.recover_after_body_item()
            self.edits.append((eol.start, self.item_end(), ""))

    # --- expressions ---
    def expression(self) -> tuple[int, int]:
        """Parse one expression; its source range (what the diagnostics of callers need)."""
        start = self.peek()
        had = len(self.diags)
        cond = self.binary(0)
        if self.recovery and len(self.diags) > had:
            return cond
        q = self.peek()
        if q.type != "?":
            return cond
        self.read()
        had = len(self.diags)
        self.expression()
        if self.recovery and len(self.diags) > had:
            self.drop(q.start)  # ``return condExpr, diags``
            return cond
        colon = self.peek()
        if colon.type != ":":
            self.err(
                "Missing false expression in conditional",
                "The conditional operator (...?...:...) requires a false expression, delimited by a colon.",
                colon,
                self.between(start, colon),
            )
            self.drop(q.start)
            return cond
        self.read()
        had = len(self.diags)
        false = self.expression()
        if self.recovery and len(self.diags) > had:
            self.drop(q.start)
        return (start.start, false[1])

    def binary(self, level: int) -> tuple[int, int]:
        """``parseBinaryOps`` as precedence climbing (the same tree and the same recovery, without
        a call per precedence level for every term)."""
        had = len(self.diags)
        lhs = self.with_traversals()
        if self.recovery and len(self.diags) > had:
            return lhs
        while True:
            op_level = _OP_LEVEL.get(self.peek().type)
            if op_level is None or op_level < level:
                return lhs
            op = self.read()
            had = len(self.diags)
            rhs = self.binary(op_level + 1)
            if self.recovery and len(self.diags) > had:
                self.drop(op.start)  # ``return lhs, diags``
                return lhs
            lhs = (lhs[0], rhs[1])

    def with_traversals(self) -> tuple[int, int]:
        term = self.term()
        return self.traversals(term)

    def traversals(self, rng: tuple[int, int]) -> tuple[int, int]:
        while True:
            nxt = self.peek()
            if nxt.type == ".":
                dot = self.read()
                attr = self.peek()
                if attr.type == IDENT:
                    self.read()
                    rng = (rng[0], attr.end)
                elif attr.type == NUMBER:
                    num = self.read()
                    word = self.text[num.start : num.end]
                    if "." in word:
                        first, second = word.split(".", 1)
                        self.err(
                            "Invalid legacy index syntax",
                            "When using the legacy index syntax, chaining two indexes together is not permitted. "
                            f"Use the proper index syntax instead, like [{first}][{second}].",
                            num,
                        )
                    rng = (rng[0], num.end)
                elif attr.type == "*":
                    marker = self.read()
                    last = marker.end
                    while self.peek().type == ".":
                        self.read()
                        if self.peek().type == NUMBER:
                            last = self.read().end
                            continue
                        if self.peek().type != IDENT:
                            if not self.recovery:
                                if self.peek().type == "*":
                                    self.err(
                                        "Nested splat expression not allowed",
                                        "A splat expression (*) cannot be used inside another attribute-only splat "
                                        "expression.",
                                        self.peek(),
                                    )
                                else:
                                    self.err(
                                        "Invalid attribute name",
                                        "An attribute name is required after a dot.",
                                        attr,
                                    )
                            self.recovery = True
                            break
                        last = self.read().end
                    rng = (rng[0], last)
                else:
                    self.err("Invalid attribute name", "An attribute name is required after a dot.", attr)
                    # the traversal read so far becomes an ``ExprSyntaxError`` (no references)
                    self.drop(rng[0])
                    rng = (rng[0], dot.end)
                    self.recovery = True
            elif nxt.type == "[":
                self.read()
                if self.peek().type == "*":
                    self.read()
                    close = self.read()
                    if close.type != "]" and not self.recovery:
                        # HCL's subject is ``&close.Range``, and ``close`` is then set to what
                        # ``recover`` found: the diagnostic points at the "]" (or the end of file)
                        close = self.recover("]")
                        self.err(
                            "Missing close bracket on splat index",
                            'The star for a full splat operator must be immediately followed by a closing bracket ("]").',
                            close,
                        )
                    rng = self.traversals((rng[0], close.end))
                else:
                    self.newlines.append(False)
                    had = len(self.diags)
                    self.expression()
                    if self.recovery and len(self.diags) > had:
                        close = self.recover("]")
                    else:
                        close = self.read()
                        if close.type != "]" and not self.recovery:
                            close = self.recover("]")  # the subject, as above (``&close.Range``)
                            self.err(
                                "Missing close bracket on index",
                                'The index operator must end with a closing bracket ("]").',
                                close,
                            )
                    self.newlines.pop()
                    rng = (rng[0], close.end)
            else:
                return rng

    def term(self) -> tuple[int, int]:
        start = self.peek()
        ty = start.type
        if ty == "(":
            self.read()
            self.newlines.append(False)
            had = len(self.diags)
            inner = self.expression()
            if len(self.diags) > had:
                self.recover(")")
                self.newlines.pop()
                return inner
            close = self.peek()
            if close.type != ")":
                self.err(
                    "Unbalanced parentheses",
                    "Expected a closing parenthesis to terminate the expression.",
                    close,
                    self.between(start, close),
                )
                self.recovery = True
            close = self.read()
            self.newlines.pop()
            return (start.start, close.end)
        if ty == NUMBER:
            self.read()
            return (start.start, start.end)
        if ty == IDENT:
            tok = self.read()
            if self.peek().type in ("(", DCOLON):
                return self.function_call(tok)
            return (tok.start, tok.end)
        if ty in (OQUOTE, OHEREDOC):
            self.read()
            self.template_parts(CQUOTE if ty == OQUOTE else CHEREDOC)
            return (start.start, self.prev.end)
        if ty in ("-", "!"):
            self.read()
            operand = self.with_traversals()
            return (start.start, operand[1])
        if ty == "[":
            return self.tuple_cons()
        if ty == OBRACE:
            return self.object_cons()
        if not self.recovery:
            if ty == EOF:
                self.err(
                    "Missing expression",
                    "Expected the start of an expression, but found the end of the file.",
                    start,
                )
            else:
                self.err(
                    "Invalid expression",
                    "Expected the start of an expression, but found an invalid expression token.",
                    start,
                )
        self.recovery = True
        return (start.start, start.end)

    def function_call(self, name: Tok) -> tuple[int, int]:
        open_tok = self.read()
        while open_tok.type == DCOLON:
            nxt = self.read()
            if nxt.type != IDENT:
                self.err(
                    "Missing function name",
                    "Function scope resolution symbol :: must be followed by a function name in this scope.",
                    nxt,
                    self.between(name, nxt),
                )
                self.recover_over("(")
                return (name.start, nxt.end)
            open_tok = self.read()
        if open_tok.type != "(":
            self.err(
                "Missing open parenthesis",
                "Function selector must be followed by an open parenthesis to begin the function call.",
                open_tok,
                self.between(name, open_tok),
            )
            self.recover_over("(")
            return (name.start, open_tok.end)
        self.newlines.append(False)
        close = open_tok
        while True:
            if self.peek().type == ")":
                close = self.read()
                break
            had = len(self.diags)
            self.expression()
            if self.recovery and len(self.diags) > had:
                got = self.recover(")")
                close = got
                break
            sep = self.read()
            if sep.type == ")":
                close = sep
                break
            if sep.type == ELLIPSIS:
                if self.peek().type != ")":
                    if not self.recovery:
                        self.err(
                            "Missing closing parenthesis",
                            "An expanded function argument (with ...) must be immediately followed by closing "
                            "parentheses.",
                            sep,
                            self.between(name, sep),
                        )
                    close = self.recover(")")
                else:
                    close = self.read()
                break
            if sep.type != ",":
                if sep.type == EOF:
                    self.err(
                        "Unterminated function call",
                        "There is no closing parenthesis for this function call before the end of the file. This "
                        "may be caused by incorrect parenthesis nesting elsewhere in this file.",
                        self.between(name, open_tok),
                    )
                else:
                    self.err(
                        "Missing argument separator",
                        "A comma is required to separate each function argument from the next.",
                        sep,
                        self.between(name, sep),
                    )
                close = self.recover(")")
                break
            if self.peek().type == ")":
                close = self.read()
                break
        self.newlines.pop()
        return (name.start, close.end)

    def _is_keyword(self, tok: Tok, word: str) -> bool:
        return tok.type == IDENT and self.text[tok.start : tok.end] == word

    def tuple_cons(self) -> tuple[int, int]:
        open_tok = self.read()
        self.newlines.append(False)
        try:
            if self._is_keyword(self.peek(), "for"):
                return self.for_expr(open_tok)
            while True:
                nxt = self.peek()
                if nxt.type == "]":
                    close = self.read()
                    break
                had = len(self.diags)
                self.expression()
                if self.recovery and len(self.diags) > had:
                    close = self.recover("]")
                    break
                nxt = self.peek()
                if nxt.type == "]":
                    close = self.read()
                    break
                if nxt.type != ",":
                    if not self.recovery:
                        if nxt.type == EOF:
                            self.err(
                                "Unterminated tuple constructor expression",
                                "There is no corresponding closing bracket before the end of the file. This may be "
                                "caused by incorrect bracket nesting elsewhere in this file.",
                                open_tok,
                            )
                        else:
                            self.err(
                                "Missing item separator",
                                "Expected a comma to mark the beginning of the next item.",
                                nxt,
                                self.between(open_tok, nxt),
                            )
                    close = self.recover("]")
                    break
                self.read()
            return (open_tok.start, close.end)
        finally:
            self.newlines.pop()

    def object_cons(self) -> tuple[int, int]:
        open_tok = self.read()
        self.newlines.append(False)
        is_for = self._is_keyword(self.peek(), "for")
        self.newlines.pop()
        if is_for:
            self.newlines.append(False)  # finishParsingForExpr pushes its own
            try:
                return self.for_expr(open_tok)
            finally:
                self.newlines.pop()
        self.newlines.append(True)
        try:
            while True:
                nxt = self.peek()
                if nxt.type == NEWLINE:
                    self.read()
                    continue
                if nxt.type == CBRACE:
                    close = self.read()
                    break
                had = len(self.diags)
                item = nxt.start
                self.expression()
                if self.recovery and len(self.diags) > had:
                    self.drop(item)  # an item is kept only with its value
                    close = self.recover(CBRACE)
                    break
                nxt = self.peek()
                if nxt.type not in ("=", ":"):
                    self.drop(item)
                    if not self.recovery:
                        if nxt.type in (NEWLINE, ","):
                            self.err(
                                "Missing attribute value",
                                'Expected an attribute value, introduced by an equals sign ("=").',
                                nxt,
                                self.between(open_tok, nxt),
                            )
                        elif nxt.type == IDENT:
                            self.err(
                                "Missing key/value separator",
                                'Expected an equals sign ("=") to mark the beginning of the attribute value. If '
                                "you intended to given an attribute name containing periods or spaces, write the "
                                "name in quotes to create a string literal.",
                                nxt,
                                self.between(open_tok, nxt),
                            )
                        elif nxt.type == EOF:
                            self.err(
                                "Unterminated object constructor expression",
                                "There is no corresponding closing brace before the end of the file. This may be "
                                "caused by incorrect brace nesting elsewhere in this file.",
                                open_tok,
                            )
                        else:
                            self.err(
                                "Missing key/value separator",
                                'Expected an equals sign ("=") to mark the beginning of the attribute value.',
                                nxt,
                                self.between(open_tok, nxt),
                            )
                    close = self.recover(CBRACE)
                    break
                self.read()
                had = len(self.diags)
                self.expression()
                if self.recovery and len(self.diags) > had:
                    self.drop(item)
                    close = self.recover(CBRACE)
                    break
                nxt = self.peek()
                if nxt.type == CBRACE:
                    close = self.read()
                    break
                if nxt.type not in (",", NEWLINE):
                    if not self.recovery:
                        if nxt.type == EOF:
                            self.err(
                                "Unterminated object constructor expression",
                                "There is no corresponding closing brace before the end of the file. This may be "
                                "caused by incorrect brace nesting elsewhere in this file.",
                                open_tok,
                            )
                        else:
                            self.err(
                                "Missing attribute separator",
                                "Expected a newline or comma to mark the beginning of the next attribute.",
                                nxt,
                                self.between(open_tok, nxt),
                            )
                    close = self.recover(CBRACE)
                    break
                self.read()
            return (open_tok.start, close.end)
        finally:
            self.newlines.pop()

    def for_expr(self, open_tok: Tok) -> tuple[int, int]:
        self.newlines.append(False)
        try:
            self.read()  # for
            close_type = CBRACE if open_tok.type == OBRACE else "]"
            make_obj = open_tok.type == OBRACE

            def bad(detail: str) -> tuple[int, int]:
                self.drop(open_tok.start)  # a literal placeholder in its place
                if not self.recovery:
                    nxt = self.peek()
                    self.err("Invalid 'for' expression", detail, nxt, self.between(open_tok, nxt))
                close = self.recover(close_type)
                return (open_tok.start, close.end)

            if self.peek().type != IDENT:
                return bad("For expression requires variable name after 'for'.")
            self.read()
            if self.peek().type == ",":
                self.read()
                if self.peek().type != IDENT:
                    return bad("For expression requires value variable name after comma.")
                self.read()
            if not self._is_keyword(self.peek(), "in"):
                return bad("For expression requires the 'in' keyword after its name declarations.")
            self.read()
            had = len(self.diags)
            self.expression()
            if self.recovery and len(self.diags) > had:
                self.drop(open_tok.start)
                close = self.recover(close_type)
                return (open_tok.start, close.end)
            if self.peek().type != ":":
                return bad("For expression requires a colon after the collection expression.")
            self.read()
            had = len(self.diags)
            key: tuple[int, int] | None = None
            value = self.expression()
            if self.peek().type == FATARROW:
                self.read()
                key = value
                value = self.expression()
            if self.recovery and len(self.diags) > had:
                self.drop(open_tok.start)
                close = self.recover(close_type)
                return (open_tok.start, close.end)
            ellipsis = None
            if self.peek().type == ELLIPSIS:
                ellipsis = self.read()
            if self._is_keyword(self.peek(), "if"):
                self.read()
                had = len(self.diags)
                self.expression()
                if self.recovery and len(self.diags) > had:
                    self.drop(open_tok.start)
                    close = self.recover(close_type)
                    return (open_tok.start, close.end)
            if self.peek().type == close_type:
                close = self.read()
            else:
                if not self.recovery:
                    nxt = self.peek()
                    self.err(
                        "Invalid 'for' expression",
                        "Extra characters after the end of the 'for' expression.",
                        nxt,
                        self.between(open_tok, nxt),
                    )
                close = self.recover(close_type)
            whole = self.between(open_tok, close)
            if not make_obj:
                if key is not None:
                    self.err(
                        "Invalid 'for' expression",
                        "Key expression is not valid when building a tuple.",
                        key,
                        whole,
                    )
                if ellipsis is not None:
                    self.err(
                        "Invalid 'for' expression",
                        "Grouping ellipsis (...) cannot be used when building a tuple.",
                        ellipsis,
                        whole,
                    )
            elif key is None:
                self.err(
                    "Invalid 'for' expression",
                    "Key expression is required when building an object.",
                    value,
                    whole,
                )
            return whole
        finally:
            self.newlines.pop()

    def quoted_string_literal(self) -> str:
        """Read a quoted label; the label as HCL keeps it, written as a quoted label (parser.go,
        ``parseQuotedStringLiteral``: the literal parts read before an error, a template sequence
        as the marker ``${ ... }``, here escaped so that the written label reads as that text)."""
        oquote = self.read()
        kept: list[str] = []
        while True:
            tok = self.read()
            if tok.type == CQUOTE:
                break
            if tok.type == QUOTED_LIT:
                self.string_literal(tok, quoted=True)
                kept.append(self.text[tok.start : tok.end])
                continue
            if tok.type in (CONTROL, INTERP):
                which = "%" if tok.type == CONTROL else "$"
                self.err(
                    "Invalid string literal",
                    f'Template sequences are not allowed in this string. To include a literal "{which}", double '
                    f'it (as "{which}{which}") to escape it.',
                    tok,
                    self.between(oquote, tok),
                )
                self.recover(SEQ_END)
                kept.append(which * 2 + "{ ... }")
                continue
            if tok.type == EOF:
                self.err(
                    "Unterminated string literal",
                    "Unable to find the closing quote mark before the end of the file.",
                    tok,
                    self.between(oquote, tok),
                )
                break
            self.err(
                "Invalid string literal",
                "This item is not valid in a string literal.",
                tok,
                self.between(oquote, tok),
            )
            self.recover(CQUOTE)
            break
        return '"' + "".join(kept) + '"'

    _ESCAPE = re.compile(r"\\(?:u[0-9A-Fa-f]{0,4}|U[0-9A-Fa-f]{0,8}|.|$)", re.S)

    def string_literal(self, tok: Tok, *, quoted: bool) -> None:
        """``ParseStringLiteralToken``'s escape errors."""
        if not quoted:
            return
        text = self.text[tok.start : tok.end]
        for m in self._ESCAPE.finditer(text):
            seq = m.group(0)
            at = (tok.start + m.start(), tok.start + m.end())
            if len(seq) < 2:
                self.err(
                    "Invalid escape sequence",
                    "Backslash must be followed by an escape sequence selector character.",
                    at,
                )
            elif seq[1] in 'nrt"\\':
                continue
            elif seq[1] == "u" and len(seq) != 6:
                self.err(
                    "Invalid escape sequence",
                    "The \\u escape sequence must be followed by four hexadecimal digits.",
                    at,
                )
            elif seq[1] == "U" and len(seq) != 10:
                self.err(
                    "Invalid escape sequence",
                    "The \\U escape sequence must be followed by eight hexadecimal digits.",
                    at,
                )
            elif seq[1] not in "uU":
                self.err(
                    "Invalid escape sequence",
                    f'The symbol "{seq[1:]}" is not a valid escape sequence selector.',
                    at,
                )

    def template_parts(self, end: str) -> None:
        start = self.peek()
        # the directives, for the template parser's balance checks: ("if"|"for"|"else"|"endif"|"endfor", range)
        directives: list[tuple[str, Tok | tuple[int, int]]] = []
        end_tok: Tok | None = None
        while True:
            nxt = self.read()
            if nxt.type == end:
                end_tok = nxt
                break
            if nxt.type in (STRING_LIT, QUOTED_LIT):
                self.string_literal(nxt, quoted=nxt.type == QUOTED_LIT)
                continue
            if nxt.type == INTERP:
                self.newlines.append(False)
                self.expression()
                close = self.peek()
                if close.type != SEQ_END:
                    if not self.recovery:
                        if close.type == EOF:
                            self.err(
                                "Unclosed template interpolation sequence",
                                "There is no closing brace for this interpolation sequence before the end of the "
                                "file. This might be caused by incorrect nesting inside the given expression.",
                                start,
                            )
                        elif close.type == ":":
                            self.err(
                                "Extra characters after interpolation expression",
                                "Template interpolation doesn't expect a colon at this location. Did you intend "
                                "this to be a literal sequence to be processed as part of another language? If so, "
                                'you can escape it by starting with "$${" instead of just "${".',
                                close,
                                self.between(start, close),
                            )
                        elif close.type in (CQUOTE, OQUOTE) and end == CQUOTE:
                            self.err(
                                "Unclosed template interpolation sequence",
                                "There is no closing brace for this interpolation sequence before the end of the "
                                "quoted template. This might be caused by incorrect nesting inside the given "
                                "expression.",
                                start,
                            )
                        else:
                            self.err(
                                "Extra characters after interpolation expression",
                                "Expected a closing brace to end the interpolation expression, but found extra "
                                "characters.\n\nThis can happen when you include interpolation syntax for another "
                                "language, such as shell scripting, but forget to escape the interpolation start "
                                "token. If this is an embedded sequence for another language, escape it by starting "
                                'with "$${" instead of just "${".',
                                close,
                                self.between(start, close),
                            )
                    self.recover(SEQ_END)
                else:
                    self.read()
                self.newlines.pop()
                continue
            if nxt.type == CONTROL:
                self.newlines.append(False)
                kw = self.peek()
                if kw.type != IDENT:
                    if not self.recovery:
                        self.err(
                            "Invalid template directive",
                            'A template directive keyword ("if", "for", etc) is expected at the beginning of a %{ '
                            "sequence.",
                            kw,
                            self.between(nxt, kw),
                        )
                    self.recover(SEQ_END)
                    self.newlines.pop()
                    continue
                self.read()
                word = self.text[kw.start : kw.end]
                if word == "if":
                    self.expression()
                elif word == "for":
                    failed = ""
                    if self.peek().type != IDENT:
                        failed = "For directive requires variable name after 'for'."
                    else:
                        self.read()
                        if self.peek().type == ",":
                            self.read()
                            if self.peek().type != IDENT:
                                failed = "For directive requires value variable name after comma."
                            else:
                                self.read()
                        if not failed and not self._is_keyword(self.peek(), "in"):
                            failed = "For directive requires 'in' keyword after names."
                    if failed:
                        if not self.recovery:
                            self.err("Invalid 'for' directive", failed, self.peek())
                        self.recover(SEQ_END)
                        self.newlines.pop()
                        continue
                    self.read()
                    self.expression()
                elif word not in ("else", "endif", "endfor"):
                    if not self.recovery:
                        hint = name_suggestion(word, ("if", "for", "else", "endif", "endfor"))
                        self.err(
                            "Invalid template control keyword",
                            f'"{word}" is not a valid template control keyword.'
                            + (f' Did you mean "{hint}"?' if hint else ""),
                            kw,
                            self.between(nxt, kw),
                        )
                    self.recover(SEQ_END)
                    self.newlines.pop()
                    continue
                directives.append((word, (nxt.start, self.peek().end)))
                close = self.peek()
                if close.type != SEQ_END:
                    if not self.recovery:
                        self.err(
                            f"Extra characters in {word} marker",
                            "Expected a closing brace to end the sequence, but found extra characters.",
                            close,
                            self.between(start, close),
                        )
                    self.recover(SEQ_END)
                else:
                    self.read()
                self.newlines.pop()
                continue
            if not self.recovery:
                self.err(
                    "Unterminated template string",
                    "No closing marker was found for the string.",
                    nxt,
                    self.between(start, nxt),
                )
            end_tok = self.recover(end)
            break
        self._directives(directives, end_tok)

    def _directives(self, directives: list[tuple[str, Tok | tuple[int, int]]], end_tok: Tok) -> None:
        """The template parser's balance checks (``templateParser``, parser_template.go)."""
        i = 0

        def where(r: Tok | tuple[int, int]) -> str:
            return _range_text(self.text, r)

        def expr() -> bool:
            nonlocal i
            if i == len(directives):
                return False
            word, rng = directives[i]
            if word in ("if", "for"):
                i += 1
                return block(word, rng)
            i += 1
            self.err(
                f"Unexpected {word} directive",
                "The control directives within this template are unbalanced.",
                rng,
            )
            return True

        def block(opener: str, rng: Tok | tuple[int, int]) -> bool:
            nonlocal i
            in_else = False
            want = "endif" if opener == "if" else "endfor"
            while True:
                if i == len(directives):
                    self.err(
                        "Unexpected end of template",
                        f"The {opener} directive at {where(rng)} is missing its corresponding {want} directive.",
                        end_tok,
                    )
                    return False
                word, at = directives[i]
                if word in ("if", "for"):
                    i += 1
                    if not block(word, at):
                        return False
                    continue
                i += 1
                if word == want:
                    return True
                if word == "else" and opener == "if" and not in_else:
                    in_else = True
                    continue
                if word == "else":
                    detail = (
                        f"Already in the else clause for the if started at {where(rng)}."
                        if opener == "if"
                        else "An else clause is not expected for a for directive."
                    )
                    self.err("Unexpected else directive", detail, at)
                else:
                    detail = (
                        f"Expecting an endif directive for the if started at {where(rng)}."
                        if opener == "if"
                        else f"Expecting an endfor directive corresponding to the for directive at {where(rng)}."
                    )
                    self.err(f"Unexpected {word} directive", detail, at)
                return True

        while i < len(directives):
            if not expr():
                break


def _range_text(text: str, r: Tok | tuple[int, int]) -> str:
    """A range as HCL's ``Range.String`` writes it (``file:line,col-col``); the file name is
    left out here (the caller's diagnostics carry it)."""
    start = r.start if isinstance(r, Tok) else r[0]
    end = r.end if isinstance(r, Tok) else r[1]

    def lc(i: int) -> tuple[int, int]:
        line = text.count("\n", 0, i) + 1
        return line, i - (text.rfind("\n", 0, i) + 1) + 1

    (l1, c1), (l2, c2) = lc(start), lc(end)
    return f"{l1},{c1}-{c2}" if l1 == l2 else f"{l1},{c1}-{l2},{c2}"


def _scan_errors(text: str) -> bool:
    """Whether HCL's parser finds an error in ``text`` (a configuration)."""
    return bool(read_config(text)[0])


def config_errors(text: str) -> list[SyntaxDiag]:
    """Every error HCL's ``ParseConfig`` reports for ``text`` (a native file), in its order:
    the scanner's invalid tokens, then the parser's (with its recovery)."""
    return read_config(text)[0]


def read_config(text: str) -> tuple[list[SyntaxDiag], str | None, list[Placeholder]]:
    """``config_errors``, and the text of the partial body HCL keeps (what Terraform's decoder
    reads after these errors): ``text`` with the items HCL's recovery dropped blanked out, a
    value it could not read made ``null``, and the blocks left open closed at the end. Every
    position of what is kept stays where it was. None when no such text can be written. Last,
    the placeholder braces written in it (``Placeholder``)."""
    toks = _scan(text)
    out = _token_diags(toks, text)
    parser = _Parser(text, toks)
    try:
        parser.body(EOF)
    except RecursionError:
        return out + parser.diags, None, []
    edits = {e[0] for e in parser.edits}
    placeholders = [
        Placeholder(at, into, (start, end)) for at, into, start, end in parser.placeholders if at in edits
    ]
    return out + parser.diags, _repaired(text, parser.edits, parser.unclosed), placeholders


def _repaired(text: str, edits: list[tuple[int, int, str]], unclosed: int) -> str | None:
    chars = list(text)
    shift = 0  # how much longer the text is so far (an edit at a line's end may grow it)
    for start, end, first in sorted(edits):
        if end < start:
            continue
        span = text[start:end]
        newlines = span.count("\n")
        room = len(span) - newlines
        if first.strip() in ("null", "any") and room < len(first):
            first = first.strip() if room >= 3 and first == " any" else " 0" if room >= 2 else "0"
        if end >= len(text):
            # a value running to the end of the file: nothing after it keeps a position
            chars[start + shift : end + shift] = first
            continue
        if room < len(first):
            if text[end] not in "\r\n":
                return None
            # nothing follows on the span's last line: the text may grow there, every line
            # after it keeps its positions
            new = first + "\n" * newlines
        else:
            new = first + " " * (room - len(first)) + "\n" * newlines
        chars[start + shift : end + shift] = new
        shift += len(new) - (end - start)
    return "".join(chars) + "\n}" * unclosed + ("\n" if unclosed else "")


def template_errors(text: str) -> list[SyntaxDiag]:
    """Every error HCL's ``ParseTemplate`` reports for ``text`` (a JSON string's template)."""
    toks = _scan(text, template=True)
    out = _token_diags(toks, text)
    parser = _Parser(text, toks)
    parser.newlines = [False]
    with contextlib.suppress(RecursionError):
        parser.template_parts(EOF)
    return out + parser.diags


def context_string(text: str, offset: int) -> str:
    """HCL's ``ContextString`` for a native file (hclsyntax/navigation.go): the header of the
    top-level block around character ``offset`` (``resource "terraform_data" "a"``), or ""."""
    for start, end, header in top_blocks(text):
        if start <= offset < end:
            return header
    return ""


def top_blocks(text: str) -> list[tuple[int, int, str]]:
    """The top-level blocks of a native file as HCL's parser reads them: (start, end, header),
    character offsets; ``context_string`` looks an offset up in them."""
    parser = _Parser(text, _scan(text))
    try:
        parser.body(EOF)
    except RecursionError:
        return []
    return list(parser.top_blocks)
