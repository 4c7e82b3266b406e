"""What Terraform writes into the output's root module directory survives a rebuild and --check.

flatten/lang/workdir.py names Terraform's entries; flatten/stages/output.py moves them into the
new tree (same inode); flatten/stages/stale.py leaves them out of --check.
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path
from typing import Any

import pytest

from flatten.stages import output
from flatten.stages.output import MANIFEST_NAME, terraform_entries, write_tree
from flatten.stages.stale import Cause, StaleFile, Staleness, stale_files


def _manifest(root: str = "") -> bytes:
    doc: dict[str, object] = {"modules": []}
    if root:
        doc["root"] = root
    return json.dumps(doc).encode()


def _zip(member: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(member, b"plan")
    return buffer.getvalue()


def _terraform_wrote(where: Path) -> None:
    """What init, apply, a workspace, a failed apply, a crash and `plan -out` leave behind."""
    (where / ".terraform" / "modules").mkdir(parents=True)
    (where / ".terraform" / "modules" / "modules.json").write_text("{}")
    (where / "terraform.tfstate.d" / "staging").mkdir(parents=True)
    (where / "terraform.tfstate.d" / "staging" / "terraform.tfstate").write_text("{}")
    for name in ("terraform.tfstate", "terraform.tfstate.backup", ".terraform.tfstate.lock.info"):
        (where / name).write_text(name)
    for name in ("errored.tfstate", "crash.log", ".terraform.lock.hcl"):
        (where / name).write_text(name)
    (where / "release-42").write_bytes(_zip("tfplan"))  # a saved plan: any name


KEPT = [
    ".terraform",
    ".terraform.lock.hcl",
    ".terraform.tfstate.lock.info",
    "crash.log",
    "errored.tfstate",
    "release-42",
    "terraform.tfstate",
    "terraform.tfstate.backup",
    "terraform.tfstate.d",
]


def _inodes(where: Path) -> dict[str, int]:
    return {name: os.lstat(where / name).st_ino for name in KEPT}


@pytest.mark.parametrize("how", ["exchanged", "renamed", "mount-point"])
def test_a_rebuild_keeps_what_terraform_wrote_with_its_inode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    out = tmp_path / "out"
    write_tree(out, {MANIFEST_NAME: _manifest(), "main.tf.json": b"{}"})
    _terraform_wrote(out)
    (out / "notes.zip").write_bytes(_zip("notes.txt"))  # a zip that is no plan is not Terraform's
    (out / "stray.txt").write_text("mine")
    before = _inodes(out)
    if how == "renamed":  # no renameat2: two renames
        monkeypatch.setattr(output, "_exchange", lambda *_: False)
    if how == "mount-point":  # an --out that is a mount point keeps its place: its entries are swapped
        monkeypatch.setattr(output.os.path, "ismount", lambda p: Path(p) == out)
    write_tree(out, {MANIFEST_NAME: _manifest(), "main.tf.json": b'{"a": 1}'})
    assert sorted(os.listdir(out)) == sorted([*KEPT, MANIFEST_NAME, "main.tf.json"])
    assert _inodes(out) == before
    assert (out / "main.tf.json").read_bytes() == b'{"a": 1}'
    assert (out / ".terraform" / "modules" / "modules.json").read_text() == "{}"
    assert not [p for p in tmp_path.iterdir() if p.name != "out"]  # no temporary tree left


def test_a_lock_file_from_the_source_wins_over_terraforms(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_tree(out, {MANIFEST_NAME: _manifest(), "main.tf.json": b"{}"})
    _terraform_wrote(out)
    write_tree(out, {MANIFEST_NAME: _manifest(), ".terraform.lock.hcl": b"# source"})
    assert (out / ".terraform.lock.hcl").read_bytes() == b"# source"
    assert (out / "terraform.tfstate").read_text() == "terraform.tfstate"


def test_only_the_root_module_directory_is_terraforms(tmp_path: Path) -> None:
    # A module outside the root puts the root module in OUT/live (the manifest's "root"):
    # Terraform runs there, so only there are its entries kept.
    out = tmp_path / "out"
    tree = {MANIFEST_NAME: _manifest("live"), "live/main.tf.json": b"{}", "shared/main.tf.json": b"{}"}
    write_tree(out, tree)
    _terraform_wrote(out / "live")
    (out / "terraform.tfstate").write_text("not in the root module's directory")
    (out / "shared" / "terraform.tfstate").write_text("nor here")
    write_tree(out, tree)
    assert sorted(os.listdir(out / "live")) == sorted([*KEPT, "main.tf.json"])
    assert not (out / "terraform.tfstate").exists()
    assert os.listdir(out / "shared") == ["main.tf.json"]
    assert stale_files(out, tree, root_place="live") == []


def test_check_counts_the_builds_files_only(tmp_path: Path) -> None:
    out = tmp_path / "out"
    tree = {MANIFEST_NAME: _manifest(), "main.tf.json": b"{}"}
    write_tree(out, tree)
    _terraform_wrote(out)
    assert stale_files(out, tree) == []
    (out / "notes.zip").write_bytes(_zip("notes.txt"))
    # A manifest without "files" (an older build): an extra file is one it no longer writes.
    assert stale_files(out, tree) == [StaleFile("notes.zip", Staleness.EXTRA, Cause.REMOVED)]
    # A lock file the build copies from the source is the build's: compared.
    assert stale_files(out, {**tree, ".terraform.lock.hcl": b"# source"}) == [
        StaleFile(".terraform.lock.hcl", Staleness.CHANGED),
        StaleFile("notes.zip", Staleness.EXTRA, Cause.REMOVED),
    ]


def test_terraform_entries_are_named_by_terraform_or_by_plan_content(tmp_path: Path) -> None:
    _terraform_wrote(tmp_path)
    (tmp_path / "plan.tfplan").write_bytes(b"PK\x03\x04 truncated")  # not a readable zip: not a plan
    (tmp_path / "terraform.tfvars").write_text("x = 1")
    assert terraform_entries(tmp_path) == KEPT
    assert ".terraform.lock.hcl" not in terraform_entries(tmp_path, {".terraform.lock.hcl"})


def test_a_terraform_holding_the_state_open_writes_on_into_the_new_tree(tmp_path: Path) -> None:
    # Terraform's local state manager keeps the state file open (and fcntl-locked) through an
    # operation and truncates and rewrites it in place: the rebuilt tree must hold that file.
    import fcntl

    out = tmp_path / "out"
    write_tree(out, {MANIFEST_NAME: _manifest(), "main.tf.json": b"{}"})
    with open(out / "terraform.tfstate", "w+b") as state:
        fcntl.lockf(state, fcntl.LOCK_EX)
        (out / ".terraform.tfstate.lock.info").write_text('{"ID": "x"}')
        write_tree(out, {MANIFEST_NAME: _manifest(), "main.tf.json": b'{"a": 1}'})
        state.write(b'{"serial": 2}')
        state.flush()
    assert (out / "terraform.tfstate").read_bytes() == b'{"serial": 2}'
    assert (out / ".terraform.tfstate.lock.info").read_text() == '{"ID": "x"}'


def test_what_terraform_writes_during_the_swap_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    write_tree(out, {MANIFEST_NAME: _manifest(), "main.tf.json": b"{}"})
    exchange = output._exchange

    def late(*args: Any) -> bool:  # an apply failing to save its state, just before the swap
        (out / "errored.tfstate").write_text("late")
        return exchange(*args)

    monkeypatch.setattr(output, "_exchange", late)
    write_tree(out, {MANIFEST_NAME: _manifest(), "main.tf.json": b'{"a": 1}'})
    assert (out / "errored.tfstate").read_text() == "late"


def test_a_failed_swap_gives_terraforms_entries_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    write_tree(out, {MANIFEST_NAME: _manifest(), "main.tf.json": b"{}"})
    _terraform_wrote(out)
    before = _inodes(out)

    def full(*_: object) -> str | None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(output, "_exchange", lambda *_: False)
    monkeypatch.setattr(output, "_swap_by_renames", full)
    with pytest.raises(OSError):
        write_tree(out, {MANIFEST_NAME: _manifest(), "main.tf.json": b'{"a": 1}'})
    assert _inodes(out) == before
    assert (out / "main.tf.json").read_bytes() == b"{}"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
