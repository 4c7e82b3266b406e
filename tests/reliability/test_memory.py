"""The structural properties that keep a build's memory proportional to its input (issue 19).

Peak RSS itself is measured by scripts/memtest (docs/reliability.md, "Memory"); these tests pin
what those figures rely on, so that a change that brings the cost back fails here.
"""

from __future__ import annotations

import copy
import gc
import json
import pickle
import sys

from flatten.lang.model import Attribute, Block, Body, Pos, Range
from flatten.lang.options import Options
from flatten.shell.build_cache import dumps as cache_dumps
from flatten.stages.emit import _JOIN_EVERY, dumps
from flatten.syntax import hcl_fast

SOURCE = """
variable "a" {
  type    = string
  default = "same"
}
variable "b" {
  type    = string
  default = "same"
}
resource "aws_instance" "web" {
  ami  = var.image
  tags = { Name = var.image }
  user_data = <<-EOT
    echo ${var.image}
  EOT
}
"""


def _reachable(root: object) -> list[object]:
    """Every object the model holds (not following into classes, functions or modules)."""
    seen: dict[int, object] = {}
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen[id(obj)] = obj
        if (
            isinstance(obj, (tuple, list, dict, Body, Block, Attribute, Range))
            or type(obj).__module__ == "flatten.lang.model"
        ):
            stack.extend(o for o in gc.get_referents(obj) if not isinstance(o, type))
    return list(seen.values())


def test_a_range_holds_one_int_and_no_positions() -> None:
    r = Range.at("main.tf", 120_000, 17, 9_000_000, 120_003, 2, 9_000_150)
    assert not hasattr(r, "__dict__")
    assert not any(isinstance(o, Pos) for o in gc.get_referents(r))
    # 48 bytes of object and 56 of int, against about 300 for a range holding two Pos.
    assert sys.getsizeof(r) + sys.getsizeof(r._key) <= 112
    assert r.start == Pos(120_000, 17, 9_000_000) and r.end == Pos(120_003, 2, 9_000_150)


def test_a_packed_range_behaves_as_the_dataclass_did() -> None:
    start, end = Pos(3, 5, 40), Pos(4, 1, 60)
    r = Range("m.tf", start, end)
    assert r == Range.at("m.tf", 3, 5, 40, 4, 1, 60) and hash(r) == hash(Range("m.tf", start, end))
    assert r != Range("n.tf", start, end) and r != Range("m.tf", start, Pos(4, 1, 61))
    assert (
        repr(r)
        == "Range(filename='m.tf', start=Pos(line=3, column=5, byte=40), end=Pos(line=4, column=1, byte=60))"
    )
    assert str(r) == "m.tf:3,5-4,1" and str(Range.point("m.tf", 2, 3)) == "m.tf:2,3-3"
    for clone in (pickle.loads(pickle.dumps(r)), pickle.loads(cache_dumps(r)), copy.deepcopy(r)):
        assert clone == r and clone.start == start and clone.end == end
    try:
        r.filename = "x"  # type: ignore[misc]
    except AttributeError:
        pass
    else:  # pragma: no cover
        raise AssertionError("a Range must stay immutable")
    # Positions that do not fit the packing are kept as they are, with the same behaviour.
    odd = Range("m.tf", Pos(-1, 0, 0), Pos(1, 2**41, 2**45))
    assert odd.start == Pos(-1, 0, 0) and odd.end == Pos(1, 2**41, 2**45)
    assert odd == Range.at("m.tf", -1, 0, 0, 1, 2**41, 2**45) and pickle.loads(pickle.dumps(odd)) == odd


def test_the_fast_reader_keeps_neither_the_text_nor_itself() -> None:
    text = SOURCE * 50
    body, diags = hcl_fast.parse(text, "main.tf", options=Options())
    assert not diags.has_errors
    objects = _reachable(body)
    assert not any(isinstance(o, hcl_fast._Reader) for o in objects)
    longest = max(len(o) for o in objects if isinstance(o, str))
    assert longest < 100  # no source text, nor a large slice of it, stays alive with the model


def test_the_fast_reader_shares_repeated_strings() -> None:
    body, _ = hcl_fast.parse(SOURCE, "main.tf", options=Options())
    blocks = [i for i in body.items if isinstance(i, Block)]
    a, b = (blk.body for blk in blocks[:2])
    assert isinstance(a, Body) and isinstance(b, Body)
    (a_type, a_default), (b_type, b_default) = a.attributes, b.attributes
    assert a_type.name is b_type.name and a_type.value is b_type.value  # "type", "string"
    assert a_default.value is b_default.value  # "same"
    web = blocks[2].body
    ami = web.attribute("ami")
    assert isinstance(ami, Attribute) and ami.value == "${var.image}"


def test_emitting_a_large_document_joins_as_it_goes_and_gives_the_same_text() -> None:
    # More pieces than _JOIN_EVERY, nested, so the text is joined several times mid-way.
    doc = {
        f"k{i:05d}": {"list": [i, f"v{i}", {"z": None, "a": True}], "empty": {}, "none": []}
        for i in range(_JOIN_EVERY // 4)
    }
    expected = json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert dumps(doc) == expected
