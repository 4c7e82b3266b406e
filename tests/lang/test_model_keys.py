"""A range's packed key (``model._key``): the six numbers come back, and what cannot be packed
(a negative field, a field wider than 63 bits) keeps its two ``Pos``."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from flatten.lang.model import Pos, _fields, _key

_numbers = st.one_of(st.integers(0, 10**6), st.integers(-3, 3), st.integers(2**62, 2**64))


@given(_numbers, _numbers, _numbers, _numbers, _numbers, _numbers)
def test_key_packs_exactly_what_fits(
    line: int, column: int, byte: int, end_line: int, end_column: int, end_byte: int
) -> None:
    key = _key(line, column, byte, end_line, end_column, end_byte)
    fields = (line, column, byte, end_line - line, end_column, end_byte - byte)
    fits = all(f >= 0 for f in fields) and all(f.bit_length() <= 63 for f in fields)
    if fits:
        assert isinstance(key, int) and _fields(key) == fields
    else:
        assert key == (Pos(line, column, byte), Pos(end_line, end_column, end_byte))
