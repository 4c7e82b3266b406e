"""`--check` explains (issue 39 item 3): each stale file's cause told apart from the output's
manifest (edited by hand, a source changed, a file added or removed), the finding placed on the
source that changed where the manifest can tell, and `--diff` printing a unified diff per file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.files import write_tree

ROOT = {
    "live/main.tf": (
        'module "net" {\n  source = "./net"\n}\n\nresource "terraform_data" "a" {\n  input = "x"\n}\n'
    ),
    "live/net/main.tf": (
        'variable "cidr" {\n  default = "10.0.0.0/16"\n}\n\noutput "cidr" {\n  value = var.cidr\n}\n'
    ),
    "live/setup.sh": "echo one\necho two\n",
}


def flatten(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"}
    env["FLATTEN_CACHE_DIR"] = str(cwd.parent / "cache")
    return subprocess.run(
        [sys.executable, "-m", "flatten", *args], capture_output=True, text=True, cwd=cwd, env=env
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = write_tree(tmp_path / "repo", {**ROOT, ".git/HEAD": "ref: refs/heads/main\n"})
    built = flatten("build", "live", "--out", "flat", cwd=repo)
    assert built.returncode == 0, built.stderr
    return repo


def _findings(repo: Path) -> dict[str, tuple[str, int, str]]:
    """Return each finding as {stale file: (the file it points at, line, detail)} (file relative to
    the repository); the stale file is the one the detail names first."""
    proc = flatten("build", "live", "--out", "flat", "--check", "--format", "json", cwd=repo)
    assert proc.returncode in (0, 1), proc.stderr
    found = {}
    for d in json.loads(proc.stdout)["diagnostics"]:
        assert d["summary"] == "Output is out of date"
        where = os.path.relpath(os.path.normpath(repo / "live" / d["range"]["filename"]), repo)
        named = next(word for word in d["detail"].split() if word.startswith("flat/"))
        found[named.rstrip(",.:")] = (where, d["range"]["start"]["line"], d["detail"])
    return found


def test_a_source_change_points_at_the_changed_argument(repo: Path) -> None:
    net = repo / "live" / "net" / "main.tf"
    net.write_text(net.read_text().replace("10.0.0.0/16", "10.1.0.0/16"))
    found = _findings(repo)
    where, line, detail = found["flat/net/main.tf.json"]
    assert (where, line) == ("live/net/main.tf", 2)  # `default = ...`, not line 1 of the output
    assert "a source it is built from changed since flat was built (at net/main.tf:2)" in detail
    script = repo / "live" / "setup.sh"
    script.write_text("echo one\necho three\n")
    where, line, detail = _findings(repo)["flat/setup.sh"]
    assert (where, line) == ("live/setup.sh", 2)  # a copied file: its first changed line


def test_a_hand_edit_of_the_output_is_told_from_a_source_change(repo: Path) -> None:
    out = repo / "flat" / "main.tf.json"
    lines = out.read_text().splitlines(keepends=True)
    edited = next(i for i, text in enumerate(lines) if '"input": "x"' in text)
    lines[edited] = lines[edited].replace('"x"', '"hand"')
    out.write_text("".join(lines))
    found = _findings(repo)
    assert list(found) == ["flat/main.tf.json"]  # no source changed: the manifest still agrees
    where, line, detail = found["flat/main.tf.json"]
    assert (where, line) == ("flat/main.tf.json", edited + 1)  # the output's line that was edited
    assert detail.startswith("flat/main.tf.json was edited by hand: it is not what the last build wrote")
    assert "a source" not in detail


def test_added_removed_and_deleted_files(repo: Path) -> None:
    (repo / "live" / "notes.txt").write_text("new\n")  # a source file added
    (repo / "live" / "setup.sh").unlink()  # a source file removed
    (repo / "flat" / "net" / "main.tf.json").unlink()  # an output file deleted by hand
    found = _findings(repo)
    where, line, detail = found["flat/notes.txt"]
    assert (where, line) == ("live/notes.txt", 1)
    assert "a source file or module was added since flat was built" in detail
    where, _, detail = found["flat/setup.sh"]
    assert where == "flat/setup.sh"
    assert "which the build no longer writes: the source file or module it came from was removed" in detail
    where, _, detail = found["flat/net/main.tf.json"]
    assert where == "flat/net/main.tf.json"
    assert "it was deleted from flat by hand (the last build wrote it)" in detail


def test_an_output_never_built_says_so(repo: Path) -> None:
    (repo / "flat" / "flatten.manifest.json").unlink()
    found = _findings(repo)
    assert "flat holds no manifest, so no build wrote it" in found["flat/flatten.manifest.json"][2]


def test_diff_prints_a_unified_diff_per_stale_file(repo: Path) -> None:
    net = repo / "live" / "net" / "main.tf"
    net.write_text(net.read_text().replace("10.0.0.0/16", "10.1.0.0/16"))
    (repo / "live" / "notes.txt").write_text("new\n")
    proc = flatten("build", "live", "--out", "flat", "--check", "--diff", cwd=repo)
    assert proc.returncode == 1
    assert "Error: Output is out of date" in proc.stderr  # the findings, as without --diff
    diff = proc.stdout
    assert "--- a/flat/net/main.tf.json\n+++ b/flat/net/main.tf.json\n@@ " in diff
    assert '-      "default": "10.0.0.0/16"\n+      "default": "10.1.0.0/16"\n' in diff
    assert "--- /dev/null\n+++ b/flat/notes.txt\n@@ -0,0 +1 @@\n+new\n" in diff
    assert "--- a/flat/flatten.manifest.json\n" in diff  # the manifest records the module's digest
    # Files in path order, one diff each.
    assert (
        diff.index("flat/flatten.manifest.json")
        < diff.index("flat/net/main.tf.json")
        < diff.index("flat/notes.txt")
    )
    # Fresh: no diff at all.
    assert flatten("build", "live", "--out", "flat", cwd=repo).returncode == 0
    fresh = flatten("build", "live", "--out", "flat", "--check", "--diff", cwd=repo)
    assert (fresh.returncode, fresh.stdout) == (0, "")


def test_diff_escapes_what_a_file_holds(repo: Path) -> None:
    (repo / "live" / "setup.sh").write_text("echo one\n\x1b[31mred\r::error::forged\n")
    proc = flatten("build", "live", "--out", "flat", "--check", "--diff", cwd=repo)
    assert proc.returncode == 1
    assert "\x1b" not in proc.stdout and "\r" not in proc.stdout
    assert not [line for line in proc.stdout.splitlines() if line.startswith("::")]
    assert "+\\x1b[31mred\\x0d::error::forged\n" in proc.stdout
    (repo / "live" / "setup.sh").write_bytes(b"\x00\x01binary")
    binary = flatten("build", "live", "--out", "flat", "--check", "--diff", cwd=repo)
    assert "Binary files a/flat/setup.sh and b/flat/setup.sh differ\n" in binary.stdout


def test_diff_needs_check_and_the_text_format(repo: Path) -> None:
    alone = flatten("build", "live", "--out", "flat", "--diff", cwd=repo)
    assert alone.returncode == 2 and "--diff shows what --check finds: add --check." in alone.stderr
    machine = flatten("build", "live", "--out", "flat", "--check", "--diff", "--format", "json", cwd=repo)
    assert machine.returncode == 2 and "--format json prints its report" in machine.stderr


def test_several_roots_diff_in_root_order(tmp_path: Path) -> None:
    main = 'resource "terraform_data" "a" {\n  input = "x"\n}\n'
    repo = write_tree(tmp_path / "repo", {"live/a/main.tf": main, "live/b/main.tf": main})
    assert flatten("build", "live/a", "live/b", "--out", "flat", cwd=repo).returncode == 0
    for name in ("b", "a"):
        (repo / "live" / name / "main.tf").write_text(main.replace('"x"', f'"{name}"'))
    proc = flatten("build", "live/a", "live/b", "--out", "flat", "--check", "--diff", cwd=repo)
    assert proc.returncode == 1
    assert proc.stdout.index("+++ b/flat/a/main.tf.json") < proc.stdout.index("+++ b/flat/b/main.tf.json")
    assert '+        "input": "b"\n' in proc.stdout


def test_a_refusal_of_the_run_is_not_taken_for_a_stale_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refusal that says what a file of OUT is (a FIFO: ``Refused.about_the_file``) makes it
    "not what the build writes"; one about the run (the deadline passed) is an error, never a
    finding that the output is stale."""
    from flatten import gate
    from flatten.lang.oserror import Refused
    from flatten.stages.stale import stale_files

    out = write_tree(tmp_path / "out", {"main.tf.json": "{}\n"})
    assert stale_files(out, {"main.tf.json": b"{}\n"}) == []
    deadline = gate.check_deadline
    for name in ("open_read", "read_bytes"):
        monkeypatch.setattr(gate, name, lambda *a, **k: deadline(0.0, "main.tf.json"))
    with pytest.raises(Refused) as info:
        stale_files(out, {"main.tf.json": b"{}\n"})
    assert info.value.reason == "deadline" and not info.value.about_the_file
    fifo = tmp_path / "fifo-out"
    fifo.mkdir()
    os.mkfifo(fifo / "main.tf.json")
    monkeypatch.undo()
    assert [s.path for s in stale_files(fifo, {"main.tf.json": b"{}\n"})] == ["main.tf.json"]
