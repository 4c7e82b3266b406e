"""Reliability (docs/reliability.md): hostile inputs, safety of what is written, module locations.

Each test here proves one promise of the reliability issue and fails when it breaks:
hostile files and trees give located diagnostics (no exception, no hang, no RecursionError),
nothing is written outside --out and the cache, --out is never inside the sources or /,
credentials never leak, and a child module's diagnostic names its module path and file.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.fuzzing import Link, check_diagnostics, check_tree, write_spec
from support.paths import SAMPLES

from flatten import gate
from flatten.build import build
from flatten.lang.diagnostics import Diagnostics, render_json, render_text
from flatten.lang.options import Dialect, Options
from flatten.shell import parse_cache

TF = Dialect.TERRAFORM
ROOT_SKIP = "running as root: chmod 000 does not stop root from reading, so there is nothing to test"


@pytest.fixture(autouse=True)
def no_parse_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process builds must not write the user's cache (the CLI tests give it a temporary one)."""
    monkeypatch.setitem(parse_cache._CACHE, "cache", None)


class Hang(Exception):
    """Raised by the alarm. Not a TimeoutError: that is an OSError, which code reading files may catch."""


@pytest.fixture
def deadline() -> Iterator[None]:
    """Fail (instead of hanging the suite) when the test body takes more than 60 seconds."""

    def expired(signum: int, frame: object) -> None:
        raise Hang("took more than 60 s: a hang")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(60)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def run_build(root: Path, dialect: Dialect = TF) -> Diagnostics:
    """Build in process; check every diagnostic is located (``fuzzing.check_tree``) and return them."""
    return check_tree(root, dialect)


def cli(
    *args: str | Path, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    base = {**os.environ, "FLATTEN_PARSE_CACHE": "off"}
    return subprocess.run(
        [sys.executable, "-m", "flatten", *map(str, args)],
        capture_output=True,
        text=True,
        env={**base, **(env or {})},
        timeout=timeout,
    )


def assert_clean_failure(proc: subprocess.CompletedProcess[str]) -> None:
    """Exit 1 with Terraform-style diagnostics, never a traceback or an internal error."""
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-3000:])
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr[-3000:]
    assert "Error: " in proc.stderr


def summaries(diags: Diagnostics) -> set[str]:
    return {d.summary for d in diags}


# -- deep nesting ------------------------------------------------------------------------------------

DEEP = 5000


@pytest.mark.parametrize(
    "text",
    [
        "locals {\n  v = " + "(" * DEEP + "1" + ")" * DEEP + "\n}\n",
        "locals {\n  v = " + "[" * DEEP + "1" + "]" * DEEP + "\n}\n",
        "locals {\n  v = " + "{a = " * DEEP + "1" + "}" * DEEP + "\n}\n",
        "locals {\n  v = " + "max(" * DEEP + "1" + ")" * DEEP + "\n}\n",
        "locals {\n  v = " + '"${' * DEEP + "1" + '}"' * DEEP + "\n}\n",
        "locals {\n  v = " + "!" * DEEP + "true\n}\n",
        "locals {\n  v = " + "a ? " * DEEP + "1" + " : 2" * DEEP + "\n}\n",
        'resource "x" "y" {\n' + "b {\n" * DEEP + "}\n" * DEEP + "}\n",
        "locals {\n  v = " + "(" * DEEP + "1" + ")" * (DEEP - 1) + "\n}\n",  # unbalanced
    ],
    ids=[
        "parens",
        "brackets",
        "objects",
        "calls",
        "templates",
        "not",
        "conditionals",
        "blocks",
        "unbalanced",
    ],
)
def test_deep_native_nesting_gives_a_result_not_a_recursion_error(tree, deadline, text: str) -> None:
    root = tree({"main.tf": text})
    diags = run_build(root)  # raises on any exception, RecursionError included
    for d in diags.errors:
        assert d.range is not None and d.range.filename == "main.tf"


@pytest.mark.parametrize(
    "text",
    [
        '{"locals": {"v": ' + "[" * DEEP + "1" + "]" * DEEP + "}}",
        # Just under the JSON loader's depth limit (found by scripts/fuzz: a RecursionError).
        '{"locals": {"v": ' + "[" * 496 + "1" + "]" * 496 + "}}",
        '{"locals": {"v": ' + '{"a": ' * DEEP + "1" + "}" * DEEP + "}}",
        '{"resource": {"x": {"y": ' + '{"b": ' * DEEP + "{}" + "}" * DEEP + "}}}",
        '{"locals": {"v": "${' + "(" * DEEP + "1" + ")" * DEEP + '}"}}',
    ],
    ids=["arrays", "arrays-at-the-limit", "objects", "block-bodies", "expression"],
)
def test_deep_json_nesting_gives_a_located_diagnostic_or_loads(tree, deadline, text: str) -> None:
    root = tree({"main.tf.json": text})
    run_build(root)


def test_200_deep_module_chain_builds(tree, tmp_path: Path, deadline) -> None:
    depth = 200
    files = {"main.tf": 'module "c" {\n  source = "./m1"\n}\n'}
    for i in range(1, depth + 1):
        body = (
            f'module "c" {{\n  source = "../m{i + 1}"\n}}\n'
            if i < depth
            else 'output "o" {\n  value = 1\n}\n'
        )
        files[f"m{i}/main.tf"] = f'variable "v{i}" {{\n  default = {i}\n}}\n' + body
    root = tree(files)
    result, diags = build(root, options=Options(offline=True))
    assert not diags.has_errors, render_text(diags)
    assert len(result.graph or []) == depth + 1
    deepest = ".".join(["module.c"] * depth)
    assert result.graph is not None and deepest in result.graph
    proc = cli("build", root, "--out", tmp_path / "out", "--offline")
    assert proc.returncode == 0, proc.stderr[-3000:]
    manifest = json.loads((tmp_path / "out" / "flatten.manifest.json").read_text())
    assert len(manifest["modules"]) == depth + 1


def test_deep_module_chain_with_an_error_at_the_bottom_names_the_path(tree, deadline) -> None:
    depth = 60
    files = {"main.tf": 'module "c" {\n  source = "./m1"\n}\n'}
    for i in range(1, depth):
        files[f"m{i}/main.tf"] = f'module "c" {{\n  source = "../m{i + 1}"\n}}\n'
    files[f"m{depth}/main.tf"] = 'resource "x" {}\n'  # one label missing
    diags = run_build(tree(files))
    [err] = diags.errors
    assert err.module == ".".join(["module.c"] * depth)
    assert err.range is not None and err.range.filename == f"m{depth}/main.tf"


# -- huge files, garbage, encodings, line endings ---------------------------------------------------

MB20 = 20 * 1024 * 1024


def test_huge_files_load_or_diagnose_in_bounded_time(tree, deadline) -> None:
    root = tree(
        {
            "main.tf": b'locals {\n  big = "' + b"x" * MB20 + b'"\n}\n',
            "notes.tf": b"# " + b"y" * MB20 + b"\nlocals {\n  n = 1\n}\n",
        }
    )
    start = time.perf_counter()
    diags = run_build(root)
    assert not diags.has_errors, render_text(diags)
    assert time.perf_counter() - start < 60


def test_huge_broken_json_file_gives_a_located_diagnostic(tree, deadline) -> None:
    # Machine-written JSON: one line of 20 MB, broken at the very end.
    items = ",".join(f'"k{i}": "v"' for i in range(MB20 // 12))
    root = tree({"main.tf.json": '{"locals": {' + items + ", }}"})
    diags = run_build(root)
    # Terraform's two errors (as `terraform validate` gives for '{"locals": {"a": "v", }}'): the
    # comma, and the "locals" value that HCL's parser then holds as invalid.
    by_summary = {d.summary: d for d in diags.errors}
    assert sorted(by_summary) == ["Incorrect JSON value type", "Trailing comma in object"]
    comma = by_summary["Trailing comma in object"].range
    assert comma is not None and comma.start.line == 1 and comma.start.column > MB20 // 2
    value = by_summary["Incorrect JSON value type"].range
    assert value is not None and (value.start.line, value.start.column) == (1, 12)


def test_huge_binary_garbage_is_an_encoding_error(tree, deadline) -> None:
    garbage = bytes((i * 7919 + 13) % 256 for i in range(MB20))
    diags = run_build(tree({"main.tf": garbage}))
    assert "Invalid character encoding" in summaries(diags)


@pytest.mark.parametrize(
    ("content", "line", "column"),
    [
        (b'locals {\n  a = "ok"\n  b = "\xff"\n}\n', 3, 8),
        (b"\xc3\x28", 1, 1),
        (b'locals {\n  a = "\xed\xa0\x80"\n}\n', 2, 8),  # an encoded surrogate is not UTF-8
        (b"# comment \xe2\x82\n", 1, 11),  # truncated sequence
    ],
    ids=["bad-byte", "bad-continuation", "surrogate", "truncated"],
)
def test_invalid_utf8_points_at_the_byte(tree, content: bytes, line: int, column: int) -> None:
    diags = run_build(tree({"main.tf": content}))
    [err] = diags.errors
    assert err.summary == "Invalid character encoding"
    assert err.range is not None and (err.range.start.line, err.range.start.column) == (line, column)


def test_binary_garbage_via_cli_is_exit_1_with_a_location(tree, tmp_path: Path) -> None:
    root = tree({"main.tf": bytes(range(256)) * 4, "data.tf.json": b"\x00\x01{\xfe"})
    proc = cli("build", root, "--out", tmp_path / "out", "--offline")
    assert_clean_failure(proc)
    assert "on main.tf line " in proc.stderr and "on data.tf.json line 1:" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_bom_and_crlf_give_the_same_output_as_plain_files(tree, tmp_path: Path) -> None:
    text = (
        # (no heredoc: whether its text keeps the CR is the engines' business, not this test's)
        'variable "x" {\n  default = "a"\n}\n\nlocals {\n  h = "line ${var.x}"\n  l = [1,\n    2]\n}\n'
        'resource "terraform_data" "r" {\n  input = local.h\n}\n'
    )
    plain = write_spec(tmp_path / "plain", {"main.tf": text.encode()})
    variants = {
        "bom": b"\xef\xbb\xbf" + text.encode(),
        "crlf": text.replace("\n", "\r\n").encode(),
        "bom-crlf": b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode(),
    }
    expected, diags = build(plain, options=Options(offline=True))
    assert not diags.has_errors
    for name, data in variants.items():
        root = write_spec(tmp_path / name, {"main.tf": data})
        result, diags = build(root, options=Options(offline=True))
        assert not diags.has_errors, (name, render_text(diags))
        assert result.tree.files["main.tf.json"] == expected.tree.files["main.tf.json"], name
    json_bom = write_spec(tmp_path / "json-bom", {"main.tf.json": b'\xef\xbb\xbf{"locals": {"a": 1}}\r\n'})
    assert not run_build(json_bom).has_errors


# -- symlink loops, unreadable files, self-calls ------------------------------------------------------


def test_symlink_loops_in_module_directories(tmp_path: Path, deadline) -> None:
    root = write_spec(
        tmp_path / "src",
        {
            "main.tf": (
                b'module "self_link" {\n  source = "./self"\n}\n'
                b'module "dangling_loop" {\n  source = "./loop"\n}\n'
                b'module "a" {\n  source = "./a"\n}\n'
            ),
            "self": Link("."),  # a directory link to the root: calling it is a cycle
            "a/main.tf": b'module "up" {\n  source = "./up"\n}\n',
            "a/up": Link(".."),  # a child linking back to its parent
        },
    )
    os.symlink("loop", root / "loop")  # ELOOP: a link to itself
    diags = run_build(root)
    errors = {(d.summary, d.module) for d in diags.errors}
    assert ("Module call cycle", "") in errors  # ./self is the root again
    assert ("Unreadable module directory", "") in errors  # ./loop cannot be resolved
    assert ("Module call cycle", "module.a") in errors  # a/up is the root again


def test_self_referential_symlink_beside_a_module_is_not_an_exception(tmp_path: Path) -> None:
    root = write_spec(tmp_path / "src", {"main.tf": b"locals {\n  a = 1\n}\n", "loop": Link("loop")})
    diags = run_build(root)
    [warning] = [d for d in diags if d.summary == "Module file not copied"]
    assert "loop" in warning.detail and "loops or points nowhere" in warning.detail


def test_directory_symlink_loops_beside_a_module_do_not_hang(tmp_path: Path, deadline) -> None:
    root = write_spec(
        tmp_path / "src",
        {"main.tf": b"locals {}\n", "files/a.txt": b"x", "files/x": Link("."), "files/y": Link(".")},
    )

    signal.alarm(5)  # the deadline fixture's handler raises Hang
    run_build(root)
    result, diags = build(root, options=Options(offline=True))
    # The real files are copied; each link back into its own directory is named and left out.
    assert sorted(result.tree.copies) == ["files/a.txt"]
    loops = sorted(d.detail.split(" ")[0] for d in diags if d.summary == "Module file not copied")
    assert loops == ["files/x", "files/y"]


def test_self_call_through_a_chain_of_local_sources(tree) -> None:
    root = tree(
        {
            "main.tf": 'module "a" {\n  source = "./a"\n}\n',
            "a/main.tf": 'module "b" {\n  source = "../b"\n}\n',
            "b/main.tf": 'module "c" {\n  source = "../c"\n}\n',
            "c/main.tf": 'module "back" {\n  source = "../a"\n}\n',
        }
    )
    diags = run_build(root)
    [err] = diags.errors
    assert err.summary == "Module call cycle"
    assert err.module == "module.a.module.b.module.c"
    assert err.range is not None and err.range.filename == "c/main.tf" and err.range.start.line == 2
    assert "a -> b -> c -> a" in err.detail


def test_direct_self_call(tree) -> None:
    diags = run_build(tree({"main.tf": 'module "me" {\n  source = "./"\n}\n'}))
    assert [d.summary for d in diags.errors] == ["Module call cycle"]


@pytest.mark.skipif(os.geteuid() == 0, reason=ROOT_SKIP)
def test_unreadable_file_and_directory(tree, tmp_path: Path) -> None:
    root = tree(
        {
            "main.tf": 'module "a" {\n  source = "./a"\n}\n',
            "secret.tf": "locals {}\n",
            "a/main.tf": "locals {}\n",
        }
    )
    (root / "secret.tf").chmod(0)
    try:
        diags = run_build(root)
        [err] = diags.errors
        assert err.summary == "Failed to read file"
        assert err.range is not None and err.range.filename == "secret.tf"
    finally:
        (root / "secret.tf").chmod(0o644)
    (root / "a").chmod(0)
    try:
        diags = run_build(root)
        assert diags.has_errors and all(d.module == "module.a" for d in diags.errors), render_text(diags)
        proc = cli("build", root, "--out", tmp_path / "out", "--offline")
        assert_clean_failure(proc)
    finally:
        (root / "a").chmod(0o755)


# -- --out safety --------------------------------------------------------------------------------------


def test_out_inside_the_sources_or_at_the_filesystem_root_is_refused(tree, tmp_path: Path) -> None:
    root = tree({"main.tf": "locals {}\n", "sub/x.txt": "x"})
    os.symlink(root / "sub", tmp_path / "alias")
    before = snapshot(tmp_path)
    for out in [root, root / "out", root / "sub" / "deep" / "out", tmp_path / "alias" / "out", Path("/")]:
        proc = cli("build", root, "--out", out, "--offline")
        assert proc.returncode == 2, (out, proc.returncode, proc.stderr)
        assert "Error: " in proc.stderr and "Traceback" not in proc.stderr
    assert snapshot(tmp_path) == before


def test_out_that_flatten_did_not_write_is_refused(tree, tmp_path: Path) -> None:
    root = tree({"main.tf": "locals {}\n"})
    out = tmp_path / "precious"
    out.mkdir()
    (out / "thesis.txt").write_text("do not delete")
    proc = cli("build", root, "--out", out, "--offline")
    assert proc.returncode == 2 and "refusing" in proc.stderr, proc.stderr
    assert (out / "thesis.txt").read_text() == "do not delete"


def snapshot(top: Path) -> dict[str, str]:
    """Every path under ``top``: file digests, symlink targets and directories."""
    found: dict[str, str] = {}
    for current, dirs, files in os.walk(top):
        for name in dirs + files:
            path = Path(current) / name
            rel = path.relative_to(top).as_posix()
            if path.is_symlink():
                found[rel] = "-> " + os.readlink(path)
            elif path.is_file():
                found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                found[rel] = "dir"
    return found


def test_nothing_is_written_outside_out_and_the_cache(tmp_path: Path) -> None:
    sample = SAMPLES / "network"
    src = write_spec(tmp_path / "src", {rel: data for rel, data in _read(sample).items()})
    for name in ("home", "xdg", "cache", "tmp", "sibling"):
        (tmp_path / name).mkdir()
    (tmp_path / "sibling" / "keep.txt").write_text("untouched")
    env = {
        "HOME": str(tmp_path / "home"),
        "XDG_CACHE_HOME": str(tmp_path / "xdg"),
        "FLATTEN_CACHE_DIR": str(tmp_path / "cache"),
        "TMPDIR": str(tmp_path / "tmp"),
        "FLATTEN_PARSE_CACHE": "on",  # the cache is allowed, and only there
        "XDG_STATE_HOME": "",  # the cache key: ~/.local/state/flatten/cache-key (flatten/shell/cache_auth.py)
    }
    before = snapshot(tmp_path)
    for _ in range(2):  # the second build may replay a record from the cache
        proc = cli("build", src, "--out", tmp_path / "out", "--offline", env=env)
        assert proc.returncode == 0, proc.stderr
    after = snapshot(tmp_path)
    changed = {p for p in set(before) | set(after) if before.get(p) != after.get(p)}
    key = (
        "home/.local",
        "home/.local/state",
        "home/.local/state/flatten",
        "home/.local/state/flatten/cache-key",
    )
    outside = sorted(
        p for p in changed if not p.startswith(("out/", "cache/")) and p not in ("out", "cache", *key)
    )
    assert outside == [], f"written outside --out and the cache: {outside}"
    assert key[-1] in after  # the one file beside them: the key the cache entries are tagged with
    assert any(p.startswith("out/") for p in changed)


def _read(directory: Path) -> dict[str, bytes | Link]:
    from support.fuzzing import read_spec

    return read_spec(directory)


def test_symlinks_escaping_the_root_are_not_copied_into_the_output(tmp_path: Path) -> None:
    write_spec(tmp_path / "secret", {"id_rsa": b"PRIVATE KEY"})
    root = write_spec(
        tmp_path / "src",
        {"main.tf": b"locals {}\n", "leak": Link("../secret"), "key.txt": Link("../secret/id_rsa")},
    )
    result, diags = build(root, options=Options(offline=True))
    check_diagnostics(diags)
    assert all(b"PRIVATE KEY" not in result.tree.content(rel) for rel in result.tree.paths())
    refused = sorted(d.detail.split(" ")[0] for d in diags if d.summary == "Module file not copied")
    assert refused == ["key.txt", "leak"]


# -- credentials -----------------------------------------------------------------------------------------

TOKEN = "tok-3xTr3m3ly-S3cr3t-value"


def test_credentials_never_appear_in_output_diagnostics_manifest_or_cache(tmp_path: Path) -> None:
    cli_config = tmp_path / "terraformrc"
    cli_config.write_text(f'credentials "registry.example.com" {{\n  token = "{TOKEN}-rc"\n}}\n')
    env = {
        "TF_TOKEN_example_com": TOKEN,
        "TF_TOKEN_registry_example_com": TOKEN + "-2",
        "TF_CLI_CONFIG_FILE": str(cli_config),
        "FLATTEN_CACHE_DIR": str(tmp_path / "cache"),
        "FLATTEN_PARSE_CACHE": "on",
        "HOME": str(tmp_path / "home"),
    }
    good = write_spec(
        tmp_path / "good", {"main.tf": b'module "a" {\n  source = "./a"\n}\n', "a/main.tf": b""}
    )
    bad = write_spec(
        tmp_path / "bad",
        {
            "main.tf": b'module "r" {\n  source  = "registry.example.com/ns/name/aws"\n'
            b'  version = "1.0.0"\n}\n'
            b'module "g" {\n  source = "git::https://example.com/x.git"\n}\n'
        },
    )
    outputs = [
        cli("build", good, "--out", tmp_path / "out", "--offline", env=env),
        cli("build", good, "--out", tmp_path / "out2", "--offline", "--diagnostics-json", env=env),
        cli("build", bad, "--out", tmp_path / "out3", "--offline", env=env),
        cli("build", bad, "--out", tmp_path / "out3", "--offline", "--diagnostics-json", env=env),
        cli("graph", bad, "--offline", env=env),
        cli("providers", bad, "--offline", "--json", env=env),
    ]
    assert [p.returncode for p in outputs] == [0, 0, 1, 1, 1, 1], [p.stderr for p in outputs]
    for proc in outputs:
        assert TOKEN not in proc.stdout + proc.stderr
    for path in tmp_path.rglob("*"):
        if path.is_file() and path != cli_config:
            assert TOKEN.encode() not in path.read_bytes(), path


# -- locations of child-module diagnostics ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "summary"),
    [
        (b'resource "x" {}\n', "Missing name for resource"),
        (b'locals {\n  a = "\xff"\n}\n', "Invalid character encoding"),
        (b'variable "v" {}\nvariable "v" {}\n', "Duplicate variable declaration"),
        (b'{"variable": {"v": {"typo": 1}}}', "Extraneous JSON object property"),
        (b'module "m" {\n  source = "./nowhere"\n}\n', "Unreadable module directory"),
    ],
    ids=["syntax", "encoding", "merge", "json", "missing-module"],
)
def test_child_module_diagnostics_name_module_path_and_file(
    tmp_path: Path, content: bytes, summary: str
) -> None:
    # A tree of 300 modules; exactly one file, deep in it, is broken.
    spec: dict[str, bytes | Link] = {
        "main.tf": b"".join(b'module "g%d" {\n  source = "./groups/g%d"\n}\n' % (i, i) for i in range(30)),
    }
    for g in range(30):
        spec[f"groups/g{g}/main.tf"] = b"".join(
            b'module "leaf%d" {\n  source = "../../leaves/l%d_%d"\n}\n' % (k, g, k) for k in range(9)
        )
        for k in range(9):
            spec[f"leaves/l{g}_{k}/main.tf"] = b'output "o" {\n  value = 1\n}\n'
    name = "bad.tf.json" if content.startswith(b"{") else "bad.tf"
    spec[f"leaves/l17_4/{name}"] = content
    root = write_spec(tmp_path / "src", spec)
    diags = run_build(root)
    [err] = diags.errors
    assert err.summary.startswith(summary), err
    assert err.module == "module.g17.module.leaf4"
    assert err.range is not None and err.range.filename == f"leaves/l17_4/{name}"
    text = render_text([err], root=root, read=gate.source_reader(root))
    # Terraform's location line: the file under the root names where the module lives.
    assert f"on leaves/l17_4/{name} line" in text, text
    doc = json.loads(render_json([err]))["diagnostics"][0]
    assert doc["module"] == "module.g17.module.leaf4" and doc["range"]["filename"] == f"leaves/l17_4/{name}"
    # The command line renders the same, in text and as JSON.
    proc = cli("build", root, "--out", tmp_path / "out", "--offline")
    assert_clean_failure(proc)
    assert f"on leaves/l17_4/{name} line" in proc.stderr
    proc = cli("build", root, "--out", tmp_path / "out", "--offline", "--diagnostics-json")
    assert proc.returncode == 1
    [entry] = [d for d in json.loads(proc.stdout)["diagnostics"] if d["severity"] == "error"]
    assert entry["module"] == "module.g17.module.leaf4"
    assert entry["range"]["filename"] == f"leaves/l17_4/{name}"
