"""Dataclass methods compiled on their first call (flatten/shell/dataclass_methods.py): the same
behaviour as the methods ``dataclasses`` compiles at once, and only in the flatten program.

Each check runs in a fresh interpreter: installing it here would change every dataclass the
test session makes afterwards."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from flatten.shell import dataclass_methods

pytestmark = pytest.mark.skipif(
    sys.version_info[:2] not in dataclass_methods._RELEASES,
    reason=f"Python {sys.version_info[0]}.{sys.version_info[1]}: its dataclasses are left as they are",
)

# The same classes made twice, before and after ``defer_methods``; every operation a generated
# method serves, on both, as JSON (an exception as its type and message).
_SCRIPT = textwrap.dedent(
    """
    import copy, dataclasses, json, pickle, sys
    from dataclasses import dataclass, field
    from flatten.shell.dataclass_methods import defer_methods

    SOURCE = '''
    @dataclass(frozen=True, slots=True)
    class Frozen:
        a: int
        b: tuple = ()
        c: str = field(default="x", repr=False, compare=False)

    @dataclass(frozen=True)
    class Child(Frozen):
        d: int = 0

    @dataclass(order=True)
    class Ordered:
        a: int
        b: list = field(default_factory=list)

    @dataclass(unsafe_hash=True)
    class Hashed:
        a: int

    @dataclass
    class Loop:
        other: object = None
    '''

    def outcome(run):
        try:
            return ["ok", repr(run())]
        except Exception as exc:
            return [type(exc).__name__, str(exc)]

    def probe(ns):
        F, C, O, H, L = (ns[n] for n in ("Frozen", "Child", "Ordered", "Hashed", "Loop"))
        f, g, c, o, p = F(1, (2,)), F(1, (2,), "y"), C(1, d=3), O(1, [2]), O(2)
        loop = L()
        loop.other = loop
        checks = [
            lambda: repr(f), lambda: repr(c), lambda: repr(o), lambda: repr(loop),
            lambda: f == g, lambda: f != F(2), lambda: f == c, lambda: f == 1, lambda: c == C(1, d=3),
            lambda: hash(f) == hash(g), lambda: hash(c) == hash(C(1, d=3)), lambda: hash(H(4)) == hash(H(4)),
            lambda: hash(o), lambda: o < p, lambda: o <= p, lambda: o > p, lambda: o >= p, lambda: o < 1,
            lambda: setattr(f, "a", 2), lambda: delattr(f, "a"), lambda: setattr(c, "d", 1),
            lambda: setattr(f, "z", 1), lambda: setattr(o, "a", 5) or o.a,
            lambda: dataclasses.replace(f, a=9), lambda: pickle.loads(pickle.dumps(c)) == c,
            lambda: copy.deepcopy(o) == o, lambda: sorted([p, o]) == [o, p], lambda: {f: 1}[g],
            lambda: F.__eq__.__qualname__, lambda: F.__hash__.__qualname__, lambda: F.__repr__.__qualname__,
            lambda: F.__init__.__qualname__, lambda: F.__doc__, lambda: repr(f), lambda: f == g,
        ]
        return [outcome(check) for check in checks]

    plain = {"dataclass": dataclass, "field": field}
    exec(SOURCE, plain)
    installed = defer_methods()
    deferred = {"dataclass": dataclass, "field": field}
    exec(SOURCE, deferred)
    waiting = deferred["Frozen"].__dict__["__setattr__"]
    untouched = type(waiting).__name__, waiting.__code__.co_name
    first = probe(plain), probe(deferred)
    # After the first calls each method is the generated one, in its place on its class.
    own = {
        name: deferred["Frozen"].__dict__[name].__code__.co_name
        for name in ("__eq__", "__hash__", "__setattr__", "__delattr__", "__init__")
    }
    print(json.dumps({"installed": installed, "again": defer_methods(), "plain": first[0],
                      "deferred": first[1], "own": own, "untouched": untouched}))
    """
)


def _run(script: str, cwd: Path) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=cwd, check=False
    )
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert isinstance(found, dict)
    return found


def test_deferred_methods_behave_as_the_ones_compiled_at_once(tmp_path: Path) -> None:
    found = _run(_SCRIPT, tmp_path)
    assert found["installed"] is True and found["again"] is False  # once per process
    assert found["deferred"] == found["plain"]
    outcomes = found["plain"]
    assert isinstance(outcomes, list)
    assert outcomes[18][0] == "FrozenInstanceError" and outcomes[4] == ["ok", "True"]  # the probe probes
    # Before its first call a frozen class's __setattr__ is the compiling function ...
    assert found["untouched"] == ["function", "first_call"]
    # ... and after it, each method is the one dataclasses generates (named as its source names it).
    assert found["own"] == {
        name: name for name in ("__eq__", "__hash__", "__setattr__", "__delattr__", "__init__")
    }


def test_only_the_flatten_program_defers_them(tmp_path: Path) -> None:
    """``python -m flatten`` installs it before flatten makes a dataclass; ``import flatten`` does not."""
    script = textwrap.dedent(
        """
        import dataclasses, json, sys
        import flatten
        from flatten.lang.options import Options
        library = getattr(dataclasses._create_fn, "deferring", False)
        sys.argv = ["flatten", "--version"]
        import flatten.__main__ as program
        try:
            program._main()
        except SystemExit:
            pass
        program = getattr(dataclasses._create_fn, "deferring", False)
        print(json.dumps({"library": library, "program": program}))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1]) == {"library": False, "program": True}
