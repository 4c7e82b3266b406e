"""A native file's text as the fast reader takes it: followed by its end-of-file sentinel.

The fast reader (syntax/hcl_fast.py) reads to a NUL that no rule accepts, so that it needs no
bounds checks. Adding that NUL to a file's text copied the whole text while the original stayed
alive in every caller: for a 10 MB file, a tenth of the parse's peak memory (docs/reliability.md,
"Memory"). The loading stage decodes a native file with the NUL already in place instead; every
reader that takes a file's text takes either kind and reads a ``SourceText`` as the text before
its NUL. This module imports nothing of flatten: the parse cache keys such texts too.
"""

from __future__ import annotations

__all__ = ["SourceText", "content", "length", "source_text"]


class SourceText(str):
    """A file's text followed by one NUL, the fast reader's sentinel."""

    __slots__ = ()

    @property
    def content(self) -> str:
        """The text without its sentinel (a copy)."""
        return str.__getitem__(self, slice(0, -1))


def source_text(raw: bytes) -> SourceText:
    """Decode a native file's bytes (UTF-8) into its ``SourceText``; a UnicodeDecodeError is
    raised as ``raw.decode("utf-8")`` raises it, at the same position."""
    return SourceText(raw + b"\x00", "utf-8")


def content(text: str) -> str:
    """``text`` without the sentinel of a ``SourceText``; any other text as it is."""
    return text.content if isinstance(text, SourceText) else text


def length(text: str) -> int:
    """The length of the file's text (a ``SourceText`` without its sentinel)."""
    return len(text) - 1 if isinstance(text, SourceText) else len(text)
