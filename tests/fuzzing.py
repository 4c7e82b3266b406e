"""Input generators for fuzzing flatten: random and mutated configurations, valid and broken.

Used by tests/test_fuzz.py (a short run inside the test suite) and scripts/fuzz (the long run).
The invariant checked everywhere: flatten never raises; every failure is a diagnostic with a
location.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

from flatten.build import build
from flatten.diagnostics import Diagnostics
from flatten.hcl import parse_native
from flatten.jsonsyntax import parse_json
from flatten.merge import merge_module
from flatten.model import ParsedFile
from flatten.options import Dialect, Options

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"

TOKENS = [
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    "=",
    ",",
    ".",
    ":",
    "?",
    "\n",
    " ",
    '"',
    "${",
    "%{",
    "}",
    "~",
    "<<EOT\n",
    "<<-EOT\n",
    "EOT\n",
    "#",
    "//",
    "/*",
    "*/",
    "\\",
    "!",
    "-",
    "+",
    "*",
    "==",
    "=>",
    "...",
    "for",
    "in",
    "if",
    "null",
    "true",
    "1e3",
    "0.1",
    "var.x",
    "local.y",
    "each.key",
    'resource "a" "b"',
    "variable",
    "locals",
    "module",
    "provider",
    "terraform",
    "dynamic",
    "lifecycle",
    "count",
    "for_each",
    "depends_on",
    "\ufeff",
    "\r\n",
    "\t",
    "é",
    "\x00",
    "\udcff",
]


def corpus() -> list[tuple[str, str]]:
    """Return (name, text) of every sample, test and conformance configuration file."""
    roots = [REPO / "samples", REPO / "tests" / "data", SHARED / "conformance" / "cases"]
    out = []
    for root in roots:
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*")):
            if path.is_file() and path.name.endswith((".tf", ".tf.json", ".tofu", ".tofu.json", ".txt")):
                try:
                    out.append((path.name, path.read_text(encoding="utf-8")))
                except (OSError, UnicodeDecodeError):
                    continue
    return out


def mutate(text: str, rnd: random.Random) -> str:
    """Return ``text`` with a few random edits: deletions, insertions, swaps, duplications."""
    chars = list(text)
    for _ in range(rnd.randint(1, 4)):
        op = rnd.randrange(6)
        pos = rnd.randint(0, len(chars))
        if op == 0 and chars:
            del chars[pos : pos + rnd.randint(1, 8)]
        elif op == 1:
            chars[pos:pos] = list(rnd.choice(TOKENS))
        elif op == 2 and len(chars) > 2:
            a, b = rnd.randrange(len(chars)), rnd.randrange(len(chars))
            chars[a], chars[b] = chars[b], chars[a]
        elif op == 3 and chars:
            end = min(len(chars), pos + rnd.randint(1, 40))
            chars[pos:pos] = chars[pos:end]
        elif op == 4:
            chars[pos:pos] = list(rnd.choice(TOKENS) * rnd.randint(1, 50))
        else:
            chars = chars[: rnd.randint(0, len(chars))]
    return "".join(chars)


def random_tokens(rnd: random.Random) -> str:
    return "".join(rnd.choice(TOKENS) for _ in range(rnd.randint(0, 60)))


def inputs(seed: int, count: int) -> Iterator[tuple[str, str]]:
    """Yield ``count`` (filename, text) inputs: mutated corpus files and random token soup."""
    rnd = random.Random(seed)
    files = corpus()
    for _i in range(count):
        kind = rnd.random()
        if kind < 0.75 and files:
            name, text = rnd.choice(files)
            yield name, mutate(text, rnd)
        elif kind < 0.9:
            yield rnd.choice(["main.tf", "main.tf.json"]), random_tokens(rnd)
        else:
            depth = rnd.randint(1, 3000)
            yield (
                "deep.tf",
                "locals {\n  v = " + "[" * depth + "1" + "]" * rnd.choice([depth, depth - 1]) + "\n}\n",
            )


def check_text(name: str, text: str, dialect: Dialect) -> Diagnostics:
    """Load and merge one file; raise AssertionError when the invariant breaks."""
    options = Options(dialect=dialect)
    parse = parse_json if name.endswith(".json") else parse_native
    body, diags = parse(text, name, options=options)
    _module, merge_diags = merge_module(
        [ParsedFile(name, "json" if name.endswith(".json") else "native", body)],
        directory=".",
        options=options,
    )
    diags.extend(merge_diags)
    for d in diags:
        assert d.range is not None, f"diagnostic without a location: {d}"
    return diags


def check_tree(root: Path, dialect: Dialect) -> Diagnostics:
    result, diags = build(root, options=Options(dialect=dialect))
    for d in diags:
        assert d.range is not None or d.summary in {"Failed to read module directory"}, d
    if diags.has_errors:
        assert not result.tree.files
    return diags
