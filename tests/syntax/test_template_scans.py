"""Where a template's sequence and a quoted string inside it end (``_hcl_templates``).

``_sequence_end`` and ``_skip_quoted`` search for the next character they act on instead of
stepping one character at a time. Both readers (and the whole-file parse) share them, so the
readers' agreement cannot check them: here they are held to the one-character-at-a-time scan they
replaced, written out below as the rule, on generated text rich in what they look at; and
``_lstrip``'s one match strips exactly what ``is_hcl_space`` accepts.
"""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from flatten.syntax import _hcl_templates as templates


def _stepped_sequence_end(text: str, i: int, limit: int) -> int:
    depth = 0
    while i < limit:
        c = text[i]
        if c == '"':
            i = _stepped_skip_quoted(text, i + 1, limit)
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            if depth == 0:
                return i
            depth -= 1
        elif c == "#" or text.startswith("//", i) or text.startswith("/*", i):
            i = templates._skip_comment(text, i)
            continue
        elif c == "<" and text.startswith("<<", i) and templates._HEREDOC_OPEN.match(text, i):
            j = templates.skip_heredoc(text, i)
            if j < 0:
                break
            i = j
            continue
        elif c == "\\":
            raise templates.TemplateError("Invalid character", "", i)
        i += 1
    raise templates.TemplateError("Unclosed template interpolation sequence", "", i)


def _stepped_skip_quoted(text: str, i: int, limit: int) -> int:
    while i < limit:
        c = text[i]
        if c == "\\":
            i += 2
        elif c == '"':
            return i + 1
        elif text.startswith("$${", i) or text.startswith("%%{", i):
            i += 3
        elif text.startswith("${", i) or text.startswith("%{", i):
            i = _stepped_sequence_end(text, i + 2, limit) + 1
        else:
            i += 1
    return limit


def _outcome(scan: object, text: str, i: int, limit: int) -> object:
    try:
        return scan(text, i, limit)  # type: ignore[operator]
    except templates.TemplateError as exc:
        return (exc.summary, exc.offset)


_TEXT = st.text(alphabet='ab {}"#/*<\\$%~\nE-OT', max_size=40)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_TEXT, st.integers(0, 40), st.integers(0, 45))
@example('x "a//" } y', 0, 8)
@example("a /", 0, 2)  # "//" split by the limit
@example("a //b}", 0, 3)
@example("<<EOT\n}\nEOT\n}", 0, 14)
@example("ab${", 0, 3)  # an opener, or an escape, split by the limit
@example("ab$${x", 0, 3)
@example("ab%%{x", 0, 4)
@example('a\\"', 0, 2)
def test_the_scans_end_where_stepping_ends(text: str, start: int, limit: int) -> None:
    start = min(start, len(text))
    limit = min(limit, len(text))
    for scan, stepped in (
        (templates._sequence_end, _stepped_sequence_end),
        (templates._skip_quoted, _stepped_skip_quoted),
    ):
        assert _outcome(scan, text, start, limit) == _outcome(stepped, text, start, limit), (scan, text)


def test_the_strip_run_is_gos_space() -> None:
    # _lstrip strips one match of _HCL_SPACES: the characters is_hcl_space accepts (Go's
    # unicode.IsSpace), every one of them and nothing else, over all of Unicode.
    everything = "".join(map(chr, range(0x110000)))
    matched = {c for c in everything if templates._HCL_SPACES(c).end() == 1}  # type: ignore[union-attr]
    assert matched == {c for c in everything if templates.is_hcl_space(c)}
    assert templates._lstrip(" \t\n\x1cx ") == "\x1cx "
