"""Quoted templates and heredocs, read from the original source text (spec §7.3, python-hcl2-notes §1.5).

python-hcl2 keeps a heredoc as one opaque token and decodes quoted strings with its own, lossy
rules, so both are scanned here from the original text instead. A template becomes a list of
parts: literal runs (with their raw source and their HCL-decoded value) and ``${...}``/``%{...}``
sequences (kept as exact source slices). Converting to a Terraform JSON template then means
re-escaping the literal parts and copying the sequences verbatim.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from types import MappingProxyType

__all__ = [
    "Literal",
    "Sequence",
    "TemplateError",
    "heredoc_parts",
    "is_hcl_space",
    "json_template",
    "negate_number",
    "parse_number",
    "quoted_parts",
    "skip_heredoc",
]

_HEREDOC_OPEN = re.compile(r"<<(-?)([A-Za-z][A-Za-z0-9._-]*)\r?\n")
_SIMPLE_ESCAPES = MappingProxyType({"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\"})


class TemplateError(Exception):
    """A template the scanner cannot read; ``offset`` is where (an index into the source)."""

    def __init__(self, summary: str, detail: str, offset: int, end: int | None = None) -> None:
        super().__init__(summary)
        self.summary = summary
        self.detail = detail
        self.offset = offset
        self.end = offset + 1 if end is None else end


@dataclass(slots=True)
class Literal:
    """A run of literal text: ``raw`` as written, ``value`` as HCL decodes it."""

    raw: str
    value: str
    start: int


@dataclass(frozen=True, slots=True)
class Sequence:
    """An interpolation or directive, ``text`` being its exact source from ``${``/``%{`` to ``}``."""

    text: str
    start: int
    trim_before: bool  # opener is ${~ or %{~
    trim_after: bool  # closer is ~}

    @property
    def is_directive(self) -> bool:
        return self.text.startswith("%")


Part = Literal | Sequence


def negate_number(value: int | Decimal) -> int | Decimal:
    """Return ``-value`` as HCL's big.Float gives it: negating zero is ``-0`` (Terraform keeps the
    sign: ``tostring(-0)`` is ``"-0"``), which only a Decimal can hold.

    >>> negate_number(0), negate_number(2)
    (Decimal('-0'), -2)
    """
    return Decimal("-0") if value == 0 else -value


def parse_number(text: str) -> int | Decimal:
    """Return an HCL number literal exactly: an int when integral, else a Decimal.

    Zero keeps a minus sign (``Decimal('-0')``), as Terraform's big.Float does.

    >>> parse_number("10"), parse_number("1.50"), parse_number("-0.0"), parse_number("1e2")
    (10, Decimal('1.50'), Decimal('-0'), 100)
    """
    if not any(c in text for c in ".eE"):
        number = int(text)
        return Decimal("-0") if number == 0 and text.startswith("-") else number
    value = Decimal(text)
    if value.is_zero():
        return Decimal("-0") if value.is_signed() else 0
    if value == value.to_integral_value() and abs(value.adjusted()) < 400:
        return int(value)
    return value


# Go's unicode.IsSpace is Python's str.isspace less these four separators.
_NOT_GO_SPACES = "\x1c\x1d\x1e\x1f"


def is_hcl_space(ch: str) -> bool:
    """Return whether Go's unicode.IsSpace holds for ``ch`` (what HCL's strip markers trim)."""
    return ch.isspace() and ch not in _NOT_GO_SPACES


# A run of what ``is_hcl_space`` accepts, in one match: re's \s is str.isspace (both
# Py_UNICODE_ISSPACE).
_HCL_SPACES = re.compile(r"[^\S" + re.escape(_NOT_GO_SPACES) + "]*").match


def _lstrip(s: str) -> str:
    return s[_HCL_SPACES(s).end() :]  # type: ignore[union-attr]


def _rstrip(s: str) -> str:
    i = len(s)
    while i > 0 and is_hcl_space(s[i - 1]):
        i -= 1
    return s[:i]


def skip_heredoc(text: str, i: int) -> int:
    """Return the index just past the heredoc starting at ``i`` (``<<``), or -1 if it is unclosed."""
    m = _HEREDOC_OPEN.match(text, i)
    if m is None:
        return -1
    marker = m.group(2)
    pos = m.end()
    while pos < len(text):
        nl = text.find("\n", pos)
        line_end = len(text) if nl < 0 else nl
        if text[pos:line_end].strip() == marker:
            return line_end if nl < 0 else nl + 1
        if nl < 0:
            break
        pos = nl + 1
    return -1


def _skip_comment(text: str, i: int) -> int:
    if text.startswith("/*", i):
        j = text.find("*/", i + 2)
        return len(text) if j < 0 else j + 2
    j = text.find("\n", i)
    return len(text) if j < 0 else j


# What ``_sequence_end`` looks at: everything else is stepped over in one search.
_SEQUENCE_SPECIAL = re.compile(r'["{}#\\]|//|/\*|<<').search


def _sequence_end(text: str, i: int, limit: int) -> int:
    """Return the index of the ``}`` closing a sequence whose expression starts at ``i``."""
    depth = 0
    while i < limit:
        # One character past the limit: "//" or "<<" starting just before it is looked at whole.
        m = _SEQUENCE_SPECIAL(text, i, limit + 1)
        if m is None or m.start() >= limit:
            i = limit
            break
        i = m.start()
        c = text[i]
        if c == '"':
            i = _skip_quoted(text, i + 1, limit)
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            if depth == 0:
                return i
            depth -= 1
        elif c == "#" or text.startswith("//", i) or text.startswith("/*", i):
            i = _skip_comment(text, i)
            continue
        elif c == "<" and text.startswith("<<", i) and _HEREDOC_OPEN.match(text, i):
            j = skip_heredoc(text, i)
            if j < 0:
                break
            i = j
            continue
        elif c == "\\":
            # A backslash outside a string is no HCL token (python-hcl2 accepts \"...\" here).
            raise TemplateError("Invalid character", "This character is not used within the language.", i)
        i += 1
    raise TemplateError(
        "Unclosed template interpolation sequence",
        "There is no closing brace for this interpolation sequence before the end of the template. "
        "This might be caused by incorrect nesting inside the given expression.",
        i,
    )


# What ``_skip_quoted`` looks at; the escapes before the sequences they start like.
_QUOTED_SPECIAL = re.compile(r'[\\"]|\$\$\{|%%\{|[$%]\{').search


def _skip_quoted(text: str, i: int, limit: int) -> int:
    """Return the index just past the quoted string whose content starts at ``i``."""
    while i < limit:
        # Two characters past the limit: an escape or opener starting before it is seen whole.
        m = _QUOTED_SPECIAL(text, i, limit + 2)
        if m is None or m.start() >= limit:
            return limit
        i = m.start()
        c = text[i]
        if c == "\\":
            i += 2
        elif c == '"':
            return i + 1
        elif text.startswith("$${", i) or text.startswith("%%{", i):
            i += 3
        elif text.startswith("${", i) or text.startswith("%{", i):
            i = _sequence_end(text, i + 2, limit) + 1
        else:
            i += 1
    return limit


def _sequence(text: str, i: int, limit: int) -> tuple[Sequence, int]:
    end = _sequence_end(text, i + 2, limit)
    raw = text[i : end + 1]
    seq = Sequence(raw, i, raw[2:3] == "~", raw[-2:-1] == "~" and len(raw) > 3)
    return seq, end + 1


def _decode_escape(text: str, i: int) -> tuple[str, int]:
    """Decode the backslash escape at ``i``; return the character(s) and the next index."""
    sel = text[i + 1 : i + 2]
    if sel in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[sel], i + 2
    if sel in ("u", "U"):
        width = 4 if sel == "u" else 8
        digits = text[i + 2 : i + 2 + width]
        if len(digits) == width and all(d in "0123456789abcdefABCDEF" for d in digits):
            code = int(digits, 16)
            if code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF:
                return chr(code), i + 2 + width
        raise TemplateError(
            "Invalid escape sequence",
            f"The \\{sel} escape must be followed by {width} hexadecimal digits naming a Unicode character.",
            i,
            i + 2,
        )
    raise TemplateError(
        "Invalid escape sequence",
        f'The symbol "{sel}" is not a valid escape sequence selector.',
        i,
        i + 2,
    )


def quoted_parts(text: str, start: int, end: int) -> list[Part]:
    """Return the parts of the quoted template ``text[start:end]`` (both quotes included)."""
    parts: list[Part] = []
    raw: list[str] = []
    value: list[str] = []
    lit_start = start + 1
    i = start + 1
    limit = end - 1

    def flush(at: int) -> None:
        nonlocal lit_start
        if raw:
            parts.append(Literal("".join(raw), "".join(value), lit_start))
            raw.clear()
            value.clear()
        lit_start = at

    while i < limit:
        c = text[i]
        if c == "\\":
            ch, j = _decode_escape(text, i)
            raw.append(text[i:j])
            value.append(ch)
            i = j
        elif c in "$%" and text.startswith(c * 2 + "{", i):
            raw.append(text[i : i + 3])
            value.append(c + "{")
            i += 3
        elif c in "$%" and text.startswith(c + "{", i):
            flush(i)
            seq, i = _sequence(text, i, limit)
            parts.append(seq)
            lit_start = i
        elif c == "\n":
            raise TemplateError(
                "Invalid multi-line string",
                "Quoted strings may not be split over multiple lines. To produce a multi-line string, "
                'either use the \\n escape to represent a newline character or use the "heredoc" '
                "multi-line template syntax.",
                i,
            )
        else:
            raw.append(c)
            value.append(c)
            i += 1
    flush(i)
    return parts


def heredoc_parts(body: str, offset: int, flush_indent: bool) -> list[Part]:
    """Return the parts of a heredoc body (the text between the opener line and the marker line).

    Literal parts are split after each newline, as HCL's scanner splits them: the strip markers
    and the ``<<-`` indentation rule both work on these per-line tokens. With ``flush_indent``,
    the common leading whitespace is removed exactly as HCL's ``flushHeredocTemplateParts``
    does: computed on the values *after* strip markers applied, counting a line that starts
    with a sequence as zero, and ignoring whitespace-only lines.
    """
    parts: list[Part] = []
    raw: list[str] = []
    value: list[str] = []
    lit_start = 0
    i = 0
    n = len(body)

    def flush(at: int) -> None:
        nonlocal lit_start
        if raw:
            parts.append(Literal("".join(raw), "".join(value), offset + lit_start))
            raw.clear()
            value.clear()
        lit_start = at

    while i < n:
        c = body[i]
        if c in "$%" and body.startswith(c * 2 + "{", i):
            raw.append(body[i : i + 3])
            value.append(c + "{")
            i += 3
        elif c in "$%" and body.startswith(c + "{", i):
            flush(i)
            try:
                seq, i = _sequence(body, i, n)
            except TemplateError as exc:
                exc.offset += offset
                exc.end += offset
                raise
            parts.append(Sequence(seq.text, seq.start + offset, seq.trim_before, seq.trim_after))
            lit_start = i
        else:
            raw.append(c)
            value.append(c)
            i += 1
            if c == "\n":
                flush(i)
    flush(i)
    if flush_indent:
        _flush_heredoc(parts)
    return parts


def _flush_heredoc(parts: list[Part]) -> None:
    trimmed = _apply_strip(parts)
    big = 1 << 62
    min_spaces = big
    newline = True
    adjust: list[int] = []
    for idx, part in enumerate(parts):
        if newline:
            newline = False
            spaces = 0
            if isinstance(part, Literal):
                val = trimmed[idx]
                rest = _lstrip(val)
                if not rest and val.endswith("\n"):
                    spaces = big
                else:
                    spaces = len(val) - len(rest)
                    adjust.append(idx)
            min_spaces = min(min_spaces, spaces)
        if isinstance(part, Literal) and trimmed[idx].endswith("\n"):
            newline = True
    if min_spaces in (0, big):
        return
    for idx in adjust:
        lit = parts[idx]
        assert isinstance(lit, Literal)
        # The removed prefix is whitespace, so raw and value share it.
        lit.raw = lit.raw[min_spaces:]
        lit.value = lit.value[min_spaces:]
        lit.start += min_spaces


def _apply_strip(parts: list[Part]) -> list[str]:
    """Return each literal's value after the neighbouring strip markers applied (HCL's order)."""
    values = [p.value if isinstance(p, Literal) else "" for p in parts]
    for idx, part in enumerate(parts):
        if not isinstance(part, Sequence):
            continue
        if part.trim_before and idx > 0 and isinstance(parts[idx - 1], Literal):
            values[idx - 1] = _rstrip(values[idx - 1])
        if part.trim_after and idx + 1 < len(parts) and isinstance(parts[idx + 1], Literal):
            values[idx + 1] = _lstrip(values[idx + 1])
    return values


def escape_template(s: str) -> str:
    """Return ``s`` escaped so a JSON-syntax template reads it back literally."""
    if "{" not in s:
        return s
    return s.replace("${", "$${").replace("%{", "%%{")


def json_template(parts: list[Part], *, quoted: bool) -> str:
    """Return the Terraform JSON template string equivalent to ``parts``.

    In a quoted template a literal is one scanner token, but in JSON its decoded newlines
    split it into per-line tokens, so a strip marker would trim less there: literals next to
    strip markers are trimmed here already. Heredoc literals are per-line tokens on both sides,
    so their markers are left for Terraform to apply.
    """
    values = _apply_strip(parts) if quoted else [p.raw if isinstance(p, Literal) else "" for p in parts]
    out: list[str] = []
    for idx, part in enumerate(parts):
        if isinstance(part, Sequence):
            out.append(part.text)
            continue
        text = escape_template(values[idx]) if quoted else values[idx]
        nxt = parts[idx + 1] if idx + 1 < len(parts) else None
        if text and isinstance(nxt, Sequence) and text[-1] == nxt.text[0]:
            # "$" + "${x}" would read back as the escape "$${": keep the "$" out of it.
            text = text[:-1] + '${"' + text[-1] + '"}'
        out.append(text)
    return "".join(out)
