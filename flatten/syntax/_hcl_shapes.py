"""The fast reader's shortcut for the common shapes of a computed expression, on one line.

``hcl_fast`` reads an expression by recursive descent (``expr`` -> ``binary`` -> ``unary`` ->
``term`` -> ``postfix``), a dozen Python calls and regex matches per token. Most expressions in
real configurations are one of a few shapes kept only as source text (``"${" + source + "}"``):
``var.n > 0 ? 1 : 0``, ``merge(var.tags, { a = "x" })``, ``[for s in local.l : upper(s) if s != ""]``.
``other_end`` finds where such an expression ends in a few regex matches, without building nodes.

Rule: ``other_end`` accepts a strict subset of what ``hcl_fast``'s reader accepts, and where it
accepts, it ends exactly where the reader ends and the reader's node would be kind ``_OTHER``
(never a literal, string, tuple, object or traversal, whose values the reader decodes). Hence:
only spaces and tabs between tokens (no newlines, comments or heredocs, where the reader's rules
depend on the context), no keyword or literal where the reader checks for one (``NAME`` excludes
them all), no escapes or template directives in strings, no ``...``, no nested conditional
without parentheses, no unary minus but on a number; anything else returns -1 and the reader
reads it. ``tests/syntax/test_hcl_shapes.py`` pins the agreement on the edges.

Rule: ``other_end`` reads no character past the end of its line (the first ``"\n"``, or the
reader's sentinel): no token it accepts holds a newline, and every lookahead stops at one. The
reader relies on it to answer a line's rest it has seen before from memory (``_Reader.expr``);
``test_reads_nothing_past_the_end_of_its_line`` pins it.
"""

from __future__ import annotations

import re

__all__ = ["other_end"]

_S = r"[ \t]*+"
# A name that is neither a keyword python-hcl2 lexes nor a literal: where the reader checks a
# name against either list, the shortcut simply does not accept it.
_NAME = (
    r"(?!(?:i[fn]|for(?:_each)?|else|end(?:if|for)|true|false|null)(?![A-Za-z0-9_-]))"
    r"[A-Za-z_][A-Za-z0-9_-]*+"
)
# As hcl_fast's number(): a number token, never followed by what would make it another token.
_NUM = r"-?[0-9]++(?:\.[0-9]++)?+(?:[eE][+-]?[0-9]++)?+(?![A-Za-z0-9_.])"
_PLAIN = r'"[^"\\$%\n\r\x00]*+"'
# A quoted template without escapes or directives; an interpolation holds one attribute chain.
_STR = r'"(?:[^"\\$%\n\r\x00]++|\$\$\{|%%\{|\$(?!\{)|%(?!\{)|\$\{' + _NAME + r"(?:\." + _NAME + r")*+\})*+\""
_LIT = r"(?:true|false|null)(?![A-Za-z0-9_.\[-])"
_INDEX = r"(?:[0-9]++(?![A-Za-z0-9_.])|" + _PLAIN + "|" + _NAME + r"(?:\." + _NAME + r")*+)"
_POST = r"(?:\." + _NAME + r"|\.\*|\[\*\]|\[" + _S + _INDEX + _S + r"\])*+"
# A reference (not a call: a name then "(" is one), a number, a string or a literal.
_TERM = re.compile(
    r"(?>" + _NAME + r"(?!::|[ \t]*+\()" + _POST + "|" + _NUM + "|" + _STR + "|" + _LIT + ")"
).match
_POSTFIX = re.compile(_POST).match
# A binary operator with the spaces around it; the reader declines "<<", "op=" and "-1" after an
# operand, and "/" starting a comment is not one.
_OPERATOR = re.compile(
    _S + r"(?:==|!=|<=|>=|&&|\|\||[+*%>](?!=)|<(?![<=])|-(?![=0-9])|/(?![/*=]))" + _S
).match
_OPERATOR_START = frozenset(" \t=!<>&|+-*/%")  # a cheap test before the regex
_NAME_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_CALL = re.compile(_NAME + r"(?!::)" + _S + r"\(" + _S).match
_ITEM_KEY = re.compile(_NAME + _S + r"=(?![=>])" + _S).match
_FOR = re.compile(r"for[ \t]++" + _NAME + r"(?:" + _S + "," + _S + _NAME + r")?+[ \t]++in[ \t]++").match
_SPACE = re.compile(_S).match


def other_end(text: str, i: int) -> int:
    """Return the end of the expression at ``i`` when the reader would read it as kind ``_OTHER``
    ending there and it has one of the shapes above; else -1. Trailing spaces are not consumed.

    ``text`` ends with a character no rule accepts (the reader's ``"\\x00"`` sentinel).
    """
    c = text[i]
    if c == "{" or c == "<":
        return -1  # an object (decoded) or a heredoc
    if c == "[":
        j = _SPACE(text, i + 1).end()  # type: ignore[union-attr]
        if not (text.startswith("for", j) and text[j + 3] in " \t"):
            return -1  # a tuple (decoded)
    e = _operand(text, i)
    if e < 0:
        return -1
    m = _OPERATOR(text, e) if text[e] in _OPERATOR_START else None
    if m is None:
        j = e if text[e] not in " \t" else _SPACE(text, e).end()  # type: ignore[union-attr]
        if text[j] == "?":
            return _conditional(text, j)
        # One operand: computed when a call, a negation, in parentheses or a for expression;
        # the reader decodes the rest (a literal, string, reference, tuple).
        return e if c in "![(" or (c in _NAME_START and _CALL(text, i) is not None) else -1
    while m is not None:
        e = _operand(text, m.end())
        if e < 0:
            return -1
        m = _OPERATOR(text, e) if text[e] in _OPERATOR_START else None
    j = e if text[e] not in " \t" else _SPACE(text, e).end()  # type: ignore[union-attr]
    if text[j] == "?":
        return _conditional(text, j)
    return e


def _conditional(text: str, j: int) -> int:
    """Return the end of ``? a : b`` at ``j`` (both branches without a conditional), or -1."""
    e = _binary(text, _SPACE(text, j + 1).end())  # type: ignore[union-attr]
    if e < 0:
        return -1
    k = e if text[e] not in " \t" else _SPACE(text, e).end()  # type: ignore[union-attr]
    if text[k] != ":" or text[k + 1] == ":":
        return -1
    return _binary(text, _SPACE(text, k + 1).end())  # type: ignore[union-attr]


def _expression(text: str, i: int) -> int:
    e = _binary(text, i)
    if e < 0:
        return -1
    j = e if text[e] not in " \t" else _SPACE(text, e).end()  # type: ignore[union-attr]
    if text[j] == "?":
        return _conditional(text, j)
    return e


def _binary(text: str, i: int) -> int:
    e = _operand(text, i)
    if e < 0:
        return -1
    m = _OPERATOR(text, e) if text[e] in _OPERATOR_START else None
    while m is not None:
        e = _operand(text, m.end())
        if e < 0:
            return -1
        m = _OPERATOR(text, e) if text[e] in _OPERATOR_START else None
    return e


def _operand(text: str, i: int) -> int:
    c = text[i]
    if c == "!":  # the reader: "!", spaces, then a term (never "-" or "!")
        j = _SPACE(text, i + 1).end()  # type: ignore[union-attr]
        if text[j] in "-!":
            return -1
        return _operand(text, j)
    if c == "(":
        j = _expression(text, _SPACE(text, i + 1).end())  # type: ignore[union-attr]
        if j < 0:
            return -1
        j = j if text[j] not in " \t" else _SPACE(text, j).end()  # type: ignore[union-attr]
        if text[j] != ")" or text[j + 1] in ".[":
            return -1  # a postfix after parentheses is left to the reader
        return j + 1
    if c == "[":
        return _bracket(text, i)
    if c == "{":
        return _object(text, i)
    m = _TERM(text, i)  # never a call: tried first, as the commoner
    if m is not None:
        return m.end()
    m = _CALL(text, i)
    if m is None:
        return -1
    j = _list(text, m.end(), ")")
    if j < 0:
        return -1
    return _POSTFIX(text, j).end()  # type: ignore[union-attr]


def _list(text: str, j: int, close: str) -> int:
    """Return the end of ``a, b, c)`` (or ``]``) at ``j``, a trailing comma allowed; or -1."""
    while text[j] != close:
        e = _expression(text, j)
        if e < 0:
            return -1
        j = e if text[e] not in " \t" else _SPACE(text, e).end()  # type: ignore[union-attr]
        if text[j] == ",":
            j = _SPACE(text, j + 1).end()  # type: ignore[union-attr]
        elif text[j] != close:
            return -1
    return j + 1


def _bracket(text: str, i: int) -> int:
    """A tuple, or ``[for a, b in coll : value if cond]``."""
    j = _SPACE(text, i + 1).end()  # type: ignore[union-attr]
    if not (text.startswith("for", j) and text[j + 3] in " \t\n"):
        return _list(text, j, "]")
    m = _FOR(text, j)  # the reader's is_for: then a for expression or nothing
    if m is None:
        return -1
    e = _expression(text, m.end())
    if e < 0:
        return -1
    k = e if text[e] not in " \t" else _SPACE(text, e).end()  # type: ignore[union-attr]
    if text[k] != ":" or text[k + 1] == ":":
        return -1
    e = _expression(text, _SPACE(text, k + 1).end())  # type: ignore[union-attr]
    if e < 0:
        return -1
    k = e if text[e] not in " \t" else _SPACE(text, e).end()  # type: ignore[union-attr]
    if text.startswith("if", k) and text[k + 2] in " \t":
        e = _expression(text, _SPACE(text, k + 2).end())  # type: ignore[union-attr]
        if e < 0:
            return -1
        k = e if text[e] not in " \t" else _SPACE(text, e).end()  # type: ignore[union-attr]
    return k + 1 if text[k] == "]" else -1


def _object(text: str, i: int) -> int:
    """``{ a = x, b = y }`` with name keys, on one line (the reader needs newlines between items
    without commas)."""
    j = _SPACE(text, i + 1).end()  # type: ignore[union-attr]
    while text[j] != "}":
        m = _ITEM_KEY(text, j)
        if m is None:
            return -1
        e = _expression(text, m.end())
        if e < 0:
            return -1
        j = e if text[e] not in " \t" else _SPACE(text, e).end()  # type: ignore[union-attr]
        if text[j] == ",":
            j = _SPACE(text, j + 1).end()  # type: ignore[union-attr]
        elif text[j] != "}":
            return -1
    return j + 1
