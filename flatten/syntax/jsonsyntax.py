"""Load a ``.tf.json`` / ``.tofu.json`` file into the shared representation.

Rule for the whole file: the JSON text is already in the representation's form, so nothing is
converted; values are kept verbatim (integers as ``int``, other numbers as ``Decimal``) and only
the block structure is read, exactly as HCL's JSON decoder reads it (spec §7.1–7.4): root object
or array of objects, block types as property names, one object level per label, a body object or
an array of bodies, ``"//"`` skipped only in bodies. Every problem is an error diagnostic with a
range, using HCL's and Terraform's summaries; nothing raises.

Positions follow HCL's JSON scanner: 1-based lines and columns (a tab in whitespace counts two
columns, a carriage return none), 0-based UTF-8 byte offsets into the file as given (a leading
byte order mark is skipped but still counted in byte offsets).
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from decimal import Decimal
from json import JSONDecodeError
from json.decoder import scanstring  # type: ignore[attr-defined]
from types import MappingProxyType
from typing import Final

from flatten.lang.blocks import top_schema
from flatten.lang.diagnostics import Code, Diagnostics, Extra
from flatten.lang.didyoumean import name_suggestion
from flatten.lang.fields import (
    REQUIRED_PROVIDERS_DETAIL,
    REQUIRED_PROVIDERS_OBJECT,
    REQUIREMENT_KEYS,
    BlockSchema,
    Mode,
    Requirement,
)
from flatten.lang.model import Attribute, Block, Body, Expr, JsonValue, Pos, Range
from flatten.lang.options import Options
from flatten.syntax.references import has_legacy_index
from flatten.syntax.traversal_string import traversal_problem

__all__ = ["parse_json"]

MAX_DEPTH: Final = 500  # deeper values would overflow later stages' recursion

_OBJ, _ARR, _STR, _SCALAR = 0, 1, 2, 3
_INVALID = 4  # a value HCL's parser gave up on (its ``invalidVal``): only on the error path

_TOKEN = re.compile(
    r"""[ \t\n\r]*(?:
      (?P<p>[{}\[\],:=])
    | (?P<s>"[^"\\\x00-\x1f]*")
    | (?P<q>")
    | (?P<n>[-+.0-9][-+.eE0-9]*)
    | (?P<k>[A-Za-z][A-Za-z_]*)
    | (?P<e>\Z)
    | (?P<x>.)
    )""",
    re.VERBOSE | re.DOTALL,
)
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?\Z")
_SURROGATE = re.compile("[\ud800-\udfff]")
_KEYWORDS: Final[MappingProxyType[str, JsonValue]] = MappingProxyType(
    {"true": True, "false": False, "null": None}
)
# Data for the decode stage, which re-reports some of these in OpenTofu's words (decode.py).
_INVALID_EXPRESSION = Extra(Code.INVALID_EXPRESSION)

_NOT_SINGLE = (
    "A single static variable reference is required: only attribute access and indexing with "
    "constant keys. No calculations, function calls, template expressions, etc are allowed here."
)
_VALUE_START = "A JSON value must start with a brace, a bracket, a number, a string, or a keyword."


# A template HCL reads without error: text, escaped "$${"/"%%{", and "${" sequences holding a plain
# reference (``var.a``, ``module.m.out[0]``); anything else goes to the template parser.
_PLAIN_TEMPLATE = re.compile(
    r"(?:[^$%]|\$\$\{|%%\{|[$%](?!\{)|\$\{[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*|\.\*|\[\d+\])*\})*\Z"
)


class _Node:
    """A parsed JSON value with its character span; objects keep every pair, duplicates included."""

    __slots__ = ("end", "items", "kind", "pairs", "start", "value")

    def __init__(self, kind: int, start: int, end: int, value: JsonValue = None) -> None:
        self.kind = kind
        self.start = start
        self.end = end
        self.value = value
        # Only objects have pairs and only arrays have items (left unset otherwise, for speed).
        self.pairs: list[tuple[str, int, int, _Node]]
        self.items: list[_Node]


# What a property of the tree is replaced with once it has been read (_Decoder.blocks, .body).
_READ: tuple[str, int, int, _Node] = ("", 0, 0, _Node(0, 0, 0))


_SYNTAX = Extra(Code.SYNTAX)
_EVALUATED = Extra(Code.EVALUATED)


class _SyntaxError(Exception):
    def __init__(self, summary: str, detail: str, start: int, end: int) -> None:
        super().__init__(summary)
        self.summary, self.detail, self.start, self.end = summary, detail, start, end
        # The containers open when _tree stopped, by start offset: what they held so far and the
        # offset after their last whole element. The recovering parser resumes from there.
        self.open: dict[int, _Node] = {}


class _TooDeep(_SyntaxError):
    """flatten's own nesting limit (``MAX_DEPTH``), not a syntax error of HCL's: nothing is read
    past it, so no recovering parse follows."""


class _Locator:
    """Turns character offsets into HCL positions, computing line tables once.

    Every lookup is a binary search over tables built once per file (line starts, tab/CR
    positions, non-ASCII characters), never a scan of the line: machine-written JSON is often one
    line of megabytes, where a per-lookup scan made parsing quadratic (minutes for 15 MB).
    """

    def __init__(self, text: str, filename: str) -> None:
        self.text, self.filename = text, filename
        self.bom = 1 if text.startswith("\ufeff") else 0
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.ascii = text.isascii()
        # Column adjustments (a tab counts +1, a CR -1; as before) and extra UTF-8 bytes, as
        # positions with running totals: the sum over [a, b) is two bisections.
        self.adjust_at, self.adjust_sum = self._table(text, "[\t\r]", lambda c: 1 if c == "\t" else -1)
        self.extra_at: list[int] = []
        self.extra_sum: list[int] = [0]
        if not self.ascii:
            self.extra_at, self.extra_sum = self._table(
                text, "[^\x00-\x7f]", lambda c: len(c.encode("utf-8", "surrogatepass")) - 1
            )

    @staticmethod
    def _table(text: str, pattern: str, weight: Callable[[str], int]) -> tuple[list[int], list[int]]:
        at: list[int] = []
        sums = [0]
        for m in re.finditer(pattern, text):
            at.append(m.start())
            sums.append(sums[-1] + weight(m.group()))
        return at, sums

    @staticmethod
    def _sum(at: list[int], sums: list[int], start: int, end: int) -> int:
        return sums[bisect_left(at, end)] - sums[bisect_left(at, start)]

    def pos(self, off: int) -> Pos:
        line = bisect_right(self.starts, off)
        ls = self.starts[line - 1]
        col = off - ls + 1 - (self.bom if line == 1 else 0)
        if self.adjust_at:
            col += self._sum(self.adjust_at, self.adjust_sum, ls, off)
        if self.ascii:
            return Pos(line, col, off)
        return Pos(line, col, off + self._sum(self.extra_at, self.extra_sum, 0, off))

    def range(self, start: int, end: int) -> Range:
        return Range(self.filename, self.pos(start), self.pos(end))


def _tree(text: str, start_at: int) -> _Node:
    """Return the root value of ``text``; raise _SyntaxError at the first syntax error.

    The error carries the containers still open (``_SyntaxError.open``): everything before the
    error is valid JSON that HCL's recovering parser would read the same way, so it need not read
    it again (a 20 MB file broken at its end: 16 s, not 44 s).
    """
    stack: list[_Node] = []  # open containers; while open, a container's end is after its last element
    try:
        return _tree_at(text, start_at, stack)
    except _SyntaxError as exc:
        exc.open = {node.start: node for node in stack}
        raise


def _tree_at(text: str, start_at: int, stack: list[_Node]) -> _Node:
    match = _TOKEN.match
    keys: list[tuple[str, int, int]] = []  # pending key of each open object
    pos = start_at
    root: _Node | None = None
    while True:
        # Read one value (or a container opener).
        m = match(text, pos)
        assert m is not None
        kind = m.lastgroup
        s, pos = m.start(kind or 0), m.end()
        node: _Node | None = None
        if kind == "s":
            node = _Node(_STR, s, pos, m.group("s")[1:-1])
        elif kind == "p":
            c = text[s]
            if c in "{[":
                if len(stack) >= MAX_DEPTH:
                    raise _TooDeep(
                        "Nesting too deep",
                        f"JSON values may be nested at most {MAX_DEPTH} levels deep.",
                        s,
                        s + 1,
                    )
                opened = _Node(_OBJ if c == "{" else _ARR, s, s + 1)
                if c == "{":
                    opened.pairs = []
                else:
                    opened.items = []
                stack.append(opened)
                m = match(text, pos)
                assert m is not None
                if m.lastgroup == "p" and text[m.start("p")] == ("}" if c == "{" else "]"):
                    pos = m.end()
                    node = stack.pop()
                    node.end = pos
                elif c == "{":
                    pos = _key(text, pos, keys)
                    continue
                else:
                    continue
            elif c == "}":
                raise _SyntaxError("Missing JSON value", _VALUE_START, s, s + 1)
            elif c == "]":
                raise _SyntaxError("Missing array element value", _VALUE_START, s, s + 1)
            else:
                raise _SyntaxError("Invalid start of value", _VALUE_START, s, s + 1)
        elif kind == "q":
            node = _string(text, s)
            pos = node.end
        elif kind == "n":
            raw = m.group("n")
            num = _NUMBER.match(raw)
            if num is None:
                raise _SyntaxError(
                    "Invalid JSON number", "There is a syntax error in the given JSON number.", s, pos
                )
            # "-0" stays a Decimal: an int would lose the sign that Terraform keeps.
            exact = Decimal(raw) if num.group(1) or num.group(2) or raw == "-0" else int(raw)
            node = _Node(_SCALAR, s, pos, exact)
        elif kind == "k":
            word = m.group("k")
            if word not in _KEYWORDS:
                raise _SyntaxError("Invalid JSON keyword", _keyword_detail(word), s, pos)
            node = _Node(_SCALAR, s, pos, _KEYWORDS[word])
        elif kind == "e":
            raise _SyntaxError("Missing value", "The JSON data ends prematurely.", s, s)
        else:
            raise _SyntaxError("Invalid start of value", _VALUE_START, s, s + 1)
        # Attach the finished value to its container, closing containers as they end.
        while True:
            if not stack:
                root = node
                break
            parent = stack[-1]
            if parent.kind == _OBJ:
                key, ks, ke = keys.pop()
                parent.pairs.append((key, ks, ke, node))
            else:
                parent.items.append(node)
            parent.end = pos
            m = match(text, pos)
            assert m is not None
            kind, s, pos = m.lastgroup, m.start(m.lastgroup or 0), m.end()
            c = text[s] if kind == "p" else ""
            is_obj = parent.kind == _OBJ
            if c == ",":
                m2 = match(text, pos)
                assert m2 is not None
                if m2.lastgroup == "p" and text[m2.start("p")] == ("}" if is_obj else "]"):
                    what, last = ("object", "property") if is_obj else ("array", "value")
                    raise _SyntaxError(
                        f"Trailing comma in {what}",
                        f"JSON does not permit a trailing comma after the final {last} in an {what}.",
                        s,
                        s + 1,
                    )
                if is_obj:
                    pos = _key(text, pos, keys)
                break
            if c == ("}" if is_obj else "]"):
                node = stack.pop()
                node.end = pos
                continue
            _after_value_error(kind, c, is_obj, parent.start, s, pos)
        if root is not None:
            break
    m = match(text, pos)
    assert m is not None
    if m.lastgroup != "e":
        s = m.start(m.lastgroup or 0)
        raise _SyntaxError(
            "Extraneous data after value", "Extra characters appear after the JSON value.", s, m.end()
        )
    return root


def _after_value_error(kind: str | None, c: str, is_obj: bool, open_at: int, s: int, end: int) -> None:
    if kind == "e":
        what = "brace was found for this JSON object" if is_obj else "bracket was found for this JSON array"
        raise _SyntaxError("Unclosed object", f"No closing {what}.", open_at, open_at + 1)
    if is_obj and c == "]":
        raise _SyntaxError(
            "Mismatched braces", "A JSON object must be closed with a brace, not a bracket.", s, s + 1
        )
    if not is_obj and c == "}":
        raise _SyntaxError(
            "Mismatched brackets", "A JSON array must be closed with a bracket, not a brace.", s, s + 1
        )
    if not is_obj and c == ":":
        raise _SyntaxError(
            "Invalid array value", "A colon is not used to introduce values in a JSON array.", s, s + 1
        )
    between = "property definition in an object" if is_obj else "value in an array"
    raise _SyntaxError(
        "Missing attribute seperator comma",
        f"A comma must appear between each {between}.",
        s,
        max(end, s + 1),
    )


def _key(text: str, pos: int, keys: list[tuple[str, int, int]]) -> int:
    """Read ``"key":`` at ``pos``, push it on ``keys`` and return the offset after the colon."""
    m = _TOKEN.match(text, pos)
    assert m is not None
    kind = m.lastgroup
    s = m.start(kind or 0)
    if kind == "s":
        key, ks, ke = m.group("s")[1:-1], s, m.end()
    elif kind == "q":
        node = _string(text, s)
        key, ks, ke = str(node.value), s, node.end
    elif kind == "e":
        raise _SyntaxError("Missing value", "The JSON data ends prematurely.", s, s)
    elif kind == "p" and text[s] in "}],:=":
        summaries = {"}": "Missing JSON value", "]": "Missing array element value"}
        summary = summaries.get(text[s], "Invalid start of value")
        raise _SyntaxError(summary, _VALUE_START, s, s + 1)
    elif kind == "x":
        raise _SyntaxError("Invalid start of value", _VALUE_START, s, s + 1)
    else:
        raise _SyntaxError(
            "Invalid object property name", "A JSON object property name must be a string", s, m.end()
        )
    m = _TOKEN.match(text, ke)
    assert m is not None
    s = m.start(m.lastgroup or 0)
    c = text[s] if m.lastgroup == "p" else ""
    if c != ":":
        if c in ("}", ","):
            raise _SyntaxError(
                "Missing object value",
                "A JSON object attribute must have a value, introduced by a colon.",
                s,
                s + 1,
            )
        detail = (
            "JSON uses a colon as its name/value delimiter, not an equals sign."
            if c == "="
            else "A colon must appear between an object property's name and its value."
        )
        raise _SyntaxError("Missing property value colon", detail, s, max(m.end(), s + 1))
    keys.append((key, ks, ke))
    return m.end()


def _string(text: str, s: int) -> _Node:
    """Decode the string with escapes starting at ``s``; lone surrogates become U+FFFD (as Go does)."""
    try:
        value, end = scanstring(text, s + 1, True)
    except JSONDecodeError as err:
        # Go's decoder reports the offset after the offending byte: for a bad escape, the
        # character after the backslash.
        at = err.pos + 2 if text.startswith("\\", err.pos) else err.pos
        raise _SyntaxError(
            "Invalid JSON string", "There is a syntax error in the given JSON string.", at, at + 1
        ) from None
    if _SURROGATE.search(value):
        value = _SURROGATE.sub("\ufffd", value)
    return _Node(_STR, s, end, value)


def _keyword_detail(word: str) -> str:
    if word in ("undefined", "NaN", "Infinity"):
        return f'The JavaScript identifier "{word}" cannot be used in JSON.'
    hint = name_suggestion(word.lower(), _KEYWORDS)
    return f'"{word}" is not a valid JSON keyword.' + _did_you_mean(hint)


def _did_you_mean(hint: str) -> str:
    return f' Did you mean "{hint}"?' if hint else ""


def _value(node: _Node, merge_blocks: bool, dup: list[tuple[str, _Node]]) -> JsonValue:
    """Return the JSON value of ``node``; duplicate object keys are reported through ``dup``.

    With ``merge_blocks`` (a provider-defined body, where an object may be a nested block), a
    key repeated with object/array values is read as repeated nested blocks and combined.
    """
    if node.kind == _OBJ:
        out: dict[str, JsonValue] = {}
        for key, _ks, _ke, child in node.pairs:
            value = _value(child, merge_blocks, dup)
            if key in out:
                old = out[key]
                if merge_blocks and isinstance(old, (list, dict)) and isinstance(value, (list, dict)):
                    out[key] = _combine(old, value)
                    continue
                dup.append((key, child))
                continue
            out[key] = value
        return out
    if node.kind == _ARR:
        # A loop, not a comprehension: a comprehension is a second frame per level, and MAX_DEPTH
        # levels of arrays would then exceed Python's recursion limit (found by scripts/fuzz).
        items: list[JsonValue] = []
        for item in node.items:
            items.append(_value(item, merge_blocks, dup))
        return items
    return node.value


def _combine(old: JsonValue, new: JsonValue) -> JsonValue:
    """Return the blocks of two definitions of one nested block type as one list."""
    result: list[JsonValue] = list(old) if isinstance(old, list) else [old]
    result.extend(new if isinstance(new, list) else [new])
    return result


class _Decoder:
    """Reads the block structure of a parsed file against the top-level schema."""

    def __init__(self, loc: _Locator, options: Options) -> None:
        self.loc = loc
        self.options = options
        # Where the validate walk reports a template's errors (the dialect table), they are kept
        # for it (stages/graph.py, ``ModuleNode.evaluated``).
        self.evaluated = _EVALUATED if options.dialect.allows("evaluated_json_templates") else None
        # Terraform reads a provider reference as a static traversal; OpenTofu's may hold an
        # instance key expression (provider for_each).
        self.static_providers = options.dialect.allows("terraform_releases")
        self.diags = Diagnostics()

    def rng(self, node: _Node) -> Range:
        return self.loc.range(node.start, node.end)

    def start_rng(self, node: _Node) -> Range:
        """The range HCL reports for a value: the opening brace/bracket, or the whole token."""
        end = node.start + 1 if node.kind in (_OBJ, _ARR) else node.end
        return self.loc.range(node.start, end)

    def error(self, summary: str, detail: str, start: int, end: int, *, extra: Extra | None = None) -> None:
        self.diags.error(summary, detail, self.loc.range(start, end), extra=extra)

    def _where(self, r: Range) -> str:
        if r.start.line == r.end.line:
            return f"{r.filename}:{r.start.line},{r.start.column}-{r.end.column}"
        return f"{r.filename}:{r.start.line},{r.start.column}-{r.end.line},{r.end.column}"

    def pairs(self, node: _Node, label: str | None) -> list[tuple[str, int, int, _Node]]:
        """Return the properties of an object or array of objects (HCL's collectDeepAttrs)."""
        what = (
            f"to specify {label} labels for this block" if label else "to define arguments and child blocks"
        )
        if node.kind == _OBJ:
            return node.pairs
        if node.kind == _ARR:
            found: list[tuple[str, int, int, _Node]] = []
            for item in node.items:
                if item.kind == _OBJ:
                    found.extend(item.pairs)
                else:
                    self.diags.error(
                        "Incorrect JSON value type",
                        f"A JSON object is required here, {what}.",
                        self.start_rng(item),
                    )
            return found
        if not (node.kind == _SCALAR and node.value is None):
            self.diags.error(
                "Incorrect JSON value type",
                f"Either a JSON object or JSON array of objects is required here, {what}.",
                self.start_rng(node),
            )
        return []

    def blocks(
        self,
        node: _Node,
        type_: str,
        schema: BlockSchema,
        labels: tuple[str, ...],
        label_ranges: tuple[Range, ...],
    ) -> list[Block]:
        """Return the blocks that ``node`` defines after ``labels`` have been read (HCL's unpackBlock)."""
        if len(labels) < len(schema.labels):
            name = schema.labels[len(labels)]
            props = self.pairs(node, name)
            if not props:
                self.diags.error(
                    "Missing block label",
                    "At least one object property is required, whose name represents the "
                    f"{type_} block's {name}.",
                    self.start_rng(node),
                )
                return []
            out: list[Block] = []
            for i, (key, ks, ke, child) in enumerate(props):
                # Each property is read once: dropped from the tree as it is read, so the tree of
                # a large file shrinks while its blocks are made (docs/reliability.md, "Memory").
                props[i] = _READ
                out += self.blocks(
                    child, type_, schema, (*labels, key), (*label_ranges, self.loc.range(ks, ke))
                )
                del child
            return out
        if node.kind == _OBJ:
            bodies, def_range = [node], self.start_rng(node)
        elif node.kind == _ARR:
            bodies, def_range = node.items, self.start_rng(node)
        else:
            if not (node.kind == _SCALAR and node.value is None):
                self.diags.error(
                    "Incorrect JSON value type",
                    "Either a JSON object or a JSON array is required, representing the contents "
                    f'of one or more "{type_}" blocks.',
                    self.start_rng(node),
                )
            return []
        return [Block(type_, labels, self.body(b, schema, type_), def_range, label_ranges) for b in bodies]

    def body(self, node: _Node, schema: BlockSchema, type_: str = "") -> Body:
        """Return the body ``node`` holds under ``schema``, diagnosing what the schema rejects."""
        just_attributes = schema.other is not None and not schema.other_blocks and not schema.blocks
        if just_attributes and node.kind != _OBJ:
            self.diags.error(
                "Incorrect JSON value type",
                "A JSON object is required here, setting the arguments for this block.",
                self.start_rng(node),
            )
            return Body((), self.rng(node))
        items: list[Attribute | Block] = []
        seen: dict[str, int] = {}  # attribute name -> index in items
        pairs = self.pairs(node, None)
        for i, (key, ks, ke, child) in enumerate(pairs):
            pairs[i] = _READ  # read once: dropped from the tree (see ``blocks``)
            if key == "//":
                continue
            nested = schema.blocks.get(key)
            if nested is None and key == "dynamic":
                dyn = schema.nested("dynamic")
                nested = dyn if dyn is not None and "content" in dyn.blocks else None
            if nested is not None:
                items += self.blocks(child, key, nested, (), ())
                continue
            mode = schema.attribute_mode(key)
            key_range = self.loc.range(ks, ke)
            if mode is None:
                names = [n for n in schema.attributes if n not in seen] + list(schema.blocks)
                hint = name_suggestion(key, names)
                self.diags.error(
                    "Extraneous JSON object property",
                    f'No argument or block type is named "{key}".' + _did_you_mean(hint),
                    key_range,
                    extra=Extra(Code.UNEXPECTED_ARGUMENT, key),
                )
                continue
            provider_defined = schema.other_blocks and key not in schema.attributes
            dup: list[tuple[str, _Node]] = []
            value = _value(child, provider_defined, dup)
            for dkey, dnode in dup:
                self.error(
                    "Duplicate object attribute",
                    f'An attribute named "{dkey}" was already defined in this object.',
                    dnode.start,
                    dnode.end,
                )
            if key in seen:
                old = items[seen[key]]
                assert isinstance(old, Attribute)
                both_blocks = isinstance(old.value, (list, dict)) and isinstance(value, (list, dict))
                if provider_defined and both_blocks:
                    combined = Expr(_combine(old.value, value), old.expr.range)
                    items[seen[key]] = Attribute(key, combined, old.name_range)
                    continue
                where = self._where(Range(old.name_range.filename, old.name_range.start, old.expr.range.end))
                self.diags.error(
                    "Duplicate attribute definition" if just_attributes else "Duplicate argument",
                    f'The argument "{key}" was already set at {where}.',
                    key_range,
                )
                continue
            self.check_mode(key, mode, child, type_)
            if mode is Mode.REQUIRED_PROVIDER and isinstance(value, dict):
                value = self.requirement(value, child)
            if mode is Mode.EXPR:
                self.templates(child)
            seen[key] = len(items)
            items.append(Attribute(key, Expr(value, self.rng(child)), key_range))
        return Body(tuple(items), self.rng(node))

    def requirement(self, value: dict[str, JsonValue], node: _Node) -> Requirement:
        """The items of a ``required_providers`` object Terraform reads: those before the first key
        it does not know (``check_mode`` reports that key), with each value's range."""
        out: dict[str, JsonValue] = {}
        ranges: dict[str, Range] = {}
        for key, _ks, _ke, child in node.pairs:
            if key not in REQUIREMENT_KEYS:
                break
            out[key] = value[key]
            ranges[key] = self.rng(child)
        return Requirement(out, ranges)

    def templates(self, node: _Node) -> None:
        """Terraform reads each string of an expression as a template (hcl/json/structure.go:
        ``hclsyntax.ParseTemplate`` from one column after the opening quote) when it evaluates
        it: a broken one ("Unclosed template interpolation sequence") is an error of the file.
        A string of plain text and simple references is well-formed and not parsed again."""
        stack = [node]
        while stack:
            n = stack.pop()
            if n.kind == _STR:
                text = n.value
                if (
                    isinstance(text, str)
                    and ("${" in text or "%{" in text)
                    and not _PLAIN_TEMPLATE.match(text)
                ):
                    from flatten.syntax._hcl_errors import template_errors

                    for d in template_errors(text):
                        at = n.start + 1 + d.start, n.start + 1 + d.end
                        self.error(d.summary, d.detail, *at, extra=self.evaluated)
            elif n.kind == _OBJ:
                stack.extend(child for _k, _ks, _ke, child in reversed(n.pairs))
            elif n.kind == _ARR:
                stack.extend(reversed(n.items))

    def check_mode(self, key: str, mode: Mode, node: _Node, type_: str) -> None:
        """Diagnose templates where Terraform reads a static reference (spec §7.3)."""
        if type_ == "import" and key == "to" and node.kind == _STR and "${" in str(node.value):
            # Terraform parses import.to as a native expression, which cannot start with "$".
            at = node.start + str(node.value).index("${")  # HCL reports one character early
            self.error("Invalid character", "This character is not used within the language.", at, at + 1)
            detail = "Expected the start of an expression, but found an invalid expression token."
            self.error("Invalid expression", detail, at, at + 1, extra=_INVALID_EXPRESSION)
        elif mode is Mode.TRAVERSAL:
            # import's "to" is parsed as an expression (configs/import.go ``unwrapJSONRefExpr``:
            # an index may be dynamic), not as a traversal; so is OpenTofu's provider reference
            # (an instance key of a provider with for_each).
            parsed = type_ != "import" and (key != "provider" or self.static_providers)
            self.traversal(node, "provider" if key == "provider" else "", parsed=parsed)
        elif mode is Mode.TRAVERSAL_LIST:
            self.traversal_list(node, parsed=key != "actions")
        elif mode is Mode.PROVIDER_MAP and node.kind == _OBJ:
            for _key, ks, ke, child in node.pairs:
                if "${" in _key or (self.static_providers and traversal_problem(_key) is not None):
                    self.error(
                        "Invalid provider configuration reference", _provider_detail("providers"), ks, ke
                    )
                self.traversal(child, "providers", parsed=self.static_providers)
        elif mode is Mode.REQUIRED_PROVIDER and node.kind == _OBJ:
            for name, ks, ke, child in node.pairs:
                if name == "configuration_aliases":
                    self.traversal_list(child)
                elif name not in REQUIREMENT_KEYS:
                    # Read in order up to the first other key, reported at the key (terraform
                    # internal/configs/provider_requirements.go, ``break LOOP``).
                    self.error(REQUIRED_PROVIDERS_OBJECT, REQUIRED_PROVIDERS_DETAIL, ks, ke)
                    break
        elif mode is Mode.IGNORE_CHANGES and node.kind == _ARR:
            for item in node.items:
                if item.kind == _STR and item.value == "*":
                    self.diags.error(
                        "Invalid ignore_changes wildcard",
                        'The ["*"] form of ignore_changes wildcard is was deprecated and is now invalid. '
                        'Use "ignore_changes = all" to ignore changes to all attributes.',
                        self.rng(node),
                    )
                else:
                    self.traversal(item, "")

    def traversal(self, node: _Node, provider_arg: str, *, parsed: bool = True) -> None:
        # Terraform reads these strings with hclsyntax.ParseTraversalAbs (hcl/json/structure.go,
        # ``AsTraversal``, which gives no traversal when it fails: syntax/traversal_string.py): a
        # template, a legacy index step (`aws_instance.a.0`, valid only in native syntax) or any
        # other text that is no traversal is rejected.
        if node.kind != _STR:
            return
        text = str(node.value)
        unreadable = parsed and traversal_problem(text) is not None
        if "${" not in text and not has_legacy_index(text) and not unreadable:
            return
        if provider_arg:
            self.error(
                "Invalid provider configuration reference",
                _provider_detail(provider_arg),
                node.start,
                node.end,
            )
        else:
            self.error("Invalid expression", _NOT_SINGLE, node.start, node.end, extra=_INVALID_EXPRESSION)

    def traversal_list(self, node: _Node, *, parsed: bool = True) -> None:
        if node.kind == _ARR:
            for item in node.items:
                self.traversal(item, "", parsed=parsed)
        elif not (node.kind == _SCALAR and node.value is None):
            detail = "A static list expression is required."
            self.error("Invalid expression", detail, node.start, node.end, extra=_INVALID_EXPRESSION)


def _provider_detail(arg: str) -> str:
    return (
        f"The {arg} argument requires a provider type name, optionally followed by a period and then "
        "a configuration alias."
    )


def parse_json(text: str, filename: str, *, options: Options) -> tuple[Body, Diagnostics]:
    """Return the top-level body of a JSON configuration file and its diagnostics.

    ``text`` is the decoded file content (a leading byte order mark is skipped); ``filename`` is
    used in ranges. Never raises: a JSON syntax error gives one error diagnostic and an empty
    body; structural problems give error diagnostics and the blocks that could be read. Blocks
    follow ``top_schema(options.dialect)``.

    >>> body, diags = parse_json('{"locals": {"a": 1.5}}', "main.tf.json", options=Options())
    >>> body.blocks[0].body.attribute("a").value, list(diags)
    (Decimal('1.5'), [])
    """
    start = 1 if text.startswith("\ufeff") else 0
    loc = _Locator(text, filename)
    decoder = _Decoder(loc, options)
    # The trees built here hold no cycles and collection passes would halve the speed: the shell
    # switches the collector off around parsing (flatten/shell/memo.py).
    return _decode(text, start, decoder, options)


def _decode(text: str, start: int, decoder: _Decoder, options: Options) -> tuple[Body, Diagnostics]:
    try:
        root = _tree(text, start)
    except _SyntaxError as exc:
        if isinstance(exc, _TooDeep):
            decoder.error(exc.summary, exc.detail, exc.start, exc.end)
            return Body(), decoder.diags
        # The error path: HCL's parser again, with its recovery (every error it reports, and the
        # partial tree Terraform decodes).
        root, errors = _Recovering(text, start, exc.open).file()
        for err in errors:
            decoder.error(err.summary, err.detail, err.start, err.end, extra=_SYNTAX)
        if root.kind not in (_OBJ, _ARR):
            return Body(), decoder.diags  # "Root value must be object" is among the errors
    if root.kind not in (_OBJ, _ARR):
        decoder.diags.error(
            "Root value must be object",
            "The root value in a JSON-based configuration must be either a JSON object or a JSON array "
            "of objects.",
            decoder.start_rng(root),
        )
        return Body(), decoder.diags
    return decoder.body(root, top_schema(options.dialect)), decoder.diags


class _Recovering:
    """hashicorp/hcl json/parser.go, with its recovery: a value that fails to parse becomes an
    invalid value (``wrapInvalid``) and its container goes on after ``recover`` moved past it, so
    one file may give several errors and a partial tree, which the decoder then reads as
    Terraform's does (an invalid value where a block belongs: "Incorrect JSON value type")."""

    def __init__(self, text: str, start: int, read: dict[int, _Node] | None = None) -> None:
        self.text = text
        self.pos = start
        self.errors: list[_SyntaxError] = []
        self._peeked: tuple[str, int, int] | None = None
        self.stop: int | None = None
        # Containers _tree had read up to its error (_SyntaxError.open), by start offset.
        self.read_before = read or {}

    def _resume(self, node: _Node) -> bool:
        """Take the elements _tree read of the container opened at ``node.start`` and move past
        them; return whether there were any (the caller then expects a comma or its closer)."""
        done = self.read_before.get(node.start)
        if done is None:
            return False
        if node.kind == _OBJ and done.pairs:
            node.pairs = list(done.pairs)
        elif node.kind == _ARR and done.items:
            node.items = list(done.items)
        else:
            return False
        self.pos, self._peeked = done.end, None
        return True

    def _scan(self, pos: int) -> tuple[str, int, int]:
        """The token at ``pos`` (json/scanner.go): its kind ("{", "}", "[", "]", ":", ",", "=",
        "string", "number", "keyword", "eof", "invalid"), start and end."""
        if self.stop is not None:
            return "eof", self.stop, self.stop
        m = _TOKEN.match(self.text, pos)
        assert m is not None
        kind = m.lastgroup or "x"
        s = m.start(kind)
        if kind == "p":
            return self.text[s], s, s + 1
        if kind in ("s", "q"):
            # A string token ends at its closing quote, or before a newline (json/scanner.go).
            i = s + 1
            text = self.text
            while i < len(text):
                c = text[i]
                if c == "\\":
                    i += 2
                    continue
                if c == '"':
                    return "string", s, i + 1
                if c == "\n":
                    return "string", s, i
                i += 1
            return "string", s, len(text)
        if kind == "n":
            return "number", s, m.end()
        if kind == "k":
            return "keyword", s, m.end()
        if kind == "e":
            return "eof", s, s
        # The scanner stops at a character it cannot read: the file ends after it.
        self.stop = s + 1
        return "invalid", s, s + 1

    def peek(self) -> tuple[str, int, int]:
        if self._peeked is None:
            self._peeked = self._scan(self.pos)
        return self._peeked

    def read(self) -> tuple[str, int, int]:
        tok = self.peek()
        self._peeked = None
        self.pos = tok[2]
        return tok

    def err(self, summary: str, detail: str, start: int, end: int) -> None:
        self.errors.append(_SyntaxError(summary, detail, start, end))

    def file(self) -> tuple[_Node, list[_SyntaxError]]:
        try:
            root = self.value(0)
        except RecursionError:
            root = _Node(_INVALID, self.pos, self.pos)
        if not self.errors and self.peek()[0] != "eof":
            tok = self.peek()
            self.err(
                "Extraneous data after value", "Extra characters appear after the JSON value.", tok[1], tok[2]
            )
        if root.kind not in (_OBJ, _ARR):
            self.err(
                "Root value must be object",
                "The root value in a JSON-based configuration must be either a JSON object or a JSON array "
                "of objects.",
                root.start,
                max(root.start + 1, root.end) if root.kind == _INVALID else root.end,
            )
        return root, self.errors

    def value(self, depth: int) -> _Node:
        kind, s, e = self.peek()
        node: _Node | None
        if depth >= MAX_DEPTH and kind in "{[":
            self.err(
                "Nesting too deep", f"JSON values may be nested at most {MAX_DEPTH} levels deep.", s, s + 1
            )
            node = None
        elif kind == "{":
            node = self.object(depth)
        elif kind == "[":
            node = self.array(depth)
        elif kind == "number":
            self.read()
            raw = self.text[s:e]
            num = _NUMBER.match(raw)
            if num is None:
                self.err("Invalid JSON number", "There is a syntax error in the given JSON number.", s, e)
                node = None
            else:
                exact = Decimal(raw) if num.group(1) or num.group(2) or raw == "-0" else int(raw)
                node = _Node(_SCALAR, s, e, exact)
        elif kind == "string":
            self.read()
            try:
                node = _string(self.text, s)
            except _SyntaxError as exc:
                self.errors.append(exc)
                node = None
        elif kind == "keyword":
            self.read()
            word = self.text[s:e]
            if word in _KEYWORDS:
                node = _Node(_SCALAR, s, e, _KEYWORDS[word])
            else:
                self.err("Invalid JSON keyword", _keyword_detail(word), s, e)
                node = None
        else:
            summary = {
                "}": "Missing JSON value",
                "]": "Missing array element value",
                "eof": "Missing value",
            }.get(kind, "Invalid start of value")
            detail = "The JSON data ends prematurely." if kind == "eof" else _VALUE_START
            self.err(summary, detail, s, e if e > s or kind == "eof" else s + 1)
            node = None
        return node if node is not None else _Node(_INVALID, s, max(s, e))

    def _recover(self, tok: tuple[str, int, int], opener: str, closer: str) -> None:
        depth = 1
        while True:
            if tok[0] == opener:
                depth += 1
            elif tok[0] == closer:
                depth -= 1
                if depth <= 1:
                    return
            elif tok[0] == "eof":
                return
            tok = self.read()

    def object(self, depth: int) -> _Node | None:
        open_tok = self.read()
        node = _Node(_OBJ, open_tok[1], open_tok[2])
        node.pairs = []
        resumed = self._resume(node)
        while True:
            if resumed:
                resumed = False
            elif self.peek()[0] == "}":
                break
            elif not self._property(node, depth):
                return None
            nxt = self.peek()
            if nxt[0] == ",":
                comma = self.read()
                if self.peek()[0] == "}":
                    self.err(
                        "Trailing comma in object",
                        "JSON does not permit a trailing comma after the final property in an object.",
                        comma[1],
                        comma[2],
                    )
                    return None
                continue
            if nxt[0] == "eof":
                self.err(
                    "Unclosed object",
                    "No closing brace was found for this JSON object.",
                    open_tok[1],
                    open_tok[2],
                )
                return None
            if nxt[0] == "]":
                self.read()
                at = self.peek()
                self.err(
                    "Mismatched braces",
                    "A JSON object must be closed with a brace, not a bracket.",
                    at[1],
                    at[2] if at[2] > at[1] else at[1],
                )
                return None
            if nxt[0] == "}":
                break
            self._recover(self.read(), "{", "}")
            at = self.peek()
            self.err(
                "Missing attribute seperator comma",
                "A comma must appear between each property definition in an object.",
                at[1],
                at[2],
            )
            return None
        close = self.read()
        node.end = close[2]
        return node

    def _property(self, node: _Node, depth: int) -> bool:
        """Read one ``"name": value`` into ``node``; False when it could not be read (the error
        is recorded and the object becomes invalid, as in json/parser.go)."""
        key = self.value(depth + 1)
        if key.kind != _STR:
            self.err(
                "Invalid object property name",
                "A JSON object property name must be a string",
                key.start,
                key.start + 1 if key.end <= key.start else key.end,
            )
            return False
        colon = self.read()
        if colon[0] != ":":
            self._recover(colon, "{", "}")
            if colon[0] in ("}", ","):
                self.err(
                    "Missing object value",
                    "A JSON object attribute must have a value, introduced by a colon.",
                    colon[1],
                    colon[2],
                )
            elif colon[0] == "=":
                self.err(
                    "Missing property value colon",
                    "JSON uses a colon as its name/value delimiter, not an equals sign.",
                    colon[1],
                    colon[2],
                )
            else:
                self.err(
                    "Missing property value colon",
                    "A colon must appear between an object property's name and its value.",
                    colon[1],
                    colon[2],
                )
            return False
        value = self.value(depth + 1)
        node.pairs.append((str(key.value), key.start, key.end, value))
        return True

    def array(self, depth: int) -> _Node | None:
        open_tok = self.read()
        node = _Node(_ARR, open_tok[1], open_tok[2])
        node.items = []
        resumed = self._resume(node)
        while True:
            if resumed:
                resumed = False
            elif self.peek()[0] == "]":
                break
            else:
                node.items.append(self.value(depth + 1))
            nxt = self.peek()
            if nxt[0] == ",":
                comma = self.read()
                if self.peek()[0] == "]":
                    self.err(
                        "Trailing comma in array",
                        "JSON does not permit a trailing comma after the final value in an array.",
                        comma[1],
                        comma[2],
                    )
                    return None
                continue
            if nxt[0] == "]":
                break
            self._recover(self.read(), "[", "]")
            at = self.peek()
            if nxt[0] == ":":
                self.err(
                    "Invalid array value",
                    "A colon is not used to introduce values in a JSON array.",
                    at[1],
                    at[2],
                )
            elif nxt[0] == "eof":
                self.err(
                    "Unclosed object",
                    "No closing bracket was found for this JSON array.",
                    open_tok[1],
                    open_tok[2],
                )
            elif nxt[0] == "}":
                self.err(
                    "Mismatched brackets",
                    "A JSON array must be closed with a bracket, not a brace.",
                    at[1],
                    at[2],
                )
            else:
                self.err(
                    "Missing attribute seperator comma",
                    "A comma must appear between each value in an array.",
                    at[1],
                    at[2],
                )
            return None
        close = self.read()
        node.end = close[2]
        return node


def json_tree(text: str) -> _Node:
    """The tree of a JSON file as HCL's parser keeps it (with its recovery), for navigation."""
    start = 1 if text.startswith("\ufeff") else 0
    try:
        return _tree(text, start)
    except _SyntaxError as exc:
        return _Recovering(text, start, exc.open).file()[0]
