"""Incremental rebuilds (flatten/shell/incremental.py): after random edits of generated trees, the
rebuild's output and messages equal a full build's, whether the edit was rebuilt incrementally or
fell back to a full build; and the edits that only change what a module emits are incremental."""

from __future__ import annotations

import json
import os
import random
import re
import sys
from pathlib import Path

import pytest
from support.cli import OLD, age_tree, run_cli
from support.files import write_tree

from flatten.build import build
from flatten.lang.model import Module
from flatten.lang.options import Dialect, Options
from flatten.stages.load import load_module
from flatten.stages.reads import outside_view


def _output(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


# -- random trees -------------------------------------------------------------------------------


def _module_text(rng: random.Random, name: str, calls: list[str]) -> str:
    parts = [f"# module {name}\n"]
    for v in range(rng.randint(1, 3)):
        parts.append(f'variable "v{v}" {{\n  type    = number\n  default = {rng.randint(0, 9)}\n}}\n')
    parts.append(f'locals {{\n  name = "{name}-${{var.v0}}"\n  n    = {rng.randint(1, 5)}\n}}\n')
    for r in range(rng.randint(1, 4)):
        parts.append(
            f'resource "terraform_data" "r{r}" {{\n'
            f"  count = var.v0 > {rng.randint(0, 5)} ? 1 : 0\n"
            f'  input = {{ name = local.name, size = "{rng.choice("abc")}" }}\n'
            "  lifecycle {\n    ignore_changes = [input]\n  }\n}\n"
        )
    for c in calls:
        parts.append(f'module "{c}" {{\n  source = "./{c}"\n  v0     = {rng.randint(0, 9)}\n}}\n')
    parts.append('output "name" {\n  value = local.name\n}\n')
    return "".join(parts)


def _tree(root: Path, rng: random.Random) -> list[Path]:
    """Write a random tree under ``root``; return its module files (root's first)."""
    files: dict[str, str] = {}
    top = [f"m{i}" for i in range(rng.randint(2, 4))]
    root_calls = "".join(f'module "{m}" {{\n  source = "./modules/{m}"\n}}\n' for m in top)
    files["main.tf"] = '# the root\nterraform {\n  required_version = ">= 1.0"\n}\n' + root_calls
    for m in top:
        nested = [f"n{j}" for j in range(rng.randint(0, 2))]
        files[f"modules/{m}/main.tf"] = _module_text(rng, m, nested)
        for n in nested:
            files[f"modules/{m}/{n}/main.tf"] = _module_text(rng, n, [])
        if rng.random() < 0.3:
            files[f"modules/{m}/extra.tf"] = f'output "extra" {{\n  value = "{m}"\n}}\n'
    write_tree(root, files)
    return [root / rel for rel in sorted(files, key=lambda r: (r != "main.tf", r))]


# Each edit: (name, function of the text and a random source -> new text).
EDITS = [
    ("comment at the end", lambda t, r: t + f"# edited {r.randint(0, 99)}\n"),
    ("comment at the top", lambda t, r: f"# edited {r.randint(0, 99)}\n" + t),
    ("variable default", lambda t, r: re.sub(r"default = \d", f"default = {r.randint(10, 999)}", t, count=1)),
    ("variable removed default", lambda t, r: re.sub(r"\n  default = \d", "", t, count=1)),
    ("variable added", lambda t, r: t + 'variable "added" {\n  default = 1\n}\n'),
    ("required variable added", lambda t, r: t + 'variable "needed" {\n  type = string\n}\n'),
    ("resource value", lambda t, r: re.sub(r'size = "\w"', f'size = "{r.choice("xyz")}"', t, count=1)),
    ("resource type", lambda t, r: t.replace('"terraform_data" "r0"', '"null_resource" "r0"', 1)),
    (
        "resource provider",
        lambda t, r: t.replace("  count = var.v0", "  provider = aws.x\n  count = var.v0", 1),
    ),
    ("count", lambda t, r: re.sub(r"var\.v0 > \d", f"var.v0 > {r.randint(10, 99)}", t, count=1)),
    ("local value", lambda t, r: re.sub(r"n    = \d", f"n    = {r.randint(10, 99)}", t, count=1)),
    ("output value", lambda t, r: t.replace("value = local.name", 'value = "${local.name}-x"', 1)),
    ("call argument", lambda t, r: re.sub(r"v0     = \d", f"v0     = {r.randint(10, 99)}", t, count=1)),
    ("call added", lambda t, r: t + 'module "extra" {\n  source = "./nowhere"\n}\n'),
    ("unknown argument", lambda t, r: re.sub(r"(module \"\w+\" \{\n)", r"\1  nope = 1\n", t, count=1)),
    ("provider block", lambda t, r: t + 'provider "aws" {\n  region = "x"\n}\n'),
    ("required providers", lambda t, r: t + "terraform {\n  required_providers {\n    aws = {}\n  }\n}\n"),
    ("syntax error", lambda t, r: t + "resource {\n"),
    ("duplicate", lambda t, r: t + "locals {\n  n = 1\n}\n"),
    ("line inserted", lambda t, r: t.replace("locals {", "\nlocals {", 1)),
    (
        "same length value",
        lambda t, r: re.sub(r"default = (\d)", lambda m: f"default = {(int(m[1]) + 1) % 10}", t, count=1),
    ),
]


@pytest.mark.parametrize("seed", range(30))
def test_random_edits_build_as_a_full_build(
    tmp_path: Path, seed: int, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    root = tmp_path / "src"
    modules = _tree(root, rng)
    age_tree(root)
    flags = ["--provenance"] if seed % 3 == 0 else []
    options = Options(provenance=bool(flags))
    out = tmp_path / "out"
    calls: list[int] = []
    argv = ["build", str(root), "--out", str(out), *flags]
    assert run_cli(argv, calls) == 0
    first = capsys.readouterr().err
    incremental = 0
    for step in range(6):
        edited = rng.sample(modules, 2 if rng.random() < 0.2 else 1)
        drawn = []
        for path in edited:
            name, edit = rng.choice(EDITS)
            drawn.append((path.relative_to(root).as_posix(), name))
            path.write_text(edit(path.read_text(), rng))
        if step % 2:
            age_tree(root)  # then the rebuild leaves a record the next one starts from
        reference, diags = build(root, options=options)
        before = len(calls)
        code = run_cli(argv, calls)
        err = capsys.readouterr().err
        if len(calls) == before:  # rebuilt incrementally: exactly what the full build gives
            incremental += 1
            assert code == 0 and not diags and err == first, (seed, step, drawn)
        assert code == (1 if diags.has_errors else 0), (seed, step, drawn, err)
        if not diags.has_errors:
            assert _output(out) == reference.files, (seed, step, drawn)
        else:  # a failed build leaves the previous output; start again from a good tree
            for path in modules:
                path.unlink()
            modules = _tree(root, rng)
            age_tree(root)
            assert run_cli(argv, calls) == 0
            first = capsys.readouterr().err
    # How many of these were incremental depends on the edits drawn; see the next test.
    assert incremental <= 6


@pytest.mark.parametrize(
    "edit", ["comment at the end", "variable default", "resource value", "local value", "output value"]
)
def test_an_edit_to_what_a_module_emits_is_rebuilt_incrementally(
    tmp_path: Path, edit: str, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "src"
    modules = _tree(root, random.Random(7))
    age_tree(root)
    out = tmp_path / "out"
    calls: list[int] = []
    argv = ["build", str(root), "--out", str(out)]
    assert run_cli(argv, calls) == 0
    first = capsys.readouterr().err
    change = dict(EDITS)[edit]
    for path in (modules[-1], modules[0], modules[1]):  # a leaf, the root, a module with calls
        path.write_text(change(path.read_text(), random.Random(1)))
        age_tree(root)
        assert run_cli(argv, calls) == 0
        assert calls == [1]  # no full build
        assert capsys.readouterr().err == first
        assert _output(out) == build(root, options=Options())[0].files


def _view(root: Path, rel: str, options: Options) -> object:
    loaded, _ = load_module(root / rel, root=root, options=options)
    module: Module = loaded.module
    return outside_view(module, options=options)


@pytest.mark.parametrize(
    ("before", "after", "same"),
    [
        ('variable "a" {\n  default = 1\n}\n', 'variable "a" {\n  default = 22\n}\n', True),
        ('variable "a" {\n  default = 1\n}\n', 'variable "a" {\n  type = number\n}\n', False),
        ('output "o" {\n  value = 1\n}\n', 'output "o" {\n  value = "x"\n}\n', True),
        ("locals {\n  a = 1\n}\n", "locals {\n  a = 2\n  b = 3\n}\n", True),
        ('resource "x_y" "r" {\n  a = 1\n}\n', 'resource "x_y" "r" {\n  a = 2\n}\n', True),
        ('resource "x_y" "r" {\n  a = 1\n}\n', 'resource "z_y" "r" {\n  a = 1\n}\n', False),
        ('resource "x_y" "r" {\n  a = 1\n}\n', 'resource "x_y" "r" {\n  provider = x.b\n}\n', False),
        ('resource "x_y" "r" {\n  a = 1\n}\n', '\nresource "x_y" "r" {\n  a = 1\n}\n', False),
        ('module "m" {\n  source = "./m"\n}\n', 'module "m" {\n  source = "./m"\n  a = 1\n}\n', False),
        ('provider "x" {\n  a = 1\n}\n', 'provider "x" {\n  a = 2\n}\n', False),
    ],
)
def test_the_outside_view_keeps_what_the_graph_and_providers_read(
    tmp_path: Path, before: str, after: str, same: bool
) -> None:
    one = write_tree(tmp_path / "one", {"main.tf": before})
    two = write_tree(tmp_path / "two", {"main.tf": after})
    options = Options()
    assert (_view(one, ".", options) == _view(two, ".", options)) is same


def test_with_static_evaluation_variables_and_locals_are_read_whole(tmp_path: Path) -> None:
    one = write_tree(tmp_path / "one", {"main.tf": "locals {\n  a = 1\n}\n"})
    two = write_tree(tmp_path / "two", {"main.tf": "locals {\n  a = 2\n}\n"})
    tofu = Options(dialect=Dialect.OPENTOFU)
    assert _view(one, ".", Options()) == _view(two, ".", Options())
    assert _view(one, ".", tofu) != _view(two, ".", tofu)


def test_a_previous_output_file_changed_in_place_is_never_taken(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "src"
    _tree(root, random.Random(3))
    age_tree(root)
    out = tmp_path / "out"
    calls: list[int] = []
    argv = ["build", str(root), "--out", str(out)]
    assert run_cli(argv, calls) == 0
    # Another module's output file changed with its size, mtime and mode kept: only its bytes
    # (checked as the file is taken into the new tree) tell.
    other = out / "modules" / "m1" / "main.tf.json"
    st = other.stat()
    data = other.read_bytes()
    other.write_bytes(data.replace(b'"', b"'", 1))
    os.utime(other, ns=(st.st_atime_ns, st.st_mtime_ns))
    edited = root / "modules" / "m0" / "main.tf"  # an edit that is rebuilt incrementally otherwise
    edited.write_text(dict(EDITS)["resource value"](edited.read_text(), random.Random(0)))
    age_tree(root)
    assert run_cli(argv, calls) == 0
    assert calls == [1, 1]  # built in full
    assert _output(out) == build(root, options=Options())[0].files


def test_a_touched_file_is_checked_not_built(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "src"
    modules = _tree(root, random.Random(4))
    age_tree(root)
    out = tmp_path / "out"
    calls: list[int] = []
    argv = ["build", str(root), "--out", str(out)]
    assert run_cli(argv, calls) == 0
    first = capsys.readouterr().err
    before = _output(out)
    os.utime(modules[1], ns=(OLD + 10**9, OLD + 10**9))  # the stats differ, the bytes do not
    assert run_cli(argv, calls) == 0
    assert calls == [1] and capsys.readouterr().err == first and _output(out) == before


def test_a_build_after_one_that_stopped_early_reads_each_module_as_it_now_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The first build's prefetch reads modules/a/b (listing and key), then the build stops at the
    # error in modules/a before loading it. The next build in the same process took that listing
    # and key for modules/a/b, whose file had changed meanwhile, and wrote its old version
    # (seed 21 of the property test above).
    root = write_tree(
        tmp_path / "src",
        {
            "main.tf": 'module "a" {\n  source = "./modules/a"\n}\n',
            "modules/a/main.tf": 'module "b" {\n  source = "./b"\n}\nresource {\n',
            "modules/a/b/main.tf": "locals {\n  x = 1\n}\n",
        },
    )
    out = tmp_path / "out"
    calls: list[int] = []
    argv = ["build", str(root), "--out", str(out)]
    assert run_cli(argv, calls) == 1
    write_tree(
        root,
        {
            "modules/a/main.tf": 'module "b" {\n  source = "./b"\n}\n',
            "modules/a/b/main.tf": "locals {\n  x = 22\n}\n",
        },
    )
    assert run_cli(argv, calls) == 0
    assert calls == [1, 1]
    written = json.loads((out / "modules" / "a" / "b" / "main.tf.json").read_bytes())
    assert written["locals"] == {"x": 22}
    assert _output(out) == build(root, options=Options())[0].files


def test_files_touched_with_their_bytes_kept_load_no_module(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 38, item 13: every file touched (a checkout, a formatter that rewrote nothing) made the
    # rebuild load each module twice, its previous version and its new one, to compare them:
    # three times a cold build's peak memory for one large module. The same bytes are the same
    # module key, so the previous output stands and no module is loaded.
    from flatten.shell import build_cache
    from flatten.stages import load

    root = tmp_path / "src"
    modules = _tree(root, random.Random(5))
    age_tree(root)
    out = tmp_path / "out"
    calls: list[int] = []
    argv = ["build", str(root), "--out", str(out)]
    assert run_cli(argv, calls) == 0
    first = capsys.readouterr().err
    before = _output(out)
    for path in modules:
        os.utime(path, ns=(OLD + 10**9, OLD + 10**9))
    loaded: list[str] = []
    monkeypatch.setattr(build_cache, "take", lambda key, directory: loaded.append(directory))
    monkeypatch.setattr(load, "load_module", lambda directory, **kw: loaded.append(str(directory)))
    assert run_cli(argv, calls) == 0
    assert calls == [1] and capsys.readouterr().err == first and _output(out) == before
    assert loaded == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="both versions are read in forked children")
def test_both_versions_of_an_edited_module_are_read_in_child_processes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 38, item 13: the previous version and its view, even let go, left the rebuild's process
    # holding their memory (in pieces the new version's objects did not fit), and the new version
    # parsed there was held whole beside its output: a rebuild after one edit peaked above a cold
    # build. The previous version's view digest comes back from one child; the new version is
    # parsed and merged in another, and taken here from the module cache as a build takes it.
    from flatten.shell import build_cache
    from flatten.shell.memo import module_keys
    from flatten.stages import load

    root = tmp_path / "src"
    modules = _tree(root, random.Random(6))
    age_tree(root)
    out = tmp_path / "out"
    calls: list[int] = []
    argv = ["build", str(root), "--out", str(out)]
    assert run_cli(argv, calls) == 0
    first = capsys.readouterr().err
    edited = modules[-1]  # a leaf module with resources
    previous = module_keys()[edited.parent.relative_to(root).as_posix()]
    decoded: list[str] = []
    merged: list[str] = []
    real_decode = build_cache.decode
    real_merge = load.merge_module  # type: ignore[attr-defined]

    def decode(data: bytes, key: str) -> build_cache.ModuleEntry | None:
        decoded.append(key)  # in this process only: a child's list is its own
        return real_decode(data, key)

    def merge(*args: object, **kwargs: object) -> object:
        merged.append("merged")
        return real_merge(*args, **kwargs)

    monkeypatch.setattr(build_cache, "decode", decode)
    monkeypatch.setattr("flatten.stages.load.merge_module", merge)
    text = edited.read_text()
    edited.write_text(dict(EDITS)["resource value"](text, random.Random(2)))
    assert edited.read_text() != text
    age_tree(root)
    assert run_cli(argv, calls) == 0
    assert previous not in decoded and len(decoded) == 1  # the new version, from the cache
    assert merged == []
    assert calls == [1]  # rebuilt incrementally, which needs both versions' views
    assert capsys.readouterr().err == first
    assert _output(out) == build(root, options=Options())[0].files


def test_the_edited_modules_new_version_is_written_as_it_is_encoded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 38, item 13: the child that parses an edited module's new version queued its module-cache
    # entry to the background writer, which encoded it whole into bytes beside the module (27 MiB
    # above the parse's own peak for a 10 MB file: that child was the rebuild's peak). It writes the
    # entry as it encodes it, as a prefetching process does; the rebuild then takes it from there.
    from flatten.shell import build_cache, incremental

    root = tmp_path / "src"
    modules = _tree(root, random.Random(6))
    directory = modules[-1].parent
    encoded: list[str] = []
    real_encode = build_cache.encode

    def encode(key: str, entry: build_cache.ModuleEntry) -> tuple[tuple[str, ...], bytes]:
        encoded.append(key)
        return real_encode(key, entry)

    monkeypatch.setattr(build_cache, "encode", encode)
    found = incremental._new_version(directory, root, Options())
    build_cache.finish()  # anything queued for the background writer is written (and encoded) now
    assert found is not None
    assert encoded == []
    display = directory.relative_to(root).as_posix()
    entry = build_cache.take(found[0], display)
    assert entry is not None  # written: the rebuild takes it from the module cache
    assert entry.module == load_module(directory, root=root, options=Options())[0].module


# What the flatten program runs for the test below: each call of ``rebuild_early`` says whether
# typer was imported by then, and each ``run_apart`` of the build's own process what it ran.
_LOGGED_MAIN = """
import os, sys
from flatten.shell import fanout, incremental

log = open(sys.argv[1], "a")
real_early, real_apart, me = incremental.rebuild_early, fanout.run_apart, os.getpid()

def early(*args, **kwargs):
    log.write(f"early typer={'typer' in sys.modules}\\n"); log.flush()
    return real_early(*args, **kwargs)

def apart(job, **kwargs):
    if os.getpid() == me:
        log.write(f"apart {job.func.__name__}\\n"); log.flush()
    return real_apart(job, **kwargs)

incremental.rebuild_early, fanout.run_apart = early, apart
sys.argv = ["flatten", *sys.argv[2:]]
from flatten.__main__ import main
main()
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the new version is parsed in a forked child")
def test_the_edited_modules_new_version_is_parsed_before_the_command_line_is(tmp_path: Path) -> None:
    # Issue 38, item 13: the child parsing an edited module's new version was forked by the
    # rebuilding process, with typer, flatten.cli and the rebuild's state imported (33 MiB under
    # the parse's 67: above a cold build's peak). The flatten program forks it before typer is
    # imported, for a command line whose previous build its alias names; the rebuild takes what
    # it found instead of parsing again.
    import subprocess

    root = tmp_path / "src"
    modules = _tree(root, random.Random(6))
    age_tree(root)
    out, log = tmp_path / "out", tmp_path / "log"
    command = [sys.executable, "-c", _LOGGED_MAIN, str(log), "build", str(root), "--out", str(out)]
    env = {**os.environ, "FLATTEN_CACHE_DIR": str(tmp_path / "cache")}
    first = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    assert log.read_text() == ""  # cold: no alias, no rebuild
    edited = modules[-1]
    edited.write_text(dict(EDITS)["resource value"](edited.read_text(), random.Random(2)))
    age_tree(root)
    again = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    # Forked before typer; that child took both the new version and the previous version's
    # view (each in a child of its own, side by side): this process read neither (issue 41,
    # ninth round: the old view was 0.02-0.03 s of flat 200's rebuild after one edit).
    assert log.read_text().splitlines() == ["early typer=False"]
    assert again.stderr == first.stderr
    assert _output(out) == build(root, options=Options())[0].files
