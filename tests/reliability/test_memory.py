"""The structural properties that keep a build's memory proportional to its input (issue 19).

Peak RSS itself is measured by scripts/memtest (docs/reliability.md, "Memory"); these tests pin
what those figures rely on, so that a change that brings the cost back fails here.
"""

from __future__ import annotations

import copy
import dataclasses
import gc
import io
import json
import os
import pickle
import sys
import tracemalloc
from array import array
from pathlib import Path

import pytest

from flatten.lang.model import Attribute, Block, Body, Expr, Pos, Range
from flatten.lang.options import Options
from flatten.shell import build_cache, cache_auth
from flatten.shell.build_cache import LazyBody, sealed
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


def _cache_in(monkeypatch: pytest.MonkeyPatch, directory: Path) -> None:
    """Point the build cache at ``directory``, with none of this process's cache state; skip
    where the machine has no cache key (the cache stores nothing then)."""
    monkeypatch.setenv("FLATTEN_CACHE_DIR", str(directory))
    monkeypatch.setattr(build_cache, "_STATE", {})
    if cache_auth.key() is None:
        pytest.skip("no cache key on this machine")


def test_a_range_holds_one_int_and_no_positions() -> None:
    r = Range.at("main.tf", 120_000, 17, 9_000_000, 120_003, 2, 9_000_150)
    assert not hasattr(r, "__dict__")
    assert not any(isinstance(o, Pos) for o in gc.get_referents(r))
    # 48 bytes of object and 40 of int, against about 300 for a range holding two Pos.
    assert sys.getsizeof(r) + sys.getsizeof(r._key) <= 88
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


def _variables(count: int) -> str:
    return "".join(
        f'variable "var_{i}" {{\n  type    = string\n  default = "value-{i}"\n}}\n' for i in range(count)
    )


def test_a_variable_block_of_the_model_takes_under_750_bytes() -> None:
    # 1,341 bytes when every item held Range objects, a separate Expr and 56-byte keys.
    count = 2_000
    text = _variables(count)
    gc.collect()
    tracemalloc.start()
    try:
        body, diags = hcl_fast.parse(text, "variables.tf", options=Options())
        gc.collect()
        size, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not diags.has_errors and len(body.items) == count
    assert size / count < 750


def test_the_model_holds_no_range_objects_and_keys_as_wide_as_needed() -> None:
    # A block deep in a large file, as positions go: line 400,002, byte 7,000,001.
    text = "\n" * 400_000 + " " * 6_600_000 + "\n" + _variables(1)
    body, diags = hcl_fast.parse(text, "v.tf", options=Options())
    assert not diags.has_errors
    block = next(i for i in body.items if isinstance(i, Block))
    attr = block.body.items[0]
    assert isinstance(attr, Attribute)
    for owner in (block, block.body, attr):
        assert not any(isinstance(o, (Range, Pos, Expr)) for o in gc.get_referents(owner))
    assert block.range.start.line > 400_000 and block.range.start.byte > 7_000_000
    assert sys.getsizeof(block.range._key) <= 36  # 56 with fixed 40-bit fields


def test_the_owners_behave_as_the_dataclasses_they_were() -> None:
    r1, r2, r3 = (
        Range.at("m.tf", 1, 1, 0, 1, 5, 4),
        Range.at("m.tf", 1, 8, 7, 1, 12, 11),
        Range.at("o.tf", 2, 1, 9, 2, 3, 11),
    )
    odd = Range("m.tf", Pos(-1, 0, 0), Pos(1, 2, 3))
    expr = Expr("${var.a}", r2)
    attr = Attribute("name", expr, r1)
    other_file = Attribute("name", expr, r3)  # a name in another file than its expression
    body = Body((attr, other_file), odd)
    block = Block("variable", ("a", "b"), body, r1, (r2, r3), (odd,))
    one = Block("variable", ("a",), Body(), r1, (r2,))
    assert (
        attr.expr == expr
        and attr.name_range == r1
        and other_file.name_range == r3
        and attr.value == "${var.a}"
    )
    assert (
        block.range == r1
        and block.label_ranges == (r2, r3)
        and body.range == odd
        and one.label_ranges == (r2,)
    )
    assert repr(expr) == f"Expr(value='${{var.a}}', range={r2!r})"
    assert repr(attr) == f"Attribute(name='name', expr={expr!r}, name_range={r1!r})"
    assert repr(body).startswith("Body(items=(Attribute(") and repr(body).endswith(f"range={odd!r})")
    assert hash(attr) == hash(("name", expr, r1)) and hash(expr) == hash(("${var.a}", r2))
    assert [f.name for f in dataclasses.fields(block)] == [
        "type",
        "labels",
        "body",
        "range",
        "label_ranges",
        "origins",
    ]
    assert dataclasses.replace(attr, expr=Expr(1, r3)) == Attribute("name", Expr(1, r3), r1)
    assert dataclasses.replace(block, labels=("c", "d")).label_ranges == (r2, r3)
    assert dataclasses.replace(body, items=()) == Body((), odd) != Body((), None)
    for value in (expr, attr, body, block, one):
        for clone in (
            pickle.loads(pickle.dumps(value)),
            pickle.loads(cache_dumps(value)),
            copy.deepcopy(value),
        ):
            assert clone == value and repr(clone) == repr(value)
    assert attr != Attribute("name", expr, r2) and block != dataclasses.replace(block, origins=())
    # A name after its expression, or far from it, is kept apart from the expression's key.
    for name_range in (r2, Range.at("m.tf", 1, 1, 0, 1, 2**21, 2**21)):
        apart = Attribute("name", Expr(0, r1), name_range)
        assert apart.name_range == name_range and apart.expr.range == r1
        assert pickle.loads(cache_dumps(apart)) == apart
    with pytest.raises(dataclasses.FrozenInstanceError):
        attr.name = "x"  # type: ignore[misc]


def test_a_module_entry_stores_a_variable_block_in_under_300_bytes_and_decodes_lazily() -> None:
    count = 2_000
    body, _ = hcl_fast.parse(_variables(count), "variables.tf", options=Options())
    data = cache_dumps(body, lazy=True)
    assert len(data) / count < 300  # 470 with a Range and a tuple of arguments per range
    back = pickle.loads(data)
    assert back == body
    lazy = back.items[5].body
    assert isinstance(lazy, LazyBody) and lazy._data is None  # decoded by ==: its bytes are dropped


def test_an_entry_is_sealed_in_one_buffer_in_the_format_it_had() -> None:
    body, _ = hcl_fast.parse(SOURCE, "main.tf", options=Options())
    head = b"\x00\x00\x00\x03abc"
    data = sealed(b"magic\n", (("module-header", len(head)), ("module", -1)), "k", head, body, lazy=True)
    payload = head + cache_dumps(body, lazy=True)
    assert data == b"magic\n" + cache_auth.tag("module-header", "k", head) + cache_auth.seal(
        "module", "k", payload
    )


def test_prefetched_entries_go_through_the_pipe_as_they_are_pickled() -> None:
    saved = dict(build_cache.MEMO)
    try:
        build_cache.MEMO.clear()
        build_cache.MEMO["k"] = b"entry" * 1000
        out = io.BytesIO()
        build_cache.export_prefetched(out)
        build_cache.MEMO.clear()
        out.seek(0)
        build_cache.import_prefetched(out)
        assert build_cache.MEMO["k"] == b"entry" * 1000
    finally:
        build_cache.MEMO.clear()
        build_cache.MEMO.update(saved)


def test_output_bytes_read_from_the_emit_cache_are_not_copied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flatten.shell import cache_dir

    _cache_in(monkeypatch, tmp_path)
    payload = b"x" * 4_000_000
    # Where a build keeps a module's output bytes, written as the cache writes every entry (in
    # the stamped directory it makes): an entry anywhere else is never read (flatten/gate.py).
    path = build_cache._emit_path("d")
    parts = (build_cache._EMIT_MAGIC, cache_auth.tag("emit", "d", payload), payload)
    assert cache_dir.write_entry(path, parts)
    tracemalloc.start()
    try:
        data = build_cache._read_emitted(path, "d")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert data == payload
    # The output once and the reader's 1 MB buffer (5.1 MB): 7.1 when the gate's reader read each
    # request into bytes of its own and copied them, 8 when the tag was sliced off the whole file.
    assert peak < 1.5 * len(payload)
    sealed = build_cache._EMIT_MAGIC + cache_auth.seal("emit", "d", payload)
    assert cache_dir.write_entry(path, sealed[:-1] + b"y")
    assert build_cache._read_emitted(path, "d") is None  # a changed byte: a miss
    assert cache_dir.write_entry(path, sealed)
    assert build_cache._read_emitted(path, "d") == payload
    assert build_cache._read_emitted(path, "e") is None  # stored under another key: a miss


# -- third round: entries in parts, written as encoded; emitting as it goes; readers' temporaries --


def _entry(count: int) -> tuple[int, build_cache.ModuleEntry]:
    from flatten.lang.model import ParsedFile
    from flatten.stages.merge import merge_module

    text = _variables(count)
    body, _ = hcl_fast.parse(text, "variables.tf", options=Options())
    files = (ParsedFile("variables.tf", "native", body),)
    module, _ = merge_module(files, directory=".", options=Options())
    return len(text), build_cache.ModuleEntry(".", files, (), ".", module, ())


def _traced(run: object) -> tuple[object, int, int]:
    """Return what ``run()`` returns, the memory it left allocated and its peak over where it started."""
    assert callable(run)
    gc.collect()
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        value = run()
        now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return value, now - base, peak - base


def test_an_entry_decodes_in_parts_that_keep_its_shared_blocks_shared() -> None:
    size, entry = _entry(5_000)
    _, data = build_cache.encode("k", entry)
    back, left, peak = _traced(lambda: build_cache.decode(data, "k"))
    assert isinstance(back, build_cache.ModuleEntry)
    assert back.module == entry.module and back.files == entry.files
    # A block the module keeps from its file is one object, as it was before the entry was stored.
    assert all(a is b for a, b in zip(back.module.blocks, back.files[0].body.items, strict=True))
    # One memo over the whole entry held every block's arguments until the end: 2.6 bytes per
    # input byte over what decoding leaves; parts of 1,024 blocks hold a part's.
    assert (peak - left) / size < 1.0


def test_a_module_entry_is_written_to_its_file_as_it_is_encoded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _cache_in(monkeypatch, tmp_path)
    size, entry = _entry(20_000)
    calls, _, peak = _traced(lambda: build_cache.write_entry("k", entry))
    assert calls == ()
    data = build_cache.read("k")
    assert data is not None and data == build_cache.encode("k", entry)[1]  # the same bytes as sealed
    decoded = build_cache.decode(data, "k")
    assert decoded is not None and decoded.module == entry.module
    # Encoding into bytes held the entry (3.4 bytes per input byte) and, with one memo over the
    # entry, every block's arguments: 11.7 over the model.
    assert peak / size < 4.0


def test_module_bytes_is_the_same_text_and_leaves_no_body_decoded() -> None:
    from flatten.stages.emit import module_bytes, module_json

    size, entry = _entry(20_000)
    _, data = build_cache.encode("k", entry)
    for provenance in (False, True):
        want = dumps(module_json(entry.module, provenance=provenance)).encode("utf-8")
        decoded = build_cache.decode(data, "k")
        assert decoded is not None
        out, left, peak = _traced(lambda d=decoded, p=provenance: module_bytes(d.module, provenance=p))
        assert out == want
        bodies = [b.body for b in decoded.module.blocks]
        assert all(isinstance(b, LazyBody) and b.stored() is not None for b in bodies)
        # The whole document beside every body decoded, then its text twice: 8.7 bytes per input
        # byte; written block by block, about three times the output (1.2 bytes per input byte);
        # encoded as it goes into one buffer, with one leaf object per variable rather than a list
        # each, 2.3 times (issue 30).
        assert peak / size < 5.0 and left <= len(want) * 1.1
        assert peak < 2.6 * len(want)  # 3.1 times before


def test_the_fast_reader_keeps_few_temporaries_beside_the_model() -> None:
    text = _variables(20_000)
    result, left, peak = _traced(lambda: hcl_fast.parse(text, "variables.tf", options=Options()))
    assert isinstance(result, tuple) and len(result[0].items) == 20_000
    # A list of line offsets was two ints a line (3.7 bytes per input byte over the model).
    assert (peak - left) / len(text) < 2.5


def test_the_json_reader_drops_its_tree_as_it_reads() -> None:
    from flatten.syntax.jsonsyntax import parse_json

    doc = {
        "variable": {f"v_{i}": {"type": "string", "default": {"a": [i, f"x{i}"]}} for i in range(10_000)},
        "resource": {
            "null_resource": {f"r{i}": {"triggers": {"k": f"${{var.v_{i}}}"}} for i in range(10_000)}
        },
    }
    text = json.dumps(doc, indent=2)
    result, left, peak = _traced(lambda: parse_json(text, "main.tf.json", options=Options()))
    assert isinstance(result, tuple) and not result[1].has_errors
    # The whole tree stayed until the last block was made: 13.9 bytes per input byte over the
    # model here (6.7 when each property is dropped as it is read).
    assert (peak - left) / len(text) < 9.0


def test_merging_keeps_no_state_per_block_it_will_not_need() -> None:
    from flatten.lang.model import ParsedFile
    from flatten.stages.merge import merge_module

    count = 20_000
    body, _ = hcl_fast.parse(_variables(count), "variables.tf", options=Options())
    files = (ParsedFile("variables.tf", "native", body),)
    result, _, peak = _traced(lambda: merge_module(files, directory=".", options=Options()))
    assert isinstance(result, tuple) and len(result[0].blocks) == count
    # A list of origins per block and a decoded state per variable without override files: 390.
    assert peak / count < 300


def test_prefetch_holds_no_file_bytes_while_it_computes_modules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flatten.shell import prefetch

    _cache_in(monkeypatch, tmp_path / "cache")
    root = tmp_path / "root"
    root.mkdir()
    text = _variables(30_000)
    (root / "variables.tf").write_text(text)
    seen: list[int] = []
    real = prefetch._compute_modules

    def computing(*args: object, **kwargs: object) -> object:
        seen.append(tracemalloc.get_traced_memory()[0])
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(prefetch, "_compute_modules", computing)
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        prefetch.prefetch(root, options=Options(), workers=1)
    finally:
        tracemalloc.stop()
        prefetch.finish()
    assert len(seen) == 1
    assert seen[0] - base < len(text) / 2  # the bytes read for the module's key are gone


def _glibc() -> bool:
    try:
        return os.confstr("CS_GNU_LIBC_VERSION") is not None
    except (ValueError, OSError, AttributeError):
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux") or not _glibc(), reason="glibc's malloc only")
def test_prefetching_processes_give_freed_buffers_back() -> None:
    # Freeing a large buffer raises glibc's mmap threshold to its size; buffers below it then
    # come from the heap and stay resident once freed. Prefetching processes fix the threshold.
    import threading

    from flatten.shell import prefetch

    if threading.active_count() > 1:
        pytest.skip("other threads are running in the test process: a forked child could deadlock")
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        code = 1
        try:
            prefetch._worker_init(os.getppid())
            os.write(write_end, str(_freed_buffers_kept()).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as f:
        grown = int(f.read() or b"-1")
    os.waitpid(pid, 0)
    assert 0 <= grown < 10 << 20  # 40 MB stay resident with the threshold raised


@pytest.mark.skipif(not sys.platform.startswith("linux") or not _glibc(), reason="glibc's malloc only")
def test_forked_helper_processes_give_freed_buffers_back() -> None:
    # Issue 38, item 13: a rebuild parses an edited module in a child of fanout.run_apart, which
    # is then its peak; as in a prefetching process, the large temporaries the parse frees go back.
    import threading

    from flatten.shell.fanout import run_apart

    if threading.active_count() > 1:
        pytest.skip("other threads are running in the test process: a forked child could deadlock")

    found = run_apart(_freed_buffers_kept)
    assert found is not None
    assert 0 <= found < 10 << 20  # 40 MB stay resident with the threshold raised


def _freed_buffers_kept() -> int:
    """How much of 39 MB of freed 1 MB buffers stays resident after a 16 MB buffer was freed
    (which raises glibc's mmap threshold unless the process fixed it)."""
    big = bytearray(16 << 20)
    del big  # allocated and freed: 16 MB
    before = _resident()
    kept = [bytearray(1 << 20) for _ in range(40)]
    last = kept.pop()
    kept.clear()  # 39 MB freed, below the last one
    found = _resident() - before
    del last
    return found


def _resident() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


STREAMED = """
terraform {
  required_version = ">= 1.0"
}
provider "aws" {
  alias  = "west"
  region = "us-west-2"
}
provider "aws" {
  region = "us-east-1"
}
locals {
  b = 2
}
locals {
  a = "${var.x}-1"
}
variable "x" {
  default = "v"
}
resource "aws_instance" "web" {
  ami = var.x
  ebs_block_device {
    device_name = "/dev/sdb"
  }
  dynamic "ebs_block_device" {
    for_each = [1]
    content {
      device_name = "/dev/sdc"
    }
  }
}
data "aws_ami" "base" {
  most_recent = true
}
moved {
  from = aws_instance.old
  to   = aws_instance.web
}
moved {
  from = aws_instance.older
  to   = aws_instance.old
}
output "id" {
  value = aws_instance.web.id
}
"""


@pytest.mark.parametrize("provenance", [False, True])
def test_module_bytes_streams_every_kind_of_block_as_module_json_writes_it(
    monkeypatch: pytest.MonkeyPatch, provenance: bool
) -> None:
    from flatten.lang.model import ParsedFile
    from flatten.stages import emit
    from flatten.stages.merge import merge_module

    body, diags = hcl_fast.parse(STREAMED, "main.tf", options=Options())
    assert not diags.has_errors
    module, _ = merge_module((ParsedFile("main.tf", "native", body),), directory=".", options=Options())
    want = dumps(emit.module_json(module, provenance=provenance)).encode("utf-8")
    monkeypatch.setattr(emit, "_STREAM_BLOCKS", 0)  # streamed, however small
    assert emit.module_bytes(module, provenance=provenance) == want
    _, data = build_cache.encode("k", build_cache.ModuleEntry(".", (), (), ".", module, ()))
    decoded = build_cache.decode(data, "k")
    assert decoded is not None and emit.module_bytes(decoded.module, provenance=provenance) == want


# -- issue 30: the stages after loading read cached bodies without keeping them decoded ----------

_WARM_ROOT = """
variable "image" {
  type    = string
  default = "x"
  validation {
    condition     = length(var.image) > 0
    error_message = "Must not be empty."
  }
}
locals {
  name = "${var.image}-${path.module}/files/a.txt"
}
resource "terraform_data" "r" {
  count = 2
  input = local.name
  lifecycle {
    ignore_changes = [input]
  }
}
output "o" {
  value = terraform_data.r[0].output
}
module "c" {
  source = "./child"
  size   = 3
}
"""

_WARM_CHILD = """
variable "size" {
  type    = number
  default = 1
}
variable "other" {
  default = "y"
}
resource "terraform_data" "c" {
  for_each = toset(["a"])
  input    = "${var.size}-${each.key}"
}
output "v" {
  value = var.other
}
"""


def test_a_warm_build_leaves_the_bodies_it_only_checks_undecoded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build from the module cache reads each resource, variable, locals and output body once,
    to check its references, inputs and path reads, and keeps none of them decoded: with every body
    decoded and kept, a warm build of 10 MB of HCL peaked at 148 MiB instead of 90."""
    from flatten.build import build
    from flatten.shell import parse_cache
    from flatten.shell import prefetch as prefetching
    from flatten.shell.memo import DiskMemo

    if cache_auth.key() is None:
        pytest.skip("no cache key on this machine")
    root = tmp_path / "tree"
    (root / "child").mkdir(parents=True)
    (root / "main.tf").write_text(_WARM_ROOT)
    (root / "child" / "main.tf").write_text(_WARM_CHILD)

    def forget() -> None:  # a new process: the caches' files stay, their in-process state goes
        prefetching.finish()
        monkeypatch.setattr(parse_cache, "_CACHE", {})
        monkeypatch.setattr(parse_cache, "_MEMO", {})
        monkeypatch.setattr(build_cache, "_STATE", {})
        monkeypatch.setattr(build_cache, "MEMO", {})
        monkeypatch.setattr(build_cache, "PREREAD", {})
        monkeypatch.setattr(build_cache, "EMITTED", {})
        monkeypatch.setattr(build_cache, "READ", set())

    forget()
    cold, diags = build(root, memo=DiskMemo())
    assert not diags.has_errors and cold.files
    forget()
    warm, diags = build(root, memo=DiskMemo())
    assert not diags.has_errors and warm.files == cold.files
    assert warm.graph is not None
    checked = [
        (node.address, block)
        for node in warm.graph.walk()
        for block in node.module.blocks
        if block.type in ("resource", "variable", "locals", "output")
    ]
    assert len(checked) == 8
    for address, block in checked:
        body = block.body
        assert isinstance(body, LazyBody), (address, block.type, block.labels)
        assert body.stored() is not None, f"{address or 'root'} {block.type} {block.labels} left decoded"


def test_a_lazy_body_answers_has_attribute_from_its_names() -> None:
    body, _ = hcl_fast.parse(_variables(3), "variables.tf", options=Options())
    back = pickle.loads(cache_dumps(body, lazy=True))
    lazy = back.items[1].body
    assert isinstance(lazy, LazyBody)
    assert lazy.has_attribute("default") and lazy.has_attribute("type")
    assert not lazy.has_attribute("nullable")
    assert lazy.stored() is not None  # answered from the stored names
    peeked = lazy.peek()
    assert type(peeked) is Body and peeked.items == lazy.peek_items() and peeked.range == lazy.range
    assert lazy.stored() is not None  # peek decodes for its caller only
    assert peeked == lazy


def test_output_bytes_stored_in_the_emit_cache_are_not_copied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flatten.lang.model import Module

    monkeypatch.setenv("FLATTEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(build_cache, "_STATE", {})
    if cache_auth.key() is None or not build_cache.enabled():
        pytest.skip("no cache key on this machine")
    module = Module(".", (), ("main.tf",))
    size = 4_000_000

    def compute() -> bytes:
        return b"x" * size

    data, _, peak = _traced(lambda: build_cache.emitted("k", module, module, False, compute))
    build_cache.finish()
    assert data == compute()
    # The queued entry was the magic, the tag and the output bytes concatenated: two more copies
    # of the output while it was sealed, one until the writer was done with it.
    assert peak < 1.2 * size
    stored = list(tmp_path.glob("emit/*/*")) or list(tmp_path.rglob("*"))
    digest = build_cache.emit_key("k", False, ".", ("main.tf",), [])
    assert build_cache._read_emitted(build_cache._emit_path(digest), digest) == data
    assert stored


def _native_cases() -> list[str]:
    return [
        SOURCE,
        SOURCE.rstrip("\n"),  # no newline at the end
        'locals {\n  a = "x"\n}\nresource "a" "b" {\n  x = \n}\n',  # a piece python-hcl2 reads
        'locals {\n  a = "\u00e9t\u00e9-${var.x}"\n}\n',  # not ASCII
        "\ufefflocals {\n  a = 1\n}\n",  # a byte order mark
        "locals {\r\n  a = 1\r\n}\r\n",
        "locals {\n  a = 1\n}\n\x00",  # a NUL of the file's own
        "locals {\n  a = 1\n",  # unclosed
        "# a comment at the end, no newline",
    ]


@pytest.mark.parametrize("text", _native_cases())
def test_a_source_text_reads_as_the_text_it_holds(text: str) -> None:
    from flatten.shell.parse_cache import ParseCache
    from flatten.syntax.sourcetext import SourceText, source_text

    padded = source_text(text.encode("utf-8"))
    assert isinstance(padded, SourceText) and padded.content == text
    assert hcl_fast.parse(padded, "main.tf", options=Options()) == hcl_fast.parse(
        text, "main.tf", options=Options()
    )
    cache = ParseCache(Path("unused"))  # keys either kind of the same file alike
    dialect = Options().dialect
    assert cache.key(padded, "main.tf", "native", dialect) == cache.key(text, "main.tf", "native", dialect)


def test_the_fast_reader_does_not_copy_a_source_text() -> None:
    from flatten.syntax.sourcetext import source_text

    text = _variables(20_000)
    padded = source_text(text.encode("utf-8"))
    plain, _, plain_peak = _traced(lambda: hcl_fast.parse(text, "variables.tf", options=Options()))
    read, _, peak = _traced(lambda: hcl_fast.parse(padded, "variables.tf", options=Options()))
    assert read == plain
    # Adding the sentinel to a text copied all of it while the caller's text stayed alive.
    assert plain_peak - peak > 0.8 * len(text)


# -- issue 38, item 13, third round: the checks' entries streamed; the build's own mmap threshold --


def _graph_part(count: int, names: list[str] | None = None) -> object:
    from flatten.stages.dependencies import GraphPart
    from flatten.stages.memo import ModuleChecks

    if names is None:
        names = [f"aws_instance.web_{i}" for i in range(count)]
    edges = array("i", range(count))
    graph = GraphPart(*GraphPart.packed(names), bytes(count), edges, edges[::-1], (), (), (), edges)
    return ModuleChecks((), graph)


def test_a_part_of_the_checks_holds_no_object_per_node() -> None:
    # A cold build holds every module's part of the checks at once: node numbers in arrays and
    # the names in one string, about 20 bytes a node here where a tuple of ints and a string
    # object per name were 160 (80 modules' parts: 27 MiB -> 7 MiB, scripts/memtest
    # --only modules; docs/reliability.md, "Memory").
    from flatten.stages.dependencies import GraphPart

    count = 20_000
    names = [f"module.app.module.web.aws_instance.web_{i} (expand)" for i in range(count)]
    part = _graph_part(count, names)
    data = pickle.dumps(part, protocol=pickle.HIGHEST_PROTOCOL)
    found, kept, _ = _traced(lambda: pickle.loads(data))
    assert found == part
    assert kept / count < 40
    graph = found.graph  # type: ignore[attr-defined]
    assert isinstance(graph, GraphPart)
    assert graph.names() == names
    # Names with nothing in common, and none at all, come back as they went in.
    for plain in (["var.a", "local.b (expand)", "", "module.x"], []):
        empty = array("i")
        assert GraphPart(*GraphPart.packed(plain), b"", empty, empty, (), (), (), empty).names() == plain


def test_a_part_of_the_checks_is_written_to_its_entry_as_it_is_pickled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flatten.stages.memo import CheckKey

    _cache_in(monkeypatch, tmp_path)
    part = _graph_part(200_000)
    size = len(pickle.dumps(part, protocol=pickle.HIGHEST_PROTOCOL))
    # What pickling it costs with nothing kept of the pickle: the pickler's memo (1.9 bytes per
    # byte of pickle for these names).
    _, _, pickling = _traced(lambda: build_cache.dump_into(_Sink(), part))
    key = CheckKey("m", "", "", "", False, (), "terraform", (1, 11), True)
    found, _, peak = _traced(lambda: build_cache.checked([(key, lambda: part)]))
    assert found == [part]
    digest = build_cache.check_digest(key)
    # Written by the time ``checked`` returns, and read back as the part it was.
    assert build_cache._read_checks(build_cache._checks_path(digest), digest) == part
    # Pickled into bytes for the background writer, the part was held whole beside the memo
    # (0.8 bytes per byte of pickle more: the pickle, and the buffer it grew in); written as it is
    # pickled, only the file's buffer (1 MiB, 0.15) is added.
    assert (peak - pickling) / size < 0.35


class _Sink:
    def write(self, data: bytes) -> int:
        return len(data)


def test_a_part_of_the_checks_with_a_url_userinfo_is_not_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flatten.lang.diagnostics import Diagnostic, Severity
    from flatten.stages.memo import ModuleChecks

    _cache_in(monkeypatch, tmp_path)
    url = "https://bob:pw@example.com/x.zip"
    secret = ModuleChecks((Diagnostic(Severity.ERROR, "Bad source", url),), None)
    path = build_cache._checks_path("d")
    assert not build_cache._write_checks(path, "d", secret)
    assert build_cache._read_checks(path, "d") is None
    assert build_cache._write_checks(path, "d", ModuleChecks((), None))
    assert build_cache._read_checks(path, "d") == ModuleChecks((), None)


@pytest.mark.skipif(not sys.platform.startswith("linux") or not _glibc(), reason="glibc's malloc only")
def test_the_build_process_gives_freed_buffers_back(tmp_path: Path) -> None:
    # A cold build's peak was its own process's (the checks' walk, the output's bytes) with the
    # threshold raised by the prefetched entry it had freed: 10 MiB of 10 MB of HCL. The check
    # runs where a build's first step after the replay starts (the early prefetch), in a process
    # of its own (the threshold is the process's). The replay comes first, without the forks
    # module (an identical rebuild's time is its imports): it reads a record and digests in
    # chunks of at most 1 MiB, and the threshold they may raise is fixed again after it.
    import subprocess
    import textwrap

    code = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_memory import _freed_buffers_kept
        from flatten.shell import process

        def first_step(argv, progress=None):
            print(_freed_buffers_kept())
            sys.exit(0)

        process._prefetch_early = first_step
        sys.argv = ["flatten", "build", {str(tmp_path)!r}, "--out", {str(tmp_path / "out")!r}]
        process.main()
        """
    )
    env = {**os.environ, "FLATTEN_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert 0 <= int(done.stdout) < 10 << 20  # 40 MB stay resident with the threshold raised
