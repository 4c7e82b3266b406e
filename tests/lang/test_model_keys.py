"""A range's packed key (``model._key``): the six numbers come back, and what cannot be packed
(a negative field, a field wider than 63 bits) keeps its two ``Pos``."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from flatten.lang.model import Attribute, Pos, _fields, _key, make_attribute_at, make_attribute_on_line

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


_small = st.one_of(
    st.integers(0, 200), st.integers(2**19, 2**21), st.integers(2**62, 2**64), st.integers(-3, -1)
)


@settings(max_examples=1000)
@given(_small, _small, _small, _small, _small, _small, _small, _small)
def test_attribute_on_line_is_make_attribute_at(
    line: int, column: int, byte: int, name_size: int, gap: int, lines: int, end_column: int, size: int
) -> None:
    # The fast reader's one-call constructor builds what make_attribute_at builds from the keys.
    name_end, start = byte + name_size, byte + gap
    end_line, end_byte = line + lines, start + size
    name_key = _key(line, column, byte, line, column + name_size, name_end)
    key = _key(line, column + gap, start, end_line, end_column, end_byte)
    want = make_attribute_at("a", "${x}", "m.tf", name_key, key)
    got = make_attribute_on_line(
        "a", "${x}", "m.tf", line, column, byte, name_end, start, end_line, end_column, end_byte
    )
    assert [getattr(got, s) for s in Attribute.__slots__] == [getattr(want, s) for s in Attribute.__slots__]
    assert repr(got) == repr(want)
