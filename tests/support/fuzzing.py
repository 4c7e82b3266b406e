"""Input generators for fuzzing flatten: random and mutated configurations, valid and broken.

Used by tests/reliability/test_fuzz.py (a short run inside the test suite) and scripts/fuzz (the long run).
The invariant checked everywhere: flatten never raises; every failure is a diagnostic with a
location.
"""

from __future__ import annotations

import json
import os
import posixpath
import random
import struct
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from hypothesis import strategies as st

from flatten import gate
from flatten.build import build
from flatten.lang.diagnostics import Diagnostics, render_json, render_text
from flatten.lang.model import ParsedFile
from flatten.lang.options import Dialect, Options
from flatten.stages.merge import merge_module
from flatten.syntax.hcl import parse_native
from flatten.syntax.hcl_fast import read_fast
from flatten.syntax.jsonsyntax import parse_json
from support.paths import DATA, SAMPLES, SHARED

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
    roots = [SAMPLES, DATA, SHARED / "conformance" / "cases"]
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


def deep(rnd: random.Random) -> tuple[str, str]:
    """A deeply nested file: brackets, parentheses, objects, function calls, templates or blocks."""
    depth = rnd.randint(1, 3000)
    close = rnd.choice([depth, depth, depth - 1])
    k = rnd.randrange(6)
    if k == 0:
        v = "[" * depth + "1" + "]" * close
    elif k == 1:
        v = "(" * depth + "1" + ")" * close
    elif k == 2:
        v = "{a = " * depth + "1" + "}" * close
    elif k == 3:
        v = "max(" * depth + "1" + ")" * close
    elif k == 4:
        v = '"${' * depth + "1" + '}"' * close
    else:
        blocks = "b {\n" * depth + "}\n" * close
        return "deep.tf", f'resource "x" "y" {{\n{blocks}}}\n'
    if rnd.random() < 0.3:
        return "deep.tf.json", '{"locals": {"v": ' + "[" * depth + '"${' + v + '}"' + "]" * close + "}}"
    return "deep.tf", "locals {\n  v = " + v + "\n}\n"


def inputs(seed: int, count: int) -> Iterator[tuple[str, str]]:
    """Yield ``count`` (filename, text) inputs: mutated corpus files, generated configurations
    (valid, then maybe mutated), random token soup and deep nesting."""
    rnd = random.Random(seed)
    files = corpus()
    for _i in range(count):
        kind = rnd.random()
        if kind < 0.6 and files:
            name, text = rnd.choice(files)
            yield name, mutate(text, rnd)
        elif kind < 0.8:
            syntax = "json" if rnd.random() < 0.4 else "native"
            text = config_text(rnd, syntax)
            if rnd.random() < 0.5:
                text = mutate(text, rnd)
            yield ("main.tf.json" if syntax == "json" else "main.tf"), text
        elif kind < 0.9:
            yield rnd.choice(["main.tf", "main.tf.json"]), random_tokens(rnd)
        else:
            yield deep(rnd)


def check_text(name: str, text: str, dialect: Dialect) -> Diagnostics:
    """Load and merge one file; raise AssertionError when the invariant breaks.

    Native files go through both readers a build uses: the fast reader (``hcl_fast``, which
    answers or declines) and python-hcl2 (``hcl.parse_native``, the reference).
    """
    options = Options(dialect=dialect)
    if name.endswith(".json"):
        body, diags = parse_json(text, name, options=options)
    else:
        read_fast(text, name, options=options)  # must answer or decline, never raise
        body, diags = parse_native(text, name, options=options)
    _module, merge_diags = merge_module(
        [ParsedFile(name, "json" if name.endswith(".json") else "native", body)],
        directory=".",
        options=options,
    )
    diags.extend(merge_diags)
    for d in diags:
        assert d.range is not None, f"diagnostic without a location: {d}"
    return diags


# Diagnostics about a whole directory, not a file: they name the directory in their detail (and
# the module path when the directory is a child's). OpenTofu gives these no subject either.
DIRECTORY_SUMMARIES = frozenset({"Failed to read module directory", "Module file not copied"})


def check_diagnostics(diags: Diagnostics) -> None:
    """Every diagnostic has a location; one in a file below the root also names its module path."""
    for d in diags:
        if d.range is None:
            assert d.summary in DIRECTORY_SUMMARIES, f"diagnostic without a location: {d}"
            continue
        assert d.range.filename, f"diagnostic with an empty file name: {d}"
        assert d.range.start.line >= 1 and d.range.start.column >= 1, f"bad position: {d}"
        if "/" in d.range.filename and "//" not in d.range.filename:
            # A file in a subdirectory belongs to a child module (the root's files are at top
            # level), so a user must be told which module path it is.
            assert d.module.startswith("module."), f"child module diagnostic without its module path: {d}"
        if d.module:
            # Text names the file as Terraform does (`on modules/a/main.tf line 1, in ...:`, no
            # module path); the JSON report carries the module path as well.
            text = render_text([d])
            assert d.range.filename in text, text
            doc = json.loads(render_json([d]))["diagnostics"][0]
            assert doc["module"] == d.module and doc["range"]["filename"] == d.range.filename, doc


def check_tree(root: Path, dialect: Dialect) -> Diagnostics:
    """Run the whole build pipeline on ``root``; raise AssertionError when the invariant breaks."""
    result, diags = build(root, options=Options(dialect=dialect, offline=True))
    check_diagnostics(diags)
    if diags.has_errors:
        assert not result.tree.files
    else:
        assert "flatten.manifest.json" in result.tree.files
    return diags


# -- module trees ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Link:
    """A symbolic link in a generated tree (the target is written as is)."""

    target: str


TreeSpec = dict[str, "bytes | Link"]

NAMES = ["a", "b", "web", "db", "x_1", "this", "count", "for-each", "é"]
RTYPES = ["aws_instance", "terraform_data", "null_resource", "aws_s3_bucket", "google_thing"]


LITERALS = ["1", '"s"', "true", "null", '["a", 1]', '{ k = "v" }', "1.5e3", '"é$${x}"', "[]"]


def _name(rnd: random.Random) -> str:
    return rnd.choice(NAMES[:6]) if rnd.random() < 0.95 else rnd.choice(NAMES)


def _template(rnd: random.Random, depth: int) -> str:
    parts = []
    for _ in range(rnd.randint(0, 4)):
        k = rnd.randrange(8)
        if k == 0:
            parts.append("${" + _expr(rnd, depth + 1) + "}")
        elif k == 1:
            parts.append("$${literal}")
        elif k == 2:
            parts.append(rnd.choice(["\\n", '\\"', "\\\\", "\\u00e9", "\\t"]))
        elif k == 3:
            parts.append("%{ if " + _expr(rnd, depth + 1) + " }yes%{ else }no%{ endif }")
        elif k == 4:
            parts.append("%{ for v in var.list }${v},%{ endfor }")
        else:
            parts.append(rnd.choice(["text", "a b", "é", "x-y", "100%", "$", "%"]))
    return '"' + "".join(parts) + '"'


def _expr(rnd: random.Random, depth: int = 0) -> str:
    """A random native-syntax expression (valid, unless the references are unknown)."""
    k = rnd.randrange(15 if depth < 4 else 4)
    if k == 0:
        return rnd.choice(["1", "0", "-1", "1.5", "1e3", "100000000000000000000000", "0.000001"])
    if k == 1:
        return _template(rnd, depth)
    if k == 2:
        return rnd.choice(["true", "false", "null"])
    if k == 3:
        return rnd.choice(
            [
                "var.a",
                "local.b",
                "module.a.out",
                "each.key",
                "count.index",
                "aws_instance.web[0].id",
                "data.x_y.z.id",
                "path.module",
                "self.id",
                "var.list[*].id",
                'var.map["k"]',
            ]
        )
    if k == 4:
        return "[" + ", ".join(_expr(rnd, depth + 1) for _ in range(rnd.randint(0, 3))) + "]"
    if k == 5:
        items = [
            f"{_name(rnd).replace('é', 'e')} = {_expr(rnd, depth + 1)}" for _ in range(rnd.randint(0, 3))
        ]
        return "{" + ", ".join(items) + "}"
    if k == 6:
        fn = rnd.choice(["length", "merge", "lookup", "format", "try", "jsonencode", "file", "tomap", "nope"])
        return fn + "(" + ", ".join(_expr(rnd, depth + 1) for _ in range(rnd.randint(0, 3))) + ")"
    if k == 7:
        return f"{_expr(rnd, depth + 1)} ? {_expr(rnd, depth + 1)} : {_expr(rnd, depth + 1)}"
    if k == 8:
        op = rnd.choice(["+", "-", "*", "/", "%", "==", "!=", "<", ">=", "&&", "||"])
        return f"{_expr(rnd, depth + 1)} {op} {_expr(rnd, depth + 1)}"
    if k == 9:
        return f"[for x in {_expr(rnd, depth + 1)} : x if x != null]"
    if k == 10:
        return f"{{for k, v in {_expr(rnd, depth + 1)} : k => v...}}"
    if k == 11:
        return "<<" + rnd.choice(["", "-"]) + "EOT\n  line ${var.a}\n    more\n  EOT\n"
    if k == 12:
        return f"({_expr(rnd, depth + 1)})"
    if k == 13:
        return f"!{_expr(rnd, depth + 1)}"
    return f"{_expr(rnd, depth + 1)}[{_expr(rnd, depth + 1)}]"


def _attrs(rnd: random.Random, n: int) -> str:
    return "".join(f"  {rnd.choice(['a', 'b', 'tags', 'name', 'ami'])} = {_expr(rnd)}\n" for _ in range(n))


def _source(rnd: random.Random, here: str, dirs: list[str]) -> str:
    """A module source from directory ``here``: another generated directory (maybe an ancestor or
    itself, making a cycle), a missing one, the sibling outside the root, or a remote address."""
    k = rnd.random()
    if k < 0.75:
        target = rnd.choice(dirs)
        rel = posixpath.relpath(target or ".", here or ".")
        return rel if rel.startswith("..") else "./" + rel
    return rnd.choice(
        [
            "./missing",
            "../" * (here.count("/") + 2) + "outside",
            "./loop",
            "hashicorp/consul/aws",
            "git::https://example.com/x.git?ref=v1",
            "./",
            "../",
            "C:\\x",
            "",
            "./a/../../..//b",
        ]
    )


def native_block(rnd: random.Random, here: str = "", dirs: list[str] | None = None) -> str:
    dirs = dirs if dirs is not None else [""]
    k = rnd.randrange(14)
    n = _name(rnd)
    if k == 0:
        body = rnd.choice(
            ["", "  type = string\n", "  type = list(object({a = number}))\n", "  type = nope\n"]
        )
        body += rnd.choice(["", f"  default = {_expr(rnd)}\n"])
        body += rnd.choice(["", "  sensitive = true\n", '  description = "d"\n', "  nullable = false\n"])
        if rnd.random() < 0.2:
            body += f'  validation {{\n    condition = {_expr(rnd)}\n    error_message = "Bad."\n  }}\n'
        return f'variable "{n}" {{\n{body}}}\n'
    if k == 1:
        return "locals {\n" + _attrs(rnd, rnd.randint(0, 3)).replace("  tags", "  t") + "}\n"
    if k in (2, 3):
        kw = "resource" if k == 2 else "data"
        body = _attrs(rnd, rnd.randint(0, 3))
        body += rnd.choice(["", "  count = 2\n", "  for_each = var.map\n", "  provider = aws.west\n"])
        if rnd.random() < 0.3:
            body += "  lifecycle {\n    create_before_destroy = true\n    ignore_changes = [tags, ami]\n  }\n"
        if rnd.random() < 0.2:
            body += '  provisioner "local-exec" {\n    command = "echo ${self.id}"\n  }\n'
        if rnd.random() < 0.2:
            body += (
                '  dynamic "ebs" {\n    for_each = var.list\n'
                "    content {\n      size = ebs.value\n    }\n  }\n"
            )
        if rnd.random() < 0.2:
            body += f"  depends_on = [{rnd.choice(RTYPES)}.{n}]\n"
        return f'{kw} "{rnd.choice(RTYPES)}" "{n}" {{\n{body}}}\n'
    if k == 4:
        return f'output "{n}" {{\n  value = {_expr(rnd)}\n' + rnd.choice(["", "  sensitive = true\n"]) + "}\n"
    if k == 5:
        return 'provider "aws" {\n  region = "eu-west-1"\n' + rnd.choice(["", '  alias = "west"\n']) + "}\n"
    if k == 6:
        return (
            'terraform {\n  required_version = ">= 1.0"\n  required_providers {\n'
            '    aws = {\n      source  = "hashicorp/aws"\n      version = "~> 5.0"\n    }\n  }\n'
            + rnd.choice(["", '  backend "s3" {\n    bucket = "b"\n  }\n', "  experiments = [x]\n"])
            + "}\n"
        )
    if k in (7, 8, 9):
        src = _source(rnd, here, dirs)
        body = f'  source = "{src}"\n'
        if not src.startswith(".") or rnd.random() < 0.05:
            body += '  version = "~> 1.0"\n'
        body += rnd.choice(
            ["", "  count = 1\n", '  for_each = toset(["a"])\n', "  depends_on = [aws_instance.a]\n"]
        )
        body += rnd.choice(["", "  providers = {\n    aws = aws.west\n  }\n"])
        body += _attrs(rnd, rnd.randint(0, 2))
        return f'module "{n}" {{\n{body}}}\n'
    if k == 10:
        return f"moved {{\n  from = {rnd.choice(RTYPES)}.a\n  to   = {rnd.choice(RTYPES)}.{n}\n}}\n"
    if k == 11:
        return f'import {{\n  to = {rnd.choice(RTYPES)}.{n}\n  id = "i-1"\n}}\n'
    if k == 12:
        cond = _expr(rnd)
        return f'check "{n}" {{\n  assert {{\n    condition = {cond}\n    error_message = "m"\n  }}\n}}\n'
    return f"removed {{\n  from = {rnd.choice(RTYPES)}.{n}\n  lifecycle {{\n    destroy = false\n  }}\n}}\n"


def _json_value(rnd: random.Random, depth: int = 0) -> object:
    k = rnd.randrange(7 if depth < 3 else 4)
    if k == 0:
        return rnd.choice([0, 1, -5, 1.5, 10**20, "1e400"])
    if k == 1:
        return rnd.choice(["plain", "${var.a}", "$${x}", "%{ if true }y%{ endif }", "${", "é"])
    if k == 2:
        return rnd.choice([True, False, None])
    if k == 3:
        return "${" + _expr(rnd, 3) + "}"
    if k == 4:
        return [_json_value(rnd, depth + 1) for _ in range(rnd.randint(0, 3))]
    return {
        rnd.choice(["a", "b", "//", "count"]): _json_value(rnd, depth + 1) for _ in range(rnd.randint(0, 3))
    }


def json_config(rnd: random.Random, here: str = "", dirs: list[str] | None = None) -> str:
    """A random configuration in JSON syntax (well-formed JSON; the Terraform shape may be wrong)."""
    dirs = dirs if dirs is not None else [""]
    doc: dict[str, object] = {}
    for _ in range(rnd.randint(0, 5)):
        k = rnd.randrange(8)
        n = _name(rnd)
        if k == 0:
            doc.setdefault("variable", {})[n] = {
                "default": _json_value(rnd),
                "type": rnd.choice(["string", "any", "list(string)"]),
            }  # type: ignore[index]
        elif k == 1:
            doc.setdefault("locals", {})[n] = _json_value(rnd)  # type: ignore[index]
        elif k == 2:
            doc.setdefault("resource", {}).setdefault(rnd.choice(RTYPES), {})[n] = {  # type: ignore[union-attr]
                "a": _json_value(rnd),
                "lifecycle": {"ignore_changes": ["a"]},
            }
        elif k == 3:
            doc.setdefault("module", {})[n] = {"source": _source(rnd, here, dirs), "x": _json_value(rnd)}  # type: ignore[index]
        elif k == 4:
            doc.setdefault("output", {})[n] = {"value": _json_value(rnd)}  # type: ignore[index]
        elif k == 5:
            doc["terraform"] = {"required_version": ">= 1.0"}
        elif k == 6:
            doc["//"] = "comment"
        else:
            doc[rnd.choice(["provider", "data", "moved", "bogus"])] = _json_value(rnd)
    return json.dumps(doc, indent=rnd.choice([None, 2]), ensure_ascii=rnd.random() < 0.5)


def config_text(rnd: random.Random, syntax: str, here: str = "", dirs: list[str] | None = None) -> str:
    if syntax == "json":
        return json_config(rnd, here, dirs)
    return "\n".join(native_block(rnd, here, dirs) for _ in range(rnd.randint(0, 6)))


def damage(data: bytes, rnd: random.Random) -> bytes:
    """Break a file at the byte level: BOM, CRLF, invalid UTF-8, NUL, binary garbage, truncation."""
    k = rnd.randrange(7)
    if k == 0:
        return b"\xef\xbb\xbf" + data
    if k == 1:
        return data.replace(b"\n", b"\r\n")
    if k == 2:
        pos = rnd.randint(0, len(data))
        return data[:pos] + rnd.choice([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf0\x28\x8c"]) + data[pos:]
    if k == 3:
        pos = rnd.randint(0, len(data))
        return data[:pos] + b"\x00" + data[pos:]
    if k == 4:
        return bytes(rnd.randrange(256) for _ in range(rnd.randint(0, 300)))
    if k == 5:
        return data[: rnd.randint(0, len(data))]
    return data.replace(b"\n", b"\r")


def break_file(data: bytes, rnd: random.Random) -> bytes:
    """Return a broken version of a file: a text mutation or byte-level damage."""
    if rnd.random() < 0.6:
        text = data.decode("utf-8", "surrogateescape")
        return mutate(text, rnd).encode("utf-8", "surrogateescape")
    return damage(data, rnd)


def _constant(rnd: random.Random) -> str:
    """An expression that names nothing: what ``terraform validate`` accepts anywhere."""
    return rnd.choice(['"plain"', "1", "true", "null", '["a", 2]', '{ k = "v" }', '"${1 + 1}"', "1e3"])


def valid_tree(rnd: random.Random, *, references: bool = True) -> TreeSpec:
    """A random module tree that loads cleanly: each directory calls only directories below it.

    Its expressions name variables, resources and iterators nobody declares (the loader does not
    mind; ``terraform validate``, and so ``flatten build``, does): ``references=False`` keeps to
    constants, for a tree that builds."""
    expr = _expr if references else _constant
    dirs = [""]
    for _ in range(rnd.randint(0, 5)):
        parent = rnd.choice(dirs)
        child = rnd.choice(["modules/", ""]) + rnd.choice(["a", "b", "net", "db", "x"]) + str(len(dirs))
        dirs.append(posixpath.join(parent, child) if parent else child)
    spec: TreeSpec = {}
    for d in dirs:
        below = [t for t in dirs if t != d and (d == "" or t.startswith(d + "/"))]
        blocks = [
            f'variable "v{i}" {{\n  default = {rnd.choice(LITERALS)}\n}}\n' for i in range(rnd.randint(0, 2))
        ]
        blocks += [f"locals {{\n  l{i} = {expr(rnd)}\n}}\n" for i in range(rnd.randint(0, 2))]
        blocks += [
            f'resource "terraform_data" "r{i}" {{\n  input = {expr(rnd)}\n}}\n'
            for i in range(rnd.randint(0, 2))
        ]
        for i, target in enumerate(rnd.sample(below, min(len(below), rnd.randint(0, 2)))):
            blocks.append(f'module "m{i}" {{\n  source = "./{posixpath.relpath(target, d or ".")}"\n}}\n')
        if rnd.random() < 0.3:
            spec[posixpath.join(d, "extra.tf.json")] = json.dumps(
                {"output": {"o": {"value": "${1 + 1}"}}}
            ).encode()
        spec[posixpath.join(d, "main.tf")] = "\n".join(blocks).encode()
    return spec


def random_tree(rnd: random.Random) -> TreeSpec:
    """A random tree of module directories calling each other through local sources.

    About half the trees are valid configurations; the rest have a broken file (a text mutation
    or byte-level damage), a symlink loop, or calls that form a cycle or point nowhere.
    """
    dirs = [""]
    for _ in range(rnd.randint(0, 6)):
        parent = rnd.choice(dirs)
        child = rnd.choice(["modules/", "", "sub/"]) + rnd.choice(["a", "b", "net", "db", "x"])
        dirs.append(posixpath.join(parent, child) if parent else child)
    dirs = sorted(set(dirs))
    spec: TreeSpec = {}
    for d in dirs:
        for i in range(rnd.randint(1, 3)):
            syntax = "json" if rnd.random() < 0.25 else "native"
            base = rnd.choice(["main", "vars", "x", "over_override", "override"] if i else ["main"])
            if rnd.random() < 0.1:
                base += rnd.choice([".tofu", ".tftest"])  # dialect-specific and test files
            name = base + (".tf.json" if syntax == "json" else ".tf")
            spec[posixpath.join(d, name)] = config_text(rnd, syntax, d, dirs).encode("utf-8")
        if rnd.random() < 0.2:
            spec[posixpath.join(d, "files/data.txt")] = b"hello\n"
    spec["../outside/main.tf"] = b'output "o" {\n  value = 1\n}\n'
    if rnd.random() < 0.5:
        files = sorted(p for p in spec if not p.startswith("../") and isinstance(spec[p], bytes))
        for path in rnd.sample(files, rnd.randint(1, min(2, len(files)))):
            data = spec[path]
            assert isinstance(data, bytes)
            spec[path] = break_file(data, rnd)
    if rnd.random() < 0.15:
        d = rnd.choice(dirs)
        link = rnd.choice([".", "..", "loop", "../loop"])  # loops: itself, its parent, a dangling chain
        spec[posixpath.join(d, "loop")] = Link(link)
    return spec


def write_spec(root: Path, spec: TreeSpec) -> Path:
    """Create ``spec`` (paths relative to ``root``; ``../x`` lands beside it) and return ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    for rel, content in spec.items():
        path = Path(os.path.normpath(root / rel))
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Link):
            if not os.path.lexists(path):
                os.symlink(content.target, path)
        elif not path.is_dir():
            path.write_bytes(content)
    return root


# -- mutated samples and conformance fixtures ------------------------------------------------------

CONFIG_SUFFIXES = (".tf", ".tf.json", ".tofu", ".tofu.json")


def fixture_dirs() -> list[Path]:
    """Every sample configuration and conformance case (module trees, read only)."""
    found = []
    for parent in (SAMPLES, SHARED / "conformance" / "cases"):
        if parent.is_dir():
            found += sorted(p for p in parent.iterdir() if p.is_dir())
    return found


def read_spec(directory: Path) -> TreeSpec:
    """Return a directory tree as a spec (files as bytes, symlinks as ``Link``)."""
    spec: TreeSpec = {}
    for current, subdirs, names in os.walk(directory):
        for name in sorted(subdirs + names):
            path = Path(current) / name
            rel = path.relative_to(directory).as_posix()
            if path.is_symlink():
                spec[rel] = Link(os.readlink(path))
            elif path.is_file():
                spec[rel] = path.read_bytes()
    return spec


_FIXTURES: list[tuple[str, TreeSpec]] = []


def fixtures() -> list[tuple[str, TreeSpec]]:
    if not _FIXTURES:
        _FIXTURES.extend((f"{d.parent.name}/{d.name}", read_spec(d)) for d in fixture_dirs())
    return _FIXTURES


def mutated_fixture(rnd: random.Random) -> tuple[str, TreeSpec]:
    """A sample or conformance case with one to three edits: a broken file, a file removed, a new
    module call (to another directory of the tree, itself, or nowhere), or a file renamed into
    an override."""
    name, base = rnd.choice(fixtures())
    spec = dict(base)
    configs = sorted(p for p, c in spec.items() if isinstance(c, bytes) and p.endswith(CONFIG_SUFFIXES))
    dirs = sorted({posixpath.dirname(p) for p in configs} | {""})
    for _ in range(rnd.randint(1, 3)):
        configs = [p for p in configs if p in spec]
        k = rnd.random()
        if configs and k < 0.6:
            path = rnd.choice(configs)
            data = spec[path]
            assert isinstance(data, bytes)
            spec[path] = break_file(data, rnd)
        elif configs and k < 0.7:
            spec.pop(rnd.choice(configs), None)
        elif configs and k < 0.8:
            path = rnd.choice(configs)
            data = spec.pop(path)
            stem, _, ext = posixpath.basename(path).partition(".")
            spec[posixpath.join(posixpath.dirname(path), f"{stem}_override.{ext}")] = data
        else:
            d = rnd.choice(dirs)
            syntax = "json" if rnd.random() < 0.3 else "native"
            extra = config_text(rnd, syntax, d, dirs) if rnd.random() < 0.5 else native_block(rnd, d, dirs)
            spec[posixpath.join(d, "fuzz.tf.json" if syntax == "json" else "fuzz.tf")] = extra.encode()
    return name, spec


# -- hypothesis strategies -------------------------------------------------------------------------
# The generators above draw from a random.Random; hypothesis drives them through st.randoms(), so a
# failing example shrinks by shrinking the random choices. scripts/fuzz calls the same generators
# with seeded random.Random objects for the long run.

_randoms = st.randoms(use_true_random=False)
files_strategy = st.builds(lambda r: next(inputs(r.randrange(2**32), 1)), _randoms)
trees_strategy = st.builds(random_tree, _randoms)
fixtures_strategy = st.builds(mutated_fixture, _randoms)


# -- registry and download responses ---------------------------------------------------------------
# A loopback server answers the registry protocol and go-getter's http requests; each case mutates
# one to three of its answers (status codes, X-Terraform-Get / Location / Content-Type /
# Content-Length headers, JSON bodies, archive bytes), some of them echoing the registry token or
# carrying control characters. The invariant: no exception (no exit 3 through the CLI), located
# diagnostics, and neither the token nor a URL password in anything shown or written.

FUZZ_TOKEN = "fuzzT0KEN-0123456789abcdef"
FUZZ_PASSWORD = "fuzzPassw0rd-s3cret"
_MODULE = (
    b'variable "name" {\n  type    = string\n  default = "x"\n}\n\noutput "id" {\n  value = var.name\n}\n'
)
_STATUSES = [
    200,
    201,
    204,
    206,
    301,
    302,
    303,
    304,
    307,
    308,
    400,
    401,
    403,
    404,
    410,
    429,
    500,
    501,
    502,
    503,
    599,
]
_LOCATIONS = [
    "",
    "/files/m.tgz",
    "./m.tgz",
    "../../../../files/m.tgz",
    "{SELF}/files/m.tgz",
    "{SELF}/files/m.tgz//sub",
    "{SELF}/files/m.tgz//*",
    "{SELF}/files/m.tgz?archive=zip",
    "{SELF}/files/m.tgz?archive=false",
    "{SELF}/files/m.tgz?checksum=sha256:" + "0" * 64,
    "{SELF}/get/m",
    "{SELF}/loop",
    "//{HOST}/files/m.tgz",
    "http://{TOKEN}@{HOST}/files/m.tgz",
    "http://user:{TOKEN}@{HOST}/files/m.tgz",
    "{SELF}/files/{TOKEN}.tgz",
    "git::{SELF}/repo.git?ref=v1",
    "s3::https://bucket.example/x.zip",
    "file:///etc",
    "ftp://{HOST}/m.tgz",
    "https://\x1b[31mred\x1b[0m/x.tgz",
    "{SELF}/\x07bell.tgz",
    "\x00",
    "x" * 3000,
    "http://[::1/x.tgz",
    "http://{HOST}:99999/x.tgz",
    "http://{HOST}:port/x.tgz",
    "git::http://[oops/r.git",
]
_ROUTES = (
    "/.well-known/terraform.json",
    "/v1/modules/acme/m/aws/versions",
    "/v1/modules/acme/m/aws/1.1.0/download",
    "/files/m.tgz",
    "/get/m",
)


@dataclass
class Served:
    """One answer of the fuzzed server; strings may hold {SELF}, {HOST} and {TOKEN} placeholders."""

    status: int
    headers: dict[str, str]
    body: bytes
    length: int | None = None  # a declared Content-Length other than the body's


RegistryCase = dict[str, Served]


def _tar(files: dict[str, bytes]) -> bytes:
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in sorted(files.items()):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def base_registry() -> RegistryCase:
    """A registry and file server that work: the case every mutation starts from."""
    listing = {"modules": [{"versions": [{"version": "1.0.0"}, {"version": "1.1.0"}]}]}
    return {
        "/.well-known/terraform.json": Served(200, {}, b'{"modules.v1": "/v1/modules/"}'),
        "/v1/modules/acme/m/aws/versions": Served(200, {}, json.dumps(listing).encode()),
        "/v1/modules/acme/m/aws/1.1.0/download": Served(204, {"X-Terraform-Get": "/files/m.tgz"}, b""),
        "/files/m.tgz": Served(200, {}, _tar({"main.tf": _MODULE, "sub/main.tf": _MODULE})),
        "/get/m": Served(200, {"X-Terraform-Get": "{SELF}/files/m.tgz"}, b""),
        "/loop": Served(302, {"Location": "/loop"}, b""),
    }


def _fuzz_string(rnd: random.Random) -> str:
    return rnd.choice(
        [
            "1.2.0",
            "1.2.0+{TOKEN}",
            "{TOKEN}",
            "\x1b[2J\x1b[H",
            "9.9.9\r\n",
            "v1.0.0-rc.1",
            "é" * rnd.randint(1, 50),
            "",
            "1" * 400,
            "\u202eevil",
            rnd.choice(_LOCATIONS),
        ]
    )


def _fuzz_json(rnd: random.Random, depth: int = 0) -> object:
    k = rnd.randrange(8 if depth < 4 else 5)
    if k == 0:
        return None
    if k == 1:
        return rnd.choice([0, -1, 1.5, 10**30, True])
    if k in (2, 3, 4):
        return _fuzz_string(rnd)
    if k in (5, 6):
        return {
            rnd.choice(["modules", "versions", "version", "location", "modules.v1", "x"]): _fuzz_json(
                rnd, depth + 1
            )
        }
    return [_fuzz_json(rnd, depth + 1) for _ in range(rnd.randint(0, 4))]


def _mutate_json(body: bytes, rnd: random.Random) -> bytes:
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):  # an earlier mutation made it unreadable
        doc = None
    k = rnd.randrange(4)
    if k == 0 or not isinstance(doc, dict):
        return json.dumps(_fuzz_json(rnd)).encode()
    if k == 1:  # replace the value at a random depth along a random path (type confusion)
        node: object = doc
        for _ in range(rnd.randint(0, 4)):
            kids = (
                list(node.items())
                if isinstance(node, dict)
                else list(enumerate(node))
                if isinstance(node, list)
                else []
            )
            deeper = [v for _, v in kids if isinstance(v, (dict, list)) and v]
            if not deeper:
                break
            node = rnd.choice(deeper)
        if isinstance(node, dict) and node:
            node[rnd.choice(sorted(node))] = _fuzz_json(rnd, depth=3)
        elif isinstance(node, list) and node:
            node[rnd.randrange(len(node))] = _fuzz_json(rnd, depth=3)
        return json.dumps(doc).encode()
    if k == 2:
        return damage(body, rnd)
    depth = rnd.choice([600, 100_000])
    return b"[" * depth + b"]" * depth  # deep nesting (past what the json module can read)


def registry_case(rnd: random.Random) -> RegistryCase:
    """A base registry with one to three mutated answers."""
    case = base_registry()
    for _ in range(rnd.randint(1, 3)):
        path = rnd.choice(_ROUTES)
        served = case[path]
        k = rnd.randrange(6)
        if k == 0:
            served.status = rnd.choice(_STATUSES)
        elif k == 1:
            served.headers["X-Terraform-Get"] = rnd.choice(_LOCATIONS)
        elif k == 2:
            served.status = rnd.choice([301, 302, 303, 307, 308])
            served.headers["Location"] = rnd.choice(_LOCATIONS)
        elif k == 3:
            if path == "/files/m.tgz":
                served.body = damage(served.body, rnd)
            elif path == "/get/m":
                served.headers.pop("X-Terraform-Get", None)
                served.headers["Content-Type"] = "text/html"
                loc = rnd.choice(_LOCATIONS)
                served.body = f'<html><meta name="terraform-get" content="{loc}"></html>'.encode()
            else:
                served.status = 200
                served.body = _mutate_json(served.body or b'{"location": "/files/m.tgz"}', rnd)
        elif k == 4:
            served.length = max(0, len(served.body) + rnd.choice([-100, -1, 1, 50]))
        else:
            served.headers[rnd.choice(["Content-Type", "X-Terraform-Get", "Location", "Retry-After"])] = (
                _fuzz_string(rnd)
            )
    return case


def _fill(text: str, srv_url: str, host: str) -> str:
    return text.replace("{SELF}", srv_url).replace("{HOST}", host).replace("{TOKEN}", FUZZ_TOKEN)


def serve_case(srv: object, case: RegistryCase) -> None:
    """Make the loopback server (``support.servers.HTTPServer``) answer ``case``."""
    from support.servers import Reply

    url, host = srv.url, srv.host  # type: ignore[attr-defined]
    routes = {}
    for path, s in case.items():
        body = _fill(s.body.decode("latin-1"), url, host).encode("latin-1")
        # http.server writes header values as latin-1; a value it cannot encode is not sendable.
        headers = {
            k: _fill(v, url, host).encode("latin-1", "replace").decode("latin-1")
            for k, v in s.headers.items()
        }
        routes[path] = Reply(
            s.status, body, {k: v.replace("\r", " ").replace("\n", " ") for k, v in headers.items()}, s.length
        )
    srv.routes = routes  # type: ignore[attr-defined]
    srv.log.clear()  # type: ignore[attr-defined]


def _registry_root(directory: Path, host: str, *, registry: bool) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    calls = f'module "h" {{\n  source = "http://bob:{FUZZ_PASSWORD}@{host}/get/m"\n}}\n'
    if registry:
        calls += f'module "r" {{\n  source  = "{host}/acme/m/aws"\n  version = "~> 1.0"\n}}\n'
    (directory / "main.tf").write_text(calls)
    return directory


def _assert_nothing_leaked(text: str, where: str) -> None:
    assert FUZZ_TOKEN not in text, f"the registry token appears in {where}"
    assert FUZZ_PASSWORD not in text, f"a URL password appears in {where}"


def check_registry(case: RegistryCase, srv: object, work: Path) -> Diagnostics:
    """Build a root calling the fuzzed registry and archive server; raise AssertionError on a break."""
    from flatten.shell import cache_auth
    from flatten.sources.env import Secret, SourceEnv
    from flatten.sources.fetcher import RemoteFetcher

    serve_case(srv, case)
    host = srv.host  # type: ignore[attr-defined]
    root = _registry_root(work / "src", host, registry=True)
    env = SourceEnv(
        cache_dir=work / "cache",
        tokens={host: Secret(FUZZ_TOKEN)},
        insecure_hosts=frozenset({host}),
        timeout=3.0,
        retry_wait=0.0,
        download_timeout=5.0,
    )
    options = Options()
    result, diags = build(
        root, options=options, fetcher=RemoteFetcher(root, options=options, env=env, cache_auth=cache_auth)
    )
    check_diagnostics(diags)
    text = render_text(diags, root=root, read=gate.source_reader(root))
    for ch in ("\x1b", "\x07", "\x00", "\r", "\u202e"):
        assert ch not in text, f"a control character {ch!r} from the server reaches the terminal: {text}"
    shown = text + render_json(diags)
    shown += "".join(content.decode("utf-8", "replace") for content in result.tree.files.values())
    cache = work / "cache" / "v1"
    shown += "".join(p.read_text(errors="replace") for p in cache.rglob("*.json") if p.is_file())
    _assert_nothing_leaked(shown, "the diagnostics, the output or the cache")
    return diags


def check_registry_cli(case: RegistryCase, srv: object, work: Path) -> int:
    """The same through ``python -m flatten build`` (the getter path: the CLI reaches no http registry)."""
    import subprocess
    import sys

    serve_case(srv, case)
    host = srv.host  # type: ignore[attr-defined]
    root = _registry_root(work / "cli-src", host, registry=False)
    rc = work / "cli.tfrc"
    rc.write_text(f'credentials "{host}" {{\n  token = "{FUZZ_TOKEN}"\n}}\n')
    env = {
        **os.environ,
        "FLATTEN_CACHE_DIR": str(work / "cli-cache"),
        "FLATTEN_PARSE_CACHE": "off",
        "TF_CLI_CONFIG_FILE": str(rc),
        "TF_REGISTRY_CLIENT_TIMEOUT": "3",
        "FLATTEN_DOWNLOAD_TIMEOUT": "5",
    }
    env.pop("FLATTEN_TRACEBACK", None)
    out = work / "cli-out"
    proc = subprocess.run(
        [sys.executable, "-m", "flatten", "build", str(root), "--out", str(out)],
        capture_output=True,
        text=True,
        errors="replace",
        env=env,
        timeout=120,
    )
    assert proc.returncode in (0, 1), f"exit {proc.returncode}: {proc.stderr[-2000:]}"
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr[-2000:]
    written = (
        "".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file()) if out.exists() else ""
    )
    _assert_nothing_leaked(proc.stdout + proc.stderr + written, "the command line's output")
    return proc.returncode


registry_strategy = st.builds(registry_case, _randoms)


# -- cache entries damaged between builds ----------------------------------------------------------
# Parse, module and emit cache entries and build records are read back by the next build: whatever
# happens to them (bits flipped, truncated, emptied, swapped for another entry, removed, the key
# lost), the build's result must stay exactly that of a build without any cache.

CACHE_KINDS = ("parse", "modules", "emit", "builds")
_OLD_MTIME = 1_000_000_000  # inputs older than any build: whole-build records are written too


@dataclass(frozen=True)
class BuildResult:
    code: int
    output: dict[str, bytes]  # the output tree's files, by relative path
    stderr: str


def run_build(root: Path, out: Path, env: dict[str, str]) -> BuildResult:
    """Build ``root`` into ``out`` with the command line; raise AssertionError on a crash or exit 3.

    Not ``--offline``: only a plain build uses every cache (prefetch, emit cache, build records).
    """
    proc = subprocess.run(
        [sys.executable, "-m", "flatten", "build", str(root), "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode in (0, 1), f"exit {proc.returncode}: {proc.stderr[-2000:]}"
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr[-2000:]
    files = {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    return BuildResult(proc.returncode, files, proc.stderr)


def cache_env(base: Path, *, cache: bool = True, module_cache: bool = True) -> dict[str, str]:
    """The environment of a build whose cache and key live under ``base`` (never the user's)."""
    env = {
        **os.environ,
        "FLATTEN_CACHE_DIR": str(base / "cache"),
        "XDG_STATE_HOME": str(base / "state"),
        "FLATTEN_PARSE_CACHE": "on" if cache else "off",
        "FLATTEN_MODULE_CACHE": "on" if module_cache else "off",
        # Remote sources (random trees have some) fail at once, the same way in every build.
        **dict.fromkeys(("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"), "http://127.0.0.1:9"),
    }
    for name in ("FLATTEN_CACHE_KEY", "FLATTEN_TRACEBACK", "NO_PROXY", "no_proxy"):
        env.pop(name, None)
    return env


def damage_entry(data: bytes, rnd: random.Random, others: list[bytes]) -> tuple[str, bytes | None]:
    """Return what was done to a cache entry and its new bytes (None: removed)."""
    k = rnd.randrange(8)
    if k == 0 and data:
        pos = rnd.randrange(len(data))
        flipped = bytes([data[pos] ^ (1 << rnd.randrange(8))])
        return f"bit flipped at {pos}", data[:pos] + flipped + data[pos + 1 :]
    if k == 1:
        size = rnd.randint(0, len(data))
        return f"truncated to {size}", data[:size]
    if k == 2:
        return "emptied", b""
    if k == 3:
        return "garbage", bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 200)))
    if k == 4:
        return "junk appended", data + bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 50)))
    if k == 5 and others:
        return "swapped for another entry", rnd.choice(others)
    if k == 6 and len(data) > 60:
        pos = rnd.randrange(16, 60)  # within the magic, tag or header: the bytes checked first
        return f"byte {pos} changed", data[:pos] + bytes([(data[pos] + 1) % 256]) + data[pos + 1 :]
    return "removed", None


def damage_cache(cache: Path, state: Path, rnd: random.Random) -> list[str]:
    """Damage some entries of one kind in ``cache`` (and, rarely, lose the key); return what was done.

    Unless the build records are the kind damaged, they are removed, so that the next build
    reads the damaged entries instead of replaying.
    """
    done = []
    kinds = [k for k in CACHE_KINDS if any(p.is_file() for p in (cache / k).rglob("*"))]
    kind = rnd.choice(kinds) if kinds else "builds"
    entries = sorted(p for p in (cache / kind).rglob("*") if p.is_file())
    if entries:
        contents = [p.read_bytes() for p in entries]
        for path in rnd.sample(entries, rnd.randint(1, len(entries))):
            what, new = damage_entry(path.read_bytes(), rnd, contents)
            if new is None:
                path.unlink()
            else:
                path.write_bytes(new)
            done.append(f"{path.relative_to(cache)}: {what}")
    if kind != "builds":
        for path in (cache / "builds").rglob("*"):
            if path.is_file():
                path.unlink()
    if rnd.random() < 0.05:
        key = state / "flatten" / "cache-key"
        if key.exists():
            key.unlink()
            done.append("key file removed")
    return done


def check_cache_damage(spec: TreeSpec, rnd: random.Random, tmp: Path, rounds: int = 3) -> BuildResult:
    """Build ``spec`` without a cache, then with caches damaged between builds (``rounds`` times):
    every result (exit code, output bytes) must equal the one without a cache, which is returned."""
    root = write_spec(tmp / "src", spec)
    for current, _, names in os.walk(root):
        for name in names:
            os.utime(os.path.join(current, name), ns=(_OLD_MTIME, _OLD_MTIME), follow_symlinks=False)
    clean = run_build(root, tmp / "clean", cache_env(tmp, cache=False))
    out = tmp / "out"
    module_cache = rnd.random() < 0.7  # else the per-file parse cache is what the builds read
    env = cache_env(tmp, module_cache=module_cache)
    for _ in range(2):  # fill the caches, then replay or take everything from them
        first = run_build(root, out, env)
        assert (first.code, first.output) == (clean.code, clean.output), "a cached build differs"
    for n in range(rounds):
        done = damage_cache(tmp / "cache", tmp / "state", rnd)
        got = run_build(root, out, env)
        assert (got.code, got.output) == (clean.code, clean.output), (
            f"round {n}: the build differs from one without a cache after: {'; '.join(done)}"
        )
    return clean


# -- archives: hostile headers and member names --------------------------------------------------
# Raw tar and zip writers, so a header can say anything (sizes, name lengths, typeflags, pax
# records, link targets, bytes that are not UTF-8), and a generator mutating them. Used by
# tests/sources/test_archive.py, tests/reliability/test_fuzz.py and scripts/fuzz (kind "archive").


def tar_header(
    name: bytes, size: int, typeflag: bytes = b"0", linkname: bytes = b"", mode: int = 0o644
) -> bytes:
    """One 512-byte GNU tar header, with its checksum; the size field in octal (12 digits at most)."""
    h = bytearray(512)
    h[0:100] = name[:100].ljust(100, b"\0")
    h[100:108] = b"%07o\0" % (mode & 0o7777777)
    h[108:124] = b"0000000\x000000000\0"
    h[124:136] = (b"%011o\0" % size)[-12:] if size < 8**11 else b"\x80" + size.to_bytes(11, "big")
    h[136:148] = b"00000000000\0"
    h[156:157] = typeflag[:1] or b"\0"
    h[157:257] = linkname[:100].ljust(100, b"\0")
    h[257:265] = b"ustar  \0"
    h[148:156] = b"        "
    h[148:156] = b"%06o\0 " % sum(h)
    return bytes(h)


def tar_member(name: bytes, data: bytes = b"", typeflag: bytes = b"0", linkname: bytes = b"") -> bytes:
    """A header and its data, padded to the 512-byte block."""
    return tar_header(name, len(data), typeflag, linkname) + data + b"\0" * (-len(data) % 512)


def pax_record(key: bytes, value: bytes) -> bytes:
    """One pax record, ``"<length> <key>=<value>\\n"``, whose length counts itself."""
    body = b" " + key + b"=" + value + b"\n"
    n = len(body) + 1
    while len(str(n)) + len(body) != n:
        n += 1
    return b"%d" % n + body


def pax_member(records: bytes, typeflag: bytes = b"x") -> bytes:
    return tar_member(b"././@PaxHeader", records, typeflag)


TAR_END = b"\0" * 1024


@dataclass(frozen=True)
class ZipMember:
    """One zip entry, stored (not compressed). ``utf8`` sets general-purpose flag bit 11."""

    name: bytes
    data: bytes = b""
    mode: int = 0o100644
    utf8: bool = True
    extra: bytes = b""


def zip_bytes(members: list[ZipMember], *, count: int | None = None, cd_size: int | None = None) -> bytes:
    """A zip archive; ``count`` and ``cd_size`` override what the end record claims."""
    import zlib

    out = bytearray()
    central = bytearray()
    for m in members:
        crc = zlib.crc32(m.data)
        flags = 0x800 if m.utf8 else 0
        offset = len(out)
        out += struct.pack(
            "<4s5H3L2H",
            b"PK\x03\x04",
            20,
            flags,
            0,
            0,
            0,
            crc,
            len(m.data),
            len(m.data),
            len(m.name) & 0xFFFF,
            0,
        )
        out += m.name + m.data
        central += struct.pack(
            "<4s6H3L5H2L",
            b"PK\x01\x02",
            0x0314,  # made by Unix, so the mode in the external attributes counts
            20,
            flags,
            0,
            0,
            0,
            crc,
            len(m.data),
            len(m.data),
            len(m.name) & 0xFFFF,  # a name over 64 KiB: the field lies
            len(m.extra) & 0xFFFF,
            0,
            0,
            0,
            (m.mode & 0xFFFF) << 16,
            offset,
        )
        central += m.name + m.extra
    start = len(out)
    out += central
    n = len(members) if count is None else count
    size = len(central) if cd_size is None else cd_size
    out += struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, n & 0xFFFF, n & 0xFFFF, size & 0xFFFFFFFF, start, 0)
    return bytes(out)


ARCHIVE_FORMATS = ("tar", "tar.gz", "tar.bz2", "tar.xz", "zip")
PACKAGE_FILES = {
    b"main.tf": b'variable "name" {\n  default = "x"\n}\n\noutput "id" {\n  value = var.name\n}\n',
    b"modules/sub/main.tf": b'output "o" {\n  value = 1\n}\n',
    b"files/run.sh": b"#!/bin/sh\necho hi\n",
}
_BAD_NAMES = [
    b"caf\xe9.tf",  # Latin-1, not UTF-8
    b"\xff\xfe",
    b"\xed\xa0\x80.tf",  # an encoded surrogate
    b"new\nline.tf",
    b"tab\t.txt",
    b"nul\x00.tf",
    b"esc\x1b[0m",
    b"del\x7f",
    b"../escape.tf",
    b"a/../../escape.tf",
    b"/abs.tf",
    b"C:/win.tf",
    b"back\\..\\slash.tf",
    b"",
    b".",
    b"./",
    b"main.tf/",
    "é/ü.tf".encode(),
]


def _random_name(rnd: random.Random) -> bytes:
    k = rnd.random()
    if k < 0.45:
        return rnd.choice(_BAD_NAMES)
    if k < 0.6:
        return b"n" * rnd.choice([99, 100, 101, 255, 256, 4095, 4096, 4097, rnd.randint(1, 70_000)])
    if k < 0.75:
        return b"d/" * rnd.choice([1, 100, 255, 256, 257, rnd.randint(1, 1100)]) + b"f.txt"
    if k < 0.85:
        return rnd.choice(list(PACKAGE_FILES))
    return bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 40)))


def _random_number(rnd: random.Random) -> int:
    return rnd.choice(
        [0, 1, 511, 512, 513, 1 << 20, (1 << 20) + 1, 1 << 30, 8**11 - 1, 1 << 40, rnd.randrange(1 << 16)]
    )


_PAX_KEYS = [
    b"path",
    b"linkpath",
    b"size",
    b"mtime",
    b"uid",
    b"uname",
    b"hdrcharset",
    b"comment",
    b"GNU.sparse.map",
    b"GNU.sparse.size",
    b"GNU.sparse.major",
    b"GNU.sparse.minor",
    b"GNU.sparse.name",
    b"GNU.sparse.realsize",
    b"GNU.sparse.offset",
    b"GNU.sparse.numbytes",
]


def _pax_records(rnd: random.Random) -> bytes:
    out = b""
    for _ in range(rnd.randint(1, 4)):
        key = rnd.choice(_PAX_KEYS)
        if key in (b"path", b"linkpath", b"GNU.sparse.name"):
            value = _random_name(rnd)
        elif key == b"hdrcharset":
            value = rnd.choice([b"BINARY", b"ISO-IR 10646 2000 UTF-8", b"x"])
        else:
            value = rnd.choice([b"%d" % _random_number(rnd), b"-1", b"1.5", b"x", b"9" * 5000, b"0,1,2", b""])
        rec = pax_record(key, value)
        if rnd.random() < 0.1:  # a record whose length is wrong
            rec = b"%d" % rnd.choice([0, 1, 5, len(rec) + 7, 1 << 30]) + rec[rec.index(b" ") :]
        out += rec
    return out


def _big(rnd: random.Random) -> bytes:
    """Occasionally a field of many MiB (it compresses to little): headers must be bounded first."""
    return b"a" * rnd.choice([(1 << 20) + 1, 4 << 20, 16 << 20])


def _tar_member_mutation(rnd: random.Random, compressed: bool) -> bytes:
    k = rnd.randrange(10)
    name = _random_name(rnd)
    if k == 0:  # a GNU long name or long link, maybe lying about its size
        body = _big(rnd) if compressed and rnd.random() < 0.1 else name + b"\0"
        flag = rnd.choice([b"L", b"K"])
        member = tar_member(b"././@LongLink", body, flag)
        if rnd.random() < 0.3:
            member = tar_header(b"././@LongLink", _random_number(rnd), flag) + body[:512]
        return member + tar_member(b"placeholder", b"x", linkname=b"main.tf" if flag == b"K" else b"")
    if k == 1:  # pax, local or global
        flag = rnd.choice([b"x", b"g", b"X"])
        body = pax_record(b"comment", _big(rnd)) if compressed and rnd.random() < 0.1 else _pax_records(rnd)
        return pax_member(body, flag) + tar_member(b"pax-target.txt", b"x")
    if k == 2:  # a chain of extended headers
        return b"".join(pax_member(_pax_records(rnd)) for _ in range(rnd.randint(2, 12))) + tar_member(
            b"c", b"x"
        )
    if k == 3:  # a link with a hostile target
        return tar_member(name[:100] or b"link", b"", rnd.choice([b"1", b"2"]), _random_name(rnd)[:100])
    if k == 4:  # any typeflag
        return tar_member(b"t.txt", b"x" * rnd.randint(0, 600), bytes([rnd.randrange(256)]))
    if k == 5:  # a size field that lies
        return tar_header(b"s.txt", _random_number(rnd)) + b"x" * rnd.choice([0, 1, 512, 1024])
    if k == 6:  # a header with random bytes, checksum made right (or not)
        h = bytearray(tar_header(name[:100], 1))
        for _ in range(rnd.randint(1, 8)):
            h[rnd.randrange(512)] = rnd.randrange(256)
        if rnd.random() < 0.7:
            h[148:156] = b"        "
            h[148:156] = b"%06o\0 " % sum(h)
        return bytes(h) + b"x".ljust(512, b"\0")
    if k == 7:  # a name too long for the header: as pax path
        return pax_member(pax_record(b"path", name)) + tar_member(b"placeholder", b"x")
    if k == 8:  # a sparse member
        return tar_member(b"sparse.bin", b"x" * 512, b"S")
    return tar_member(name[:100], b"data")


def random_tar(rnd: random.Random, compressed: bool) -> bytes:
    """A package as a tar stream with one to four hostile members among good ones."""
    members = [tar_member(name, data) for name, data in PACKAGE_FILES.items()]
    for _ in range(rnd.randint(1, 4)):
        members.insert(rnd.randint(0, len(members)), _tar_member_mutation(rnd, compressed))
    data = b"".join(members) + (TAR_END if rnd.random() < 0.9 else b"")
    return data


def random_zip(rnd: random.Random) -> bytes:
    """A package as a zip with hostile names, link targets, modes, extra fields or end record."""
    members = [ZipMember(name, data) for name, data in PACKAGE_FILES.items()]
    count: int | None = None
    cd_size: int | None = None
    for _ in range(rnd.randint(1, 4)):
        k = rnd.randrange(6)
        if k == 0:
            members.append(ZipMember(_random_name(rnd), b"x", utf8=rnd.random() < 0.5))
        elif k == 1:  # a symbolic link: the target is the content
            target = _big(rnd)[: rnd.choice([4097, 1 << 20])] if rnd.random() < 0.2 else _random_name(rnd)
            members.append(ZipMember(b"link%d" % len(members), target, mode=0o120777))
        elif k == 2:  # another file type in the mode bits
            mode = rnd.choice([0o020644, 0o060644, 0o010644, 0o140644, 0o040755, rnd.randrange(1 << 16)])
            members.append(ZipMember(b"special%d" % len(members), b"x", mode=mode))
        elif k == 3:  # an extra field: random, or a zip64 record with bogus sizes
            extra = bytes(rnd.randrange(256) for _ in range(rnd.randint(0, 40)))
            if rnd.random() < 0.5:
                extra = struct.pack("<HHQQ", 1, 16, _random_number(rnd), _random_number(rnd))
            members.append(ZipMember(b"extra.txt", b"x", extra=extra))
        elif k == 4:
            count = rnd.choice([0, 1, 65535, rnd.randrange(1 << 16)])
        else:
            cd_size = rnd.choice([0, 1, 45, 1 << 20, (1 << 32) - 1, rnd.randrange(1 << 32)])
    data = bytearray(zip_bytes(members, count=count, cd_size=cd_size))
    if rnd.random() < 0.2:  # a byte of the central directory changed (name lengths, offsets, sizes)
        start = data.find(b"PK\x01\x02")
        if start >= 0:
            pos = rnd.randrange(start, len(data))
            data[pos] = rnd.randrange(256)
    return bytes(data)


def random_archive(rnd: random.Random) -> tuple[str, bytes]:
    """Return ``(format, bytes)``: a hostile package archive (tar in any compression, or zip)."""
    import bz2
    import gzip
    import lzma

    fmt = rnd.choice(ARCHIVE_FORMATS)
    if fmt == "zip":
        data = random_zip(rnd)
    else:
        raw = random_tar(rnd, compressed=fmt == "tar.gz")  # big fields only where compressing is fast
        compress = {"tar": bytes, "tar.gz": gzip.compress, "tar.bz2": bz2.compress, "tar.xz": lzma.compress}
        data = compress[fmt](raw)
    if rnd.random() < 0.05:
        data = damage(data, rnd)
    return fmt, data


#: Peak memory an archive may add (VmHWM, the process's high-water mark): headers claiming up to
#: 16 MiB are generated, and the 1 MiB header limit keeps their cost far below this.
ARCHIVE_MEMORY = 256 << 20
ARCHIVE_LIMITS_FILES = 2000


def peak_rss() -> int:
    """This process's peak resident set (VmHWM) in bytes; 0 where /proc is missing."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def check_archive(fmt: str, data: bytes, work: Path) -> str:
    """Extract one archive from a local path; raise AssertionError when the invariant breaks.

    Returns "extracted" or "refused". The invariant: only :class:`FetchError` (a diagnostic),
    with a message of bounded size; what is extracted stays inside the destination and has
    names that are UTF-8 without control characters; peak memory grows by less than
    :data:`ARCHIVE_MEMORY`.
    """
    import re
    import shutil

    from flatten.sources.archive import extract_archive
    from flatten.sources.env import ExtractLimits
    from flatten.sources.package import FetchError

    box = work / "box"
    box.mkdir(parents=True)
    archive = work / f"package.{fmt}"
    archive.write_bytes(data)
    before = peak_rss()
    try:
        try:
            limits = ExtractLimits(max_bytes=64 << 20, max_files=ARCHIVE_LIMITS_FILES)
            extract_archive(archive, fmt, box / "dest", limits=limits)
            outcome = "extracted"
        except FetchError as exc:
            assert len(str(exc)) < 2000, f"message of {len(str(exc))} characters"
            outcome = "refused"
        grown = peak_rss() - before
        assert grown < ARCHIVE_MEMORY, f"peak memory grew by {grown >> 20} MiB"
        if outcome == "extracted":
            assert sorted(os.listdir(box)) == ["dest"], os.listdir(box)
            for current, dirs, files in os.walk(box / "dest"):
                for name in dirs + files:
                    name.encode("utf-8")  # raises on a name that is not UTF-8
                    assert not re.search(r"[\x00-\x1f\x7f]", name), f"control character in {name!r}"
                    path = Path(current) / name
                    if path.is_symlink():
                        real = Path(os.path.realpath(path))  # a loop is allowed; Path.resolve raises
                        assert real == (box / "dest").resolve() or (box / "dest").resolve() in real.parents
    finally:
        shutil.rmtree(box, ignore_errors=True)
        archive.unlink()
    return outcome
