"""``flatten build --exclude`` and ``.terraformignore`` through the flatten program: a rebuild with
other exclusions, or after an edit to ``.terraformignore``, a test file, or a module's reads of
``path.module`` files, never replays (or incrementally reuses) an output that no longer fits."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.cli import age_tree, run_cli
from support.files import write_tree


def _tree(root: Path) -> Path:
    write_tree(
        root,
        {
            "main.tf": 'module "a" {\n  source = "./modules/a"\n}\n',
            "modules/a/main.tf": 'output "v" {\n  value = 1\n}\n\n'
            'locals {\n  p = "${path.module}/notes.txt"\n}\n',
            "modules/a/notes.txt": "notes",
            "modules/a/snap.tfstate": "{}",
            "id_rsa": "key",
            "tests/a.tftest.hcl": 'run "a" {\n  command = plan\n}\n',
        },
    )
    age_tree(root)
    return root


def test_exclude_is_part_of_the_build_request(tmp_path: Path) -> None:
    root = _tree(tmp_path / "src")
    out = tmp_path / "out"
    calls: list[int] = []
    argv = ["build", str(root), "--out", str(out)]
    assert run_cli([*argv, "--exclude", "notes.txt", "--exclude", "/id_rsa"], calls) == 0
    assert not (out / "modules/a/notes.txt").exists() and not (out / "id_rsa").exists()
    assert (out / "tests/a.tftest.hcl").read_text() == (root / "tests/a.tftest.hcl").read_text()
    assert run_cli(argv, calls) == 0
    assert calls == [1, 1]  # other exclusions: built again, not replayed
    assert (out / "modules/a/notes.txt").exists() and (out / "id_rsa").exists()


@pytest.mark.parametrize("change", [".terraformignore", "test file", "path.module read"])
def test_an_edit_that_changes_the_copies_builds_again(tmp_path: Path, change: str) -> None:
    root = _tree(tmp_path / "src")
    out = tmp_path / "out"
    calls: list[int] = []
    argv = ["build", str(root), "--out", str(out)]
    for _ in range(2):
        assert run_cli(argv, calls) == 0
    assert calls == [1]  # replayed
    if change == ".terraformignore":
        (root / ".terraformignore").write_text("id_rsa\n")
    elif change == "test file":
        (root / "tests/a.tftest.hcl").write_text('run "b" {\n  command = plan\n}\n')
    else:
        # Only a local's value changes: the module reads the same from outside but for the file
        # it names, which the incremental rebuild must see (stages/reads.py).
        main = root / "modules/a/main.tf"
        main.write_text(main.read_text().replace("notes.txt", "snap.tfstate"))
    age_tree(root)
    assert run_cli(argv, calls) == 0
    assert calls == [1, 1]
    if change == ".terraformignore":
        assert not (out / "id_rsa").exists()
    elif change == "test file":
        assert (out / "tests/a.tftest.hcl").read_text().startswith('run "b"')
    else:
        assert (out / "modules/a/snap.tfstate").read_text() == "{}"
