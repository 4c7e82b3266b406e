"""Which files of a module directory are configuration, in which order (spec §1).

Only the directory's direct entries count. Names are matched by suffix; hidden files, editor
backups and Emacs autosaves are ignored; entries are ordered byte-wise by name; primary files
come before override files. OpenTofu also reads ``.tofu``/``.tofu.json`` and lets ``X.tofu``
shadow ``X.tf`` (and ``X.tofu.json`` shadow ``X.tf.json``) within the primary list and within the
override list separately. Terraform ignores ``.tofu`` files altogether.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from flatten import gate
from flatten.lang.dialect import Dialect

__all__ = ["ConfigFile", "DirectoryListing", "is_override_name", "list_config_files", "split_extension"]

# The suffixes, and which hides which, are the dialect's (flatten/lang/dialect.py).


@dataclass(frozen=True, slots=True)
class ConfigFile:
    """One configuration file of a module directory."""

    name: str  # the entry name in the directory
    path: Path
    syntax: str  # "native" or "json"
    is_override: bool


@dataclass(frozen=True, slots=True)
class DirectoryListing:
    """The configuration files of a directory: primary files first, then overrides."""

    primary: tuple[ConfigFile, ...]
    override: tuple[ConfigFile, ...]

    @property
    def files(self) -> tuple[ConfigFile, ...]:
        return self.primary + self.override


def is_ignored_name(name: str) -> bool:
    """Return True for hidden files, vim backups and Emacs autosave files."""
    return name.startswith(".") or name.endswith("~") or (name.startswith("#") and name.endswith("#"))


def split_extension(name: str, dialect: Dialect) -> tuple[str, str] | None:
    """Return ``(base, suffix)`` for a configuration file name, or None for any other file.

    >>> split_extension("main.tf.json", Dialect.TERRAFORM)
    ('main', '.tf.json')
    """
    values = dialect.values
    for suffix in values.test_suffixes:
        if name.endswith(suffix):
            return None
    # No configuration suffix ends another (tests/test_dialect.py), so their order does not matter.
    for suffix in values.config_suffixes:
        if name.endswith(suffix):
            return name[: -len(suffix)], suffix
    return None


def is_override_name(base: str) -> bool:
    """Return True when a file's base name (extension stripped) marks an override file."""
    return base == "override" or base.endswith("_override")


def _shadow(files: list[ConfigFile], dialect: Dialect) -> list[ConfigFile]:
    shadows = dialect.values.shadows  # (hiding suffix, hidden suffix): X.tofu hides X.tf
    if not shadows:
        return files
    names = {f.name for f in files}
    kept = []
    for f in files:
        split = split_extension(f.name, dialect)
        assert split is not None
        base, suffix = split
        shadowed = any(plain == suffix and base + tofu in names for tofu, plain in shadows)
        if not shadowed:
            kept.append(f)
    return kept


def list_config_files(directory: Path, *, dialect: Dialect) -> DirectoryListing:
    """Return the configuration files of ``directory`` in the order the engine loads them.

    Raises ``OSError`` when the directory cannot be read; the caller turns that into the
    "Failed to read module directory" diagnostic.
    """
    primary: list[ConfigFile] = []
    override: list[ConfigFile] = []
    # Byte-wise order, as Go's sort of file names (not locale order).
    listed = gate.list_dir(directory)  # byte-wise order already
    kinds = {e.name: e.kind for e in listed}
    for name in kinds:
        if is_ignored_name(name):
            continue
        split = split_extension(name, dialect)
        if split is None:
            continue
        path = directory / name
        # Not followed: a symlink to a file is read through the link (under the gate's rule), a
        # real directory is skipped.
        if kinds[name] == "dir":
            continue
        base, suffix = split
        entry = ConfigFile(
            name=name,
            path=path,
            syntax="json" if suffix.endswith(".json") else "native",
            is_override=is_override_name(base),
        )
        (override if entry.is_override else primary).append(entry)
    return DirectoryListing(tuple(_shadow(primary, dialect)), tuple(_shadow(override, dialect)))
