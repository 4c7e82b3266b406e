#!/usr/bin/env python3
"""Run ../shared/conformance as a ratchet.

Every case listed in tests/conformance-passing.txt must pass; a listed case that fails makes
this script exit 1. Other cases are only reported. ``--update`` rewrites the list with every
case that passes now (run it when an issue makes new cases pass, and review the diff).

usage: scripts/conformance.py [--flatten CMD] [--update] [runner args...]
"""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RUNNER = REPO.parent / "shared" / "conformance" / "run.py"
RATCHET = REPO / "tests" / "conformance-passing.txt"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flatten", default=None, help="command that runs flatten (default: flatten on PATH)")
    ap.add_argument("--update", action="store_true", help="rewrite the ratchet list with the passing cases")
    args, rest = ap.parse_known_args()
    if not RUNNER.is_file():
        print(f"conformance: runner not found at {RUNNER}", file=sys.stderr)
        return 2
    flatten = args.flatten or shutil.which("flatten") or f"{shlex.quote(sys.executable)} -m flatten"
    proc = subprocess.run(
        [sys.executable, str(RUNNER), "--flatten", flatten, *rest], capture_output=True, text=True
    )
    passed, failed = set(), {}
    for line in proc.stdout.splitlines():
        if m := re.match(r"PASS (\S+)", line):
            passed.add(m.group(1))
        elif m := re.match(r"FAIL (\S+?):? (.*)", line):
            failed[m.group(1)] = m.group(2)
    if not passed and not failed:
        print(proc.stdout + proc.stderr, file=sys.stderr)
        print("conformance: the runner reported no cases", file=sys.stderr)
        return 2
    required = (
        {
            line.strip()
            for line in RATCHET.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.startswith("#")
        }
        if RATCHET.exists()
        else set()
    )
    regressions = sorted(c for c in required if c in failed)
    unknown = sorted(c for c in required if c not in passed and c not in failed)
    for case in sorted(failed):
        mark = "REGRESSION" if case in required else "not yet"
        print(f"  {mark}: {case}: {failed[case]}")
    newly = sorted(passed - required)
    if newly and not args.update:
        print(f"conformance: {len(newly)} passing case(s) not yet in the ratchet: {' '.join(newly)}")
    print(
        f"conformance: {len(passed)} passed, {len(failed)} failed; ratchet {len(required)} case(s), "
        f"{len(regressions)} regression(s)"
    )
    if args.update:
        header = "# Conformance cases flatten passes; .ci/run fails if one of them fails. One per line.\n"
        RATCHET.write_text(header + "".join(f"{c}\n" for c in sorted(passed)), encoding="utf-8")
        print(f"conformance: wrote {len(passed)} case(s) to {RATCHET.relative_to(REPO)}")
        return 0
    if unknown and not rest:
        print(f"conformance: ratchet names unknown case(s): {' '.join(unknown)}", file=sys.stderr)
        return 1
    return 1 if regressions else 0


if __name__ == "__main__":
    sys.exit(main())
