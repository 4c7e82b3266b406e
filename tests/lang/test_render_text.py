"""Rendering many diagnostics of one large file (flatten/lang/diagnostics.py ``render_text``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flatten import gate
from flatten.lang.diagnostics import Diagnostic, render_text, text_order
from flatten.lang.model import Pos, Range


def test_each_file_is_read_once_however_many_diagnostics_it_has(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A 10 MB file with thousands of errors was read and split again for each snippet: the
    # rendering of a build of such a file ran for more than 15 minutes.
    lines = [f'  a{i} = "x"' for i in range(2_000)]
    (tmp_path / "main.tf").write_text("locals {\n" + "\n".join(lines) + "\n}\n")
    (tmp_path / "other.tf").write_text("locals {\n  b = 1\n}\n")
    diags = [
        Diagnostic.error("Bad", "detail", Range.point("main.tf", i + 2, 3, 0), "") for i in range(2_000)
    ] + [Diagnostic.error("Bad", "detail", Range.point("other.tf", 2, 3, 0), "")]
    reads: list[str] = []
    read = gate.source_reader(tmp_path)

    def counting(name: str) -> str | None:
        reads.append(name)
        return read(name)

    text = render_text(diags, root=tmp_path, read=counting)
    assert sorted(reads) == ["main.tf", "other.tf"]
    # Every snippet is still its own line of the file.
    assert '   2:   a0 = "x"' in text and '2001:   a1999 = "x"' in text and "   2:   b = 1" in text


def test_wrapping_never_makes_a_line_that_starts_a_workflow_command() -> None:
    """Issue 38, item 10: a name or server message holding ` ::stop-commands::x` and no control
    character was wrapped so that `::stop-commands::` started a line (the runner then ignored
    flatten's own annotations). Wrapped first, then every line made safe."""
    from flatten.lang.diagnostics import TextStyle

    for pad in range(0, 90):
        detail = "x" * pad + " ::stop-commands::tok ::warning file=a.tf::forged and more words follow here"
        for color in (False, True):
            text = render_text([Diagnostic.error("Bad", detail)], style=TextStyle(color=color, width=80))
            for line in text.splitlines():  # as the runner reads a line: leading white space trimmed
                assert not line.lstrip(" \t").startswith("::"), (pad, line)


def test_text_output_is_in_terraforms_order() -> None:
    """internal/tfdiags/diagnostics.go ``sortDiagnostics``: warnings before errors, no subject
    before a subject, fewer path segments first, then name, start byte, end byte; ties keep
    the order found."""

    def at(name: str, byte: int, end: int | None = None) -> Range:
        stop = byte + 1 if end is None else end
        return Range(name, Pos(1, byte + 1, byte), Pos(1, stop + 1, stop))

    found = [
        Diagnostic.error("deep", range=at("a/main.tf", 0)),
        Diagnostic.error("later", range=at("z.tf", 9)),
        Diagnostic.error("wider", range=at("z.tf", 3, 8)),
        Diagnostic.error("narrower", range=at("z.tf", 3, 5)),
        Diagnostic.error("first found"),
        Diagnostic.warning("warned", range=at("z.tf", 50)),
        Diagnostic.error("second found"),
        Diagnostic.error("same subject, found first", range=at("b.tf", 1)),
        Diagnostic.error("same subject, found second", range=at("b.tf", 1)),
    ]
    assert [d.summary for d in text_order(found)] == [
        "warned",
        "first found",
        "second found",
        "same subject, found first",
        "same subject, found second",
        "narrower",
        "wider",
        "later",
        "deep",
    ]
    text = render_text(found)
    assert text.index("Error: narrower") < text.index("Error: deep")
