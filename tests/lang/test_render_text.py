"""Rendering many diagnostics of one large file (flatten/lang/diagnostics.py ``render_text``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flatten.lang.diagnostics import Diagnostic, render_text
from flatten.lang.model import Range


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
    reads: list[Path] = []
    read_text = Path.read_text

    def counting(self: Path, *args: object, **kwargs: object) -> str:
        reads.append(self)
        return read_text(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "read_text", counting)
    text = render_text(diags, root=tmp_path)
    assert sorted(p.name for p in reads) == ["main.tf", "other.tf"]
    # Every snippet is still its own line of the file.
    assert '   2:   a0 = "x"' in text and '2001:   a1999 = "x"' in text and "   2:   b = 1" in text
