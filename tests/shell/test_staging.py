"""The output written while the graph checks finish (flatten/shell/staging.py, issue 41).

The build hands its laid-out tree to the memo before it waits for the graph checks
(``Memo.laid_out``); the command line's memo writes it beside --out then. The tree may only ever
be early, never different: swapped in only when the build ends without errors, with the very
tree the build returned; otherwise removed, --out as it was and nothing left beside it.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from support.files import write_tree as write_files
from typer.testing import CliRunner

from flatten.build import build
from flatten.cli import app
from flatten.lang.options import Options
from flatten.shell.memo import DiskMemo
from flatten.shell.staging import Staging
from flatten.stages.graph import ModuleGraph
from flatten.stages.layout import OutputTree
from flatten.stages.output import OutputError, stage_tree, write_tree

# More modules than a forked helper takes the graph checks for (flatten/shell/memo.py
# ``_LATER_MODULES``): the checks run beside the layout, as in the benchmark's trees.
_MODULES = 20
_UNDECLARED = "Reference to undeclared input variable"


def _root(tmp_path: Path, *, broken: bool = False) -> Path:
    calls = (f'module "m{i}" {{\n  source = "./modules/m{i}"\n  x = {i}\n}}\n' for i in range(_MODULES))
    files = {"main.tf": "".join(calls)}
    for i in range(_MODULES):
        value = "var.missing" if broken and i == _MODULES - 1 else "var.x"
        files[f"modules/m{i}/main.tf"] = (
            f'variable "x" {{\n  type = number\n}}\nresource "terraform_data" "r" {{\n  input = {value}\n}}\n'
        )
    return write_files(tmp_path / "src", files)


def _listing(top: Path) -> dict[str, bytes]:
    return {p.relative_to(top).as_posix(): p.read_bytes() for p in sorted(top.rglob("*")) if p.is_file()}


def _beside(out: Path) -> list[str]:
    """flatten's temporary trees beside ``out`` (``.OUT.flatten-*``)."""
    if not out.parent.is_dir():
        return []
    return sorted(p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.flatten-"))


def _staging(out: Path, seen: list[ModuleGraph] | None = None) -> Staging:
    def allowed(graph: ModuleGraph) -> bool:
        if seen is not None:
            seen.append(graph)
        return True

    return Staging(out, allowed=allowed)


def test_a_tree_staged_while_the_checks_run_is_removed_when_they_find_an_error(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result, diags = build(_root(tmp_path))
    assert not diags.has_errors
    write_tree(out, result.tree.files, result.tree.copies)
    before = _listing(out)
    broken = _root(tmp_path, broken=True)
    staging = _staging(out)
    result, diags = build(broken, options=Options(), memo=DiskMemo(staging=staging))
    assert [d.summary for d in diags.errors] == [_UNDECLARED]
    assert len(_beside(out)) == 1, "the layout's tree was written while the checks ran"
    staging.discard()
    assert _beside(out) == []
    assert _listing(out) == before


def test_a_staged_tree_committed_is_what_write_tree_writes(tmp_path: Path) -> None:
    root = _root(tmp_path)
    staged_out, written_out = tmp_path / "staged", tmp_path / "written"
    seen: list[ModuleGraph] = []
    staging = _staging(staged_out, seen)
    result, diags = build(root, options=Options(), memo=DiskMemo(staging=staging))
    assert not diags.has_errors
    assert seen == [result.graph], "the build's graph decides whether it may be written"
    assert not staged_out.exists() and len(_beside(staged_out)) == 1
    assert staging.commit(result.tree)
    assert _beside(staged_out) == []
    write_tree(written_out, result.tree.files, result.tree.copies)
    assert _listing(staged_out) == _listing(written_out)
    assert not staging.commit(result.tree), "a tree is swapped in once"


def test_a_staged_tree_is_never_swapped_in_for_another(tmp_path: Path) -> None:
    out = tmp_path / "out"
    staging = _staging(out)
    result, diags = build(_root(tmp_path), options=Options(), memo=DiskMemo(staging=staging))
    assert not diags.has_errors and len(_beside(out)) == 1
    other = OutputTree(files=dict(result.tree.files), copies=dict(result.tree.copies))
    assert not staging.commit(other)
    assert _beside(out) == [] and not out.exists()


@pytest.mark.parametrize("why", ["refused", "not flatten's"])
def test_nothing_is_staged_where_the_write_would_not_be_made(why: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    if why == "not flatten's":
        write_files(out, {"notes.txt": "mine\n"})
    staging = Staging(out, allowed=lambda graph: why != "refused")
    result, diags = build(_root(tmp_path), options=Options(), memo=DiskMemo(staging=staging))
    assert not diags.has_errors
    assert _beside(out) == []
    assert not staging.commit(result.tree)
    if why == "not flatten's":  # the write after the build reports it, as without staging
        with pytest.raises(OutputError, match="holds no"):
            write_tree(out, result.tree.files, result.tree.copies)
        assert _listing(out) == {"notes.txt": b"mine\n"}
    else:
        assert not out.exists()


@pytest.mark.parametrize("meanwhile", [False, True])
def test_the_directories_staging_made_above_out_go_with_a_discarded_tree(
    meanwhile: bool, tmp_path: Path
) -> None:
    # write_tree makes --out's missing parents; a build that fails leaves none of them behind,
    # unless something was put in one meanwhile (then it and those above it stay).
    out = tmp_path / "a" / "b" / "out"
    staging = _staging(out)
    result, diags = build(_root(tmp_path, broken=True), options=Options(), memo=DiskMemo(staging=staging))
    assert diags.has_errors and len(_beside(out)) == 1
    if meanwhile:
        (tmp_path / "a" / "notes.txt").write_text("mine\n")
    staging.discard()
    if meanwhile:
        assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["notes.txt"]
    else:
        assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]
    # A tree swapped in keeps them: they hold the output.
    staging = _staging(out)
    result, diags = build(_root(tmp_path), options=Options(), memo=DiskMemo(staging=staging))
    assert not diags.has_errors and staging.commit(result.tree)
    assert (out / "flatten.manifest.json").is_file()


def test_ctrl_c_while_a_tree_is_staged_leaves_the_output_as_it_was(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result, _ = build(_root(tmp_path))
    write_tree(out, result.tree.files, result.tree.copies)
    before = _listing(out)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    files = {**result.tree.files, "b.tf.json": b"{}\n"}
    with pytest.raises(KeyboardInterrupt), stage_tree(out, files, result.tree.copies):
        assert len(_beside(out)) == 1
        # Signals are delivered while the tree waits (the build's checks run meanwhile).
        assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])
        raise KeyboardInterrupt
    assert _beside(out) == [] and _listing(out) == before
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == mask


def test_a_build_whose_checks_fail_leaves_out_and_its_parent_as_they_were(tmp_path: Path) -> None:
    # The command line: the previous output stays, and nothing of the staged tree is left; into
    # a new --out below missing directories, none of them.
    root, out = _root(tmp_path), tmp_path / "out"
    assert CliRunner().invoke(app, ["build", str(root), "--out", str(out)]).exit_code == 0
    before = _listing(out)
    root = _root(tmp_path, broken=True)
    result = CliRunner().invoke(app, ["build", str(root), "--out", str(out)])
    assert result.exit_code == 1 and _UNDECLARED in result.output
    assert _listing(out) == before
    result = CliRunner().invoke(app, ["build", str(root), "--out", str(tmp_path / "new" / "dir" / "out")])
    assert result.exit_code == 1 and _UNDECLARED in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "src"]
