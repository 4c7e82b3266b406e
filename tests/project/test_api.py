"""The library API (``flatten/__init__.py``) and what the ``flatten`` program loads at start-up."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from support.files import write_tree

import flatten

OLD = 1_000_000_000  # an mtime (2001) safely older than any build: the build may be recorded


def test_the_public_names_build_a_configuration_even_after_the_pipeline_module_loads(
    tmp_path: Path,
) -> None:
    import flatten.build  # the submodule of the same name must not hide the function

    root = write_tree(tmp_path / "src", {"main.tf": 'variable "v" {\n  default = 1\n}\n'})
    result, diags = flatten.build(root, options=flatten.Options(dialect=flatten.Dialect.OPENTOFU))
    assert isinstance(result, flatten.BuildResult) and isinstance(diags, flatten.Diagnostics)
    assert not diags.has_errors and b'"default": 1' in result.files["main.tf.json"]
    broken = write_tree(tmp_path / "bad", {"main.tf": "variable {\n"})
    result, diags = flatten.build(broken, options=flatten.Options())
    # Both errors terraform validate gives on this file (HCL's recovery keeps the block).
    assert [e.summary for e in diags.errors] == ["Unclosed configuration block", "Missing name for variable"]
    assert all(isinstance(e, flatten.Diagnostic) and e.range is not None for e in diags.errors)
    assert result.files == {}
    assert set(flatten.__all__) == {
        "build",
        "BuildResult",
        "Options",
        "Dialect",
        "Diagnostic",
        "Diagnostics",
        "__version__",
    }
    assert all(getattr(flatten, name) is not None for name in flatten.__all__)


def _imports(args: list[str], tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run ``python -m flatten ARGS``; return it and the flatten modules it imported."""
    env = {**os.environ, "FLATTEN_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "flatten", *args], capture_output=True, text=True, env=env
    )
    found = {
        line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")
    }
    return proc, {name for name in found if name.startswith("flatten")}


def test_version_and_a_replayed_build_never_load_the_pipeline(tmp_path: Path) -> None:
    proc, loaded = _imports(["--version"], tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith(f"flatten {flatten.__version__} (")
    assert "flatten.build" not in loaded and "flatten.lang.model" not in loaded, sorted(loaded)
    root = write_tree(tmp_path / "src", {"main.tf": 'module "m" {\n  source = "./m"\n}\n', "m/main.tf": ""})
    for current, _, names in os.walk(root):
        for name in [*names, "."]:
            os.utime(os.path.join(current, name), ns=(OLD, OLD))
    argv = ["build", str(root), "--out", str(tmp_path / "out")]
    first, loaded = _imports(argv, tmp_path)
    assert first.returncode == 0 and "flatten.build" in loaded  # built and recorded
    again, loaded = _imports(argv, tmp_path)
    assert again.returncode == 0 and "flatten: wrote 3 files to" in again.stderr
    assert "flatten.build" not in loaded and "flatten.lang.model" not in loaded, sorted(loaded)  # replayed
    # The same build into a new --out: the recorded output is written there, the pipeline unloaded.
    elsewhere, loaded = _imports(["build", str(root), "--out", str(tmp_path / "new")], tmp_path)
    assert elsewhere.returncode == 0 and f"flatten: wrote 3 files to {tmp_path / 'new'}" in elsewhere.stderr
    assert "flatten.build" not in loaded and "flatten.lang.model" not in loaded, sorted(loaded)
    assert sorted(p.name for p in (tmp_path / "new").rglob("*")) == sorted(
        p.name for p in (tmp_path / "out").rglob("*")
    )


def test_build_takes_a_str_or_path_like_and_default_options(tmp_path: Path, monkeypatch) -> None:
    root = write_tree(tmp_path / "src", {"main.tf": 'resource "terraform_data" "a" {}\n'})
    monkeypatch.chdir(tmp_path)
    by_path, _ = flatten.build(root, options=flatten.Options())
    for given in ("src", str(root), os.fsencode(root).decode()):
        result, diags = flatten.build(given)
        assert not diags and result.files == by_path.files

    class Where:  # any os.PathLike, not only pathlib's
        def __fspath__(self) -> str:
            return "src"

    assert flatten.build(Where())[0].files == by_path.files


def test_dir_lists_only_the_public_api() -> None:
    assert dir(flatten) == sorted(flatten.__all__)
    assert not {"sys", "importlib", "types", "TYPE_CHECKING"} & set(dir(flatten))


def _python_blocks(markdown: str) -> list[str]:
    blocks, inside, lines = [], False, []
    for line in markdown.splitlines():
        if not inside and line.strip() == "```python":
            inside, lines = True, []
        elif inside and line.strip() == "```":
            inside = False
            blocks.append("\n".join(lines) + "\n")
        elif inside:
            lines.append(line)
    return blocks


def test_the_examples_of_docs_api_run(tmp_path: Path, monkeypatch, capsys) -> None:
    """Each ```python block of docs/api.md runs as written, in a directory holding infra/live."""
    text = (Path(__file__).parents[2] / "docs" / "api.md").read_text(encoding="utf-8")
    blocks = _python_blocks(text)
    assert len(blocks) >= 2
    write_tree(tmp_path / "infra" / "live", {"main.tf": 'resource "terraform_data" "a" {\n  input = 1\n}\n'})
    monkeypatch.chdir(tmp_path)
    for block in blocks:
        exec(compile(block, "docs/api.md", "exec"), {"__name__": "__docs__"})
    printed = capsys.readouterr().out
    assert "['flatten.manifest.json', 'main.tf.json']" in printed
    assert (tmp_path / "infra" / "flat" / "main.tf.json").is_file()
