"""Reading a declined file in pieces (``hcl_fast.read_in_pieces``) against the whole-file reference.

A file the fast reader cannot read whole (a syntax error, or a construct it leaves to
python-hcl2) is read item by item; python-hcl2 reads only the pieces the fast reader declines.
Whenever that answers, its ``(Body, Diagnostics)`` must equal ``hcl.parse_native`` on the whole
file exactly: values, every range, every diagnostic (summary, detail, severity, positions). And
a typo in one block of a large file must cost python-hcl2 that block, not the file.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from support.hcl_cases import CASES, read_case
from support.paths import DATA, SAMPLES, SHARED

from flatten.lang.options import Dialect, Options
from flatten.syntax import hcl, hcl_fast
from flatten.syntax.hcl import parse_native


def _files() -> list[Path]:
    # Ordered by root, then by the path inside it: the random draws below pick from this list, so
    # its order must not depend on where the checkout (or ../shared) lives.
    found = []
    for root in (SHARED / "conformance" / "cases", SAMPLES, DATA):
        if root.is_dir():
            here = [p for p in root.rglob("*") if p.suffix in (".tf", ".tofu") and p.is_file()]
            found.extend(sorted(here, key=lambda p: p.relative_to(root).as_posix()))
    return found


def _texts() -> list[str]:
    texts = []
    for path in _files():
        try:
            texts.append(path.read_bytes().decode("utf-8"))
        except UnicodeDecodeError:
            continue
    texts.extend(read_case(path)[1] for path in CASES)
    return texts


TEXTS = _texts()

RESOURCE = """resource "terraform_data" "r{i}" {{
  count = var.n > 0 ? 1 : 0
  input = {{
    tags  = merge(var.tags, {{ index = "{i}" }})
    names = [for s in local.names : upper(s) if length(s) > 3]
  }}
  lifecycle {{
    ignore_changes = [input]
  }}
}}
"""
BIG = "".join(RESOURCE.format(i=i) for i in range(40))
MIDDLE = BIG.index('resource "terraform_data" "r20"')


def same(text: str, options: Options | None = None) -> bool:
    """Assert reading in pieces agrees with python-hcl2 on the whole text; return whether it answered."""
    options = options or Options()
    pieces = hcl_fast.read_in_pieces(text, "main.tf", options=options)
    if pieces is None:
        return False
    whole = parse_native(text, "main.tf", options=options)
    assert repr(pieces[0]) == repr(whole[0])  # repr shows the value types too
    assert repr(pieces[1]) == repr(whole[1])
    return True


def in_middle(old: str, new: str) -> str:
    """BIG with the first ``old`` of its middle block replaced by ``new``."""
    return BIG[:MIDDLE] + BIG[MIDDLE:].replace(old, new, 1)


@pytest.fixture
def pieces_read(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record the length of every text python-hcl2 is given."""
    seen: list[int] = []
    real = hcl._parse

    def spy(src: hcl._Source) -> object:
        seen.append(len(src.text))
        return real(src)

    monkeypatch.setattr(hcl, "_parse", spy)
    return seen


EDITS = {
    "double equals": ("count = var.n", "count = = var.n"),
    "missing equals": ("count = var.n", "count var.n"),
    "stray character": ("merge(var.tags", "merge(var.tags @"),
    "unclosed call": ("upper(s)", "upper(s"),
    "unclosed string": ('index = "20"', 'index = "20'),
    "missing comma in tuple": ("[input]", "[input input]"),
    "extra brace": ("ignore_changes = [input]\n  }", "ignore_changes = [input]\n  }}"),
    "unsupported argument": ('resource "terraform_data" "r20"', 'bogus = 1\nresource "terraform_data" "r20"'),
    "provider-defined function": ("upper(s)", "provider::a::b(s)"),
    "heredoc with a line that looks like an item": (
        "count = var.n > 0 ? 1 : 0",
        'count = 1\n  user_data = <<EOT\nresource "x" "y" {\nEOT\n  x = provider::a::b(1)',
    ),
    "block comment with a line that looks like an item": (
        "count = var.n",
        "count = /*\nresource x\n*/ var.n",
    ),
    "unclosed block comment": ("count = var.n", "count = /* var.n"),
    "unclosed heredoc": ("count = var.n > 0 ? 1 : 0", "count = <<EOT\nx"),
    "missing closing brace": ("ignore_changes = [input]\n  }\n}\n", "ignore_changes = [input]\n  }\n"),
    "missing nested closing brace": ("ignore_changes = [input]\n  }\n}\n", "ignore_changes = [input]\n}\n"),
}


@pytest.mark.parametrize("edit", EDITS.values(), ids=EDITS.keys())
def test_one_edit_in_a_large_file_agrees_with_the_whole_file(edit: tuple[str, str]) -> None:
    text = in_middle(*edit)
    assert hcl_fast.read_fast(text, "main.tf", options=Options()) is None
    assert same(text)


TYPOS = [
    "double equals",
    "stray character",
    "unsupported argument",
    "missing equals",
    "unclosed call",
    "missing closing brace",
    "missing nested closing brace",
]


@pytest.mark.parametrize("name", TYPOS)
def test_a_typo_costs_python_hcl2_its_block_only(name: str, pieces_read: list[int]) -> None:
    _, diags = hcl_fast.parse(in_middle(*EDITS[name]), "main.tf", options=Options())
    assert diags.has_errors
    assert pieces_read and max(pieces_read) < len(RESOURCE) + 40, pieces_read


def test_a_declined_construct_costs_python_hcl2_its_block_only(pieces_read: list[int]) -> None:
    """Valid syntax the fast reader leaves to python-hcl2 (a provider-defined function) is read
    there block by block, and the result equals the whole-file parse."""
    text = BIG.replace("upper(s)", "provider::a::b(s)")
    body, diags = hcl_fast.parse(text, "main.tf", options=Options())
    assert not diags and len(body.items) == 40
    assert len(pieces_read) == 40 and max(pieces_read) < len(RESOURCE) + 40
    assert same(text)
    names = body.blocks[5].body.attribute("input").value["names"]  # type: ignore[index,union-attr]
    assert names == "${[for s in local.names : provider::a::b(s) if length(s) > 3]}"


def test_a_heredoc_line_that_looks_like_an_item_makes_a_longer_piece(pieces_read: list[int]) -> None:
    text = in_middle(*EDITS["heredoc with a line that looks like an item"])
    body, diags = hcl_fast.parse(text, "main.tf", options=Options())
    assert not diags and len(body.items) == 40
    assert len(pieces_read) >= 2  # the first piece ended inside the heredoc
    assert same(text)


def test_a_missing_brace_and_a_stray_one_later() -> None:
    """The blocks between are read inside the unclosed one; the stray brace closes it."""
    text = in_middle(*EDITS["missing closing brace"])
    later = text.index('resource "terraform_data" "r30"')
    text = text[:later] + "}\n" + text[later:]
    assert same(text) or hcl_fast.read_fast(text, "main.tf", options=Options()) is not None
    body, diags = hcl_fast.read(text, "main.tf", options=Options())
    assert (body, diags) == parse_native(text, "main.tf", options=Options())


@pytest.mark.parametrize("after", ['"abc"\n', "terr(aform {\n}\n"])
def test_a_byte_order_mark_inside_the_file_is_the_error_there(after: str) -> None:
    """U+FEFF is a byte order mark only at the file's start; mid-file, before a block, it is the
    file's first syntax error, even when a later item is damaged too (found by the damaged
    concatenations without the conformance corpus: a piece starting there read it as a BOM)."""
    text = 'module "m" {\n  source = "./m"\n}\n\n\ufefflocals {\n  v = 1\n}\n\n' + after
    body, diags = hcl_fast.read(text, "main.tf", options=Options())
    assert (body, diags) == parse_native(text, "main.tf", options=Options())
    assert diags.has_errors and diags[0].range is not None and diags[0].range.start.line == 5


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_corpus_case(path: Path) -> None:
    headers, source, _, _ = read_case(path)
    same(source, Options(Dialect(headers.get("dialect", "terraform"))))


def test_repository_files() -> None:
    for text in TEXTS:
        for dialect in Dialect:
            same(text, Options(dialect))


_TOKENS = ["{", "}", "=", '"', "\n", "(", ")", "[", "]", ",", "<<EOT\n", "EOT\n", "/*", "*/", "#"]
_TOKENS += ["${", "%{", "::", "x", " = ", "provider::a::b(1)", '\\"', "-", "!", "$${", "~"]


def _damage(rng: random.Random, text: str) -> str:
    for _ in range(rng.randint(0, 3)):
        i = rng.randrange(len(text) + 1)
        op = rng.random()
        if op < 0.4:
            text = text[:i] + rng.choice(_TOKENS) + text[i:]
        elif op < 0.8:
            text = text[:i] + text[i + rng.randint(1, 5) :]
        else:
            j = rng.randrange(len(text) + 1)
            text = text[:i] + text[j : j + rng.randint(1, 40)] + text[i:]
    return text


@pytest.mark.parametrize("seed", range(4))
def test_damaged_concatenations(seed: int) -> None:
    """Several corpus files in one, damaged at random: many items, pieces anywhere."""
    rng = random.Random(seed)
    answered = 0
    for _ in range(150):
        # A byte order mark stays at the start only (one in the middle is left to the whole-file
        # parse: test_a_byte_order_mark_inside_the_file_is_the_error_there).
        parts = [rng.choice(TEXTS) for _ in range(rng.randint(2, 6))]
        text = _damage(rng, "\n".join([parts[0], *(p.removeprefix("\ufeff") for p in parts[1:])]))
        answered += same(text, Options(rng.choice(list(Dialect))))
    assert answered >= 140


def test_damaged_large_file() -> None:
    rng = random.Random(11)
    answered = sum(same(_damage(rng, BIG)) for _ in range(40))
    assert answered >= 35
