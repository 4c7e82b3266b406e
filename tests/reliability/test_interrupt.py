"""Interrupted and concurrent builds: the output is never half-written, nothing is left behind.

Signals arrive at random points of a real ``flatten build`` process (start-up, loading, writing,
swapping); afterwards the output directory is either the previous build or the new one (checked
against its manifest digest) and no temporary directory remains beside it.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from flatten import gate
from flatten.stages import emit, output

RESOURCE = 'resource "terraform_data" "r{i}" {{\n  input = "${{local.p}}-{i}-{tag}"\n}}\n'


def make_tree(root: Path, tag: str, files: int = 60, per_file: int = 40) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "main.tf").write_text('locals {\n  p = "x"\n}\n')
    for f in range(files):
        text = "".join(RESOURCE.format(i=f * per_file + i, tag=tag) for i in range(per_file))
        (root / f"r{f:03d}.tf").write_text(text)


def consistent(out: Path) -> str:
    """Return the output's tag, checking the manifest's digest matches what is on disk."""
    manifest = json.loads((out / "flatten.manifest.json").read_text())
    data = (out / "main.tf.json").read_bytes()
    assert manifest["modules"][0]["digest"] == "sha256:" + hashlib.sha256(data).hexdigest()
    value = json.loads(data)["resource"]["terraform_data"]["r0"]["input"]
    return str(value).rsplit("-", 1)[1]


def start(root: Path, out: Path, cache: Path | None = None) -> subprocess.Popen[bytes]:
    # stderr goes to a pipe: a process that leaves a child behind holding it makes communicate()
    # hang, which is a failure too (see test_terminated_build_leaves_no_worker_processes).
    # Without a cache the build runs in one process; with one, a forked child prefetches.
    env = {"FLATTEN_PARSE_CACHE": "off"} if cache is None else {"FLATTEN_CACHE_DIR": str(cache)}
    return subprocess.Popen(
        [sys.executable, "-m", "flatten", "build", str(root), "--out", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "FLATTEN_PARSE_CACHE": "on", **env},
    )


def no_uncaught_traceback(stderr: bytes) -> bool:
    """True unless stderr holds a traceback other than CPython's "Exception ignored in" reports.

    A SIGINT that lands inside an import-machinery weakref callback is reported by CPython as an
    unraisable exception ("Exception ignored in: <function _get_module_lock.<locals>.cb>") and the
    program goes on; flatten cannot catch it (docs/reliability.md). Every other traceback is a bug.
    """
    return stderr.count(b"Traceback") == stderr.count(b"Exception ignored in") + _startup_interrupts(stderr)


def _startup_interrupts(stderr: bytes) -> int:
    """Count KeyboardInterrupt tracebacks from CPython's own start-up (``python -m`` finding the
    module, site): every frame is CPython's, flatten's code has not started."""
    count = 0
    parts = stderr.split(b"Traceback (most recent call last):")
    for before, part in itertools.pairwise(parts):
        if before.rstrip().rsplit(b"\n", 1)[-1].startswith(b"Exception ignored"):
            continue  # an unraisable report, counted as such
        frames = [line for line in part.splitlines() if line.strip().startswith(b"File ")]
        if frames and all(b'File "<frozen ' in f for f in frames) and b"KeyboardInterrupt" in part:
            count += 1
    return count


@pytest.mark.parametrize("cached", [False, True], ids=["uncached", "cached"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_interrupted_builds_leave_previous_output_intact(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, sig: signal.Signals, cached: bool
) -> None:
    root, out = tmp_path / "src", tmp_path / "out"
    cache = tmp_path_factory.mktemp("cache") if cached else None
    make_tree(root, "old")
    t0 = time.perf_counter()
    assert start(root, out, cache).wait() == 0
    duration = time.perf_counter() - t0
    rnd = random.Random(sig)
    for attempt in range(8):
        make_tree(root, f"new{attempt}")
        proc = start(root, out, cache)
        time.sleep(rnd.uniform(0, duration * 1.1))
        proc.send_signal(sig)
        _, stderr = proc.communicate()
        # Exit codes: finished (0), interrupted by flatten's handlers (130 / 143), or killed by the
        # signal before Python installed any handler. Anything else is an unhandled exception.
        # A SIGINT while CPython itself starts (importing site or finding the module to run,
        # before any flatten code) is CPython's fatal error or traceback, status 1: nothing
        # flatten can handle.
        startup = proc.returncode == 1 and (
            b"Fatal Python error: init_import_site" in stderr
            or b"Could not import runpy module" in stderr
            or _startup_interrupts(stderr) > 0
        )
        assert proc.returncode in (0, 130, 143, -sig) or startup, (proc.returncode, stderr.decode())
        assert startup or no_uncaught_traceback(stderr), stderr.decode()
        tag = consistent(out)
        assert tag in {"old", *(f"new{i}" for i in range(attempt + 1))}
        assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "src"], "temporary directory left behind"


def test_concurrent_builds_into_one_output(tmp_path: Path) -> None:
    roots = [tmp_path / "a", tmp_path / "b"]
    make_tree(roots[0], "a", files=20)
    make_tree(roots[1], "b", files=20)
    out = tmp_path / "out"
    procs = [start(root, out) for root in roots * 2]
    assert [p.wait() for p in procs] == [0, 0, 0, 0]
    assert consistent(out) in {"a", "b"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b", "out"]


def test_failed_write_leaves_previous_output_and_no_temporary_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    emit.write_tree(out, {"main.tf.json": b"old\n", emit.MANIFEST_NAME: b"{}\n"})
    calls = []

    def failing(directory: gate.Dir, name: str, data: bytes, **kwargs: Any) -> None:
        calls.append(name)
        if len(calls) > 3:
            raise OSError(28, "No space left on device")
        real(directory, name, data, **kwargs)

    real = gate.write_file  # how the writer writes each file
    monkeypatch.setattr(gate, "write_file", failing)
    files = {f"f{i}.json": b"new\n" for i in range(10)} | {emit.MANIFEST_NAME: b"{}\n"}
    with pytest.raises(OSError):
        emit.write_tree(out, files)
    monkeypatch.undo()
    assert (out / "main.tf.json").read_bytes() == b"old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_leftovers_of_a_killed_build_are_removed_by_the_next(tmp_path: Path) -> None:
    root, out = tmp_path / "src", tmp_path / "out"
    make_tree(root, "old", files=2)
    stale = tmp_path / ".out.flatten-killed"  # what SIGKILL during a write leaves behind
    (stale / "modules").mkdir(parents=True)
    (stale / "main.tf.json").write_text("half")
    assert start(root, out).wait() == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "src"]
    assert consistent(out) == "old"


def test_a_build_waits_for_the_lock_on_the_output(tmp_path: Path) -> None:
    """The lock is real: while another holder has it, a build does not touch --out."""
    root, out = tmp_path / "src", tmp_path / "out"
    make_tree(root, "new", files=2)
    with gate.open_dir(tmp_path) as parent, output._locked(parent):  # write_tree's lock (--out's parent)
        proc = start(root, out)
        time.sleep(3)
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert not out.exists()
    assert proc.wait(timeout=60) == 0
    assert consistent(out) == "new"


def _children(pid: int) -> set[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return {int(x) for x in f.read().split()}
    except OSError:
        return set()


@pytest.mark.skipif(
    not Path("/proc/self/task").is_dir() or (os.cpu_count() or 1) < 2, reason="needs Linux /proc and 2 CPUs"
)
def test_terminated_build_leaves_no_worker_processes(tmp_path: Path) -> None:
    root, out = tmp_path / "src", tmp_path / "out"
    make_tree(root, "x", files=120, per_file=60)
    proc = subprocess.Popen(
        [sys.executable, "-m", "flatten", "build", str(root), "--out", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "FLATTEN_CACHE_DIR": str(tmp_path / "cache"), "FLATTEN_PARSE_CACHE": "on"},
    )
    workers: set[int] = set()
    deadline = time.monotonic() + 20
    while not workers and proc.poll() is None and time.monotonic() < deadline:
        workers = _children(proc.pid)
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    time.sleep(2)
    alive = {w for w in workers if Path(f"/proc/{w}").exists()}
    for w in alive:  # clean up what the bug leaves behind (our own processes, by id)
        os.kill(w, signal.SIGKILL)
    assert workers, "the build finished before it started any worker"
    assert not alive, f"worker processes left running: {sorted(alive)}"


_INTERRUPT_IN_IMPORT = """
import runpy, sys

class Interrupt:
    # One Ctrl-C arriving while a module is imported, before __main__ installed its handlers.
    def find_spec(self, name, path=None, target=None):
        if name == {module!r} and self in sys.meta_path:
            sys.meta_path.remove(self)
            raise KeyboardInterrupt
        return None

sys.modules.pop({module!r}, None)
sys.meta_path.insert(0, Interrupt())
sys.argv = ["-m", "--version"]  # what python -m sets while it locates the module
runpy._run_module_as_main("flatten")
"""


@pytest.mark.parametrize(
    ("module", "message"),
    [
        # flatten/__init__.py, imported before __main__: no output is named yet
        ("flatten.lang.release", b"flatten: interrupted\n"),
        # __main__'s first import (a traceback in CI, stop 47)
        ("signal", b"flatten: interrupted; the previous output was left in place\n"),
    ],
)
def test_ctrl_c_while_the_package_is_imported_exits_130_without_a_traceback(
    module: str, message: bytes
) -> None:
    # The flaky random-signal case above, made deterministic.
    code = _INTERRUPT_IN_IMPORT.format(module=module)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert proc.returncode == 130, proc.stderr.decode()
    assert b"Traceback" not in proc.stderr
    assert proc.stderr == message


MODULE_RESOURCE = (
    'resource "terraform_data" "r{i}" {{\n  count = var.n\n  input = "{tag}-${{count.index}}-{i}"\n}}\n'
)


def make_modules(root: Path, tag: str, modules: int, resources: int) -> None:
    """A root calling ``modules`` local modules, each with ``resources`` resources."""
    root.mkdir(parents=True, exist_ok=True)
    calls = []
    for m in range(modules):
        directory = root / "modules" / f"m{m}"
        directory.mkdir(parents=True, exist_ok=True)
        body = "".join(MODULE_RESOURCE.format(i=i, tag=tag) for i in range(resources))
        (directory / "main.tf").write_text('variable "n" {\n  type = number\n}\n' + body)
        calls.append(f'module "m{m}" {{\n  source = "./modules/m{m}"\n  n      = {m % 3}\n}}\n')
    (root / "main.tf").write_text("".join(calls))


def _descendants(pid: int) -> set[int]:
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in _children(todo.pop()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting to be reaped is not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _snapshot(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupt_cold_build(tmp_path: Path, sig: signal.Signals, modules: int = 400) -> tuple[int, str, float]:
    """Build a large generated tree, then interrupt (the PID alone, as a supervisor or `timeout`
    does) a cold build of a changed copy once its prefetching helpers run. Checks that OUT is
    unchanged and no helper survives; returns the exit code, stderr and the signal's latency."""
    root, out = tmp_path / "src", tmp_path / "out"
    make_modules(root, "old", modules, 40)
    env = {**os.environ, "FLATTEN_CACHE_DIR": str(tmp_path / "cache-old"), "FLATTEN_PARSE_CACHE": "on"}
    argv = [sys.executable, "-m", "flatten", "build", str(root), "--out", str(out)]
    subprocess.run(argv, check=True, capture_output=True, env=env, timeout=600)
    before = _snapshot(out)
    make_modules(root, "new", modules, 40)
    env["FLATTEN_CACHE_DIR"] = str(tmp_path / "cache-new")  # cold: nothing to replay or reuse
    with (tmp_path / "stderr").open("wb") as stderr:
        # SIGINT as a terminal delivers it: a test runner started in the background of a shell
        # runs with SIGINT ignored, which its children would inherit.
        proc = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=stderr, env=env, preexec_fn=_default_sigint
        )
    helpers: set[int] = set()
    deadline = time.monotonic() + 60
    # Once the prefetching child runs, and a little longer: its own helpers start.
    while not helpers and proc.poll() is None and time.monotonic() < deadline:
        helpers = _descendants(proc.pid)
        time.sleep(0.01)
    for _ in range(50):
        time.sleep(0.01)
        helpers |= _descendants(proc.pid)
    assert proc.poll() is None, "the build finished before it could be interrupted: make the tree larger"
    sent = time.perf_counter()
    os.kill(proc.pid, sig)
    try:
        code = proc.wait(timeout=60)
    finally:
        latency = time.perf_counter() - sent
        time.sleep(0.5)  # a child killed by its parent's death is gone within milliseconds
        alive = {pid for pid in helpers if _running(pid)}
        for pid in alive:  # clean up what a bug leaves behind (our own processes, by id)
            os.kill(pid, signal.SIGKILL)
    assert helpers, "the build started no helper process"
    assert not alive, f"helper processes left running: {sorted(alive)}"
    assert _snapshot(out) == before, "the previous output changed"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache-new", "cache-old", "out", "src", "stderr"]
    return code, (tmp_path / "stderr").read_text(), latency


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc to find the helpers")
@pytest.mark.parametrize(
    ("sig", "code", "word"), [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")]
)
def test_a_signal_to_the_build_alone_stops_every_helper_within_a_second(
    tmp_path: Path, sig: signal.Signals, code: int, word: str
) -> None:
    status, stderr, latency = interrupt_cold_build(tmp_path, sig)
    print(f"latency {latency:.3f} s")  # shown with -s (the report's figures)
    assert status == code, stderr
    assert stderr == f"flatten: {word}; the previous output was left in place\n"
    assert latency < 1.0, f"exited {latency:.2f} s after the signal"
