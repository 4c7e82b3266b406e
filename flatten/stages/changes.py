"""How two outputs of one root differ: which files, and which blocks (``flatten affected``).

A root is affected by a change exactly when its canonical output changes (docs/monorepo.md,
"Which roots does this change affect?"): the output is a function of everything Terraform loads
(every module's merged configuration, the files beside the modules that ``file`` and
``templatefile`` may read, the root's ``.tfvars`` files, the vendored remote packages), and two
configurations with the same output load the same in Terraform. So the comparison here is of
bytes; the blocks are only the explanation: each output ``main.tf.json`` is read as JSON (the
emitter's own form, stages/emit.py) and its top-level blocks compared one by one, named as
Terraform names them in a plan (``terraform_data.a``, ``data.http.x``, ``var.region``,
``output.id``, ``provider.aws.west``, ``module.net``, ``local.name``), prefixed by the module
calls that use the output directory (from the manifest: several calls may share one directory).

Pure: the shell (flatten/shell/affected.py) hands in the two trees as :class:`Snapshot`.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from flatten.lang.diagnostics import Diagnostics
from flatten.stages.output import MANIFEST_NAME

__all__ = [
    "BlockChange",
    "Cause",
    "FileChange",
    "Snapshot",
    "TreeChange",
    "Verdict",
    "compare",
    "module_outputs",
    "normalized",
    "package_changes",
    "with_blocks",
]

_CONFIG = "main.tf.json"
_REMOTE = "modules/_remote/"
#: Top-level block types labelled twice (type and name), and how a plan names each.
_TWO_LABELS = MappingProxyType({"resource": "", "data": "data.", "ephemeral": "ephemeral."})
#: Top-level block types labelled once, and how Terraform's addresses spell their prefix.
_ONE_LABEL = MappingProxyType(
    {
        "variable": "var.",
        "output": "output.",
        "module": "module.",
        "check": "check.",
        "locals": "local.",
    }
)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One root's output: generated files' bytes and copied files' digests, by relative path."""

    generated: Mapping[str, bytes] = field(default_factory=lambda: MappingProxyType({}))
    copied: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def paths(self) -> set[str]:
        return {*self.generated, *self.copied}

    def token(self, rel: str) -> str | None:
        """What decides whether ``rel`` is the same file in another snapshot: its SHA-256."""
        if rel in self.generated:
            return hashlib.sha256(self.generated[rel]).hexdigest()
        return self.copied.get(rel)


def _remote_names(manifest: bytes | None) -> dict[str, str]:
    """Return, for each vendored package directory (``modules/_remote/acme-m-aws-1.0.0``), a name
    that does not hold its version: the module calls it serves (``modules/_remote/@module.m``)."""
    try:
        doc = json.loads(manifest) if manifest is not None else None
    except (ValueError, RecursionError):
        doc = None
    modules = doc.get("modules") if isinstance(doc, dict) else None
    users: dict[str, list[str]] = {}
    for entry in modules if isinstance(modules, list) else ():
        if not isinstance(entry, dict) or not isinstance(entry.get("package"), dict):
            continue
        out, address = entry.get("output"), entry.get("module")
        at = out.find(_REMOTE) if isinstance(out, str) else -1
        if isinstance(out, str) and isinstance(address, str) and at >= 0 and (at == 0 or out[at - 1] == "/"):
            start = at + len(_REMOTE)
            top = out[:start] + out[start:].split("/", 1)[0]
            users.setdefault(top, []).append(address)
    return {top: top.rsplit("/", 1)[0] + "/@" + ",".join(sorted(calls)) for top, calls in users.items()}


def normalized(snapshot: Snapshot) -> Snapshot:
    """Return ``snapshot`` with each vendored package directory named by the calls it serves.

    The output names a package's directory by its address and version
    (flatten/stages/layout.py), but Terraform names an installed module by its call
    (``.terraform/modules/<key>``): a new version with the same files changes nothing Terraform
    loads, so the comparison must not see the directory's name change either.
    """
    names = _remote_names(snapshot.generated.get(MANIFEST_NAME))
    if not names:
        return snapshot
    order = sorted(names, key=len, reverse=True)

    def rename(rel: str) -> str:
        for old in order:
            if rel == old or rel.startswith(old + "/"):
                return names[old] + rel[len(old) :]
        return rel

    def rewrite(data: bytes) -> bytes:
        # Module files name a package by a path relative to themselves ("./modules/_remote/x",
        # "../_remote/x"): its tail from "_remote/" is what every spelling shares.
        for old in order:
            tail, new = (
                old[old.rindex("_remote/") :].encode(),
                names[old][names[old].rindex("_remote/") :].encode(),
            )
            data = data.replace(tail + b"/", new + b"/").replace(tail + b'"', new + b'"')
        return data

    generated = {rename(rel): rewrite(data) for rel, data in snapshot.generated.items()}
    copied = {rename(rel): digest for rel, digest in snapshot.copied.items()}
    return Snapshot(generated, copied)


@dataclass(frozen=True, slots=True)
class FileChange:
    path: str  # relative to the output (POSIX)
    how: str  # "added", "removed", "changed"


@dataclass(frozen=True, slots=True)
class BlockChange:
    """One top-level block that differs: its address as a plan names it, per module call."""

    address: str  # "module.net.terraform_data.a" (the first call using the file), "var.x" in the root
    kind: str  # "resource", "data", "variable", "output", "provider", "module", "locals", "terraform", ...
    how: str  # "added", "removed", "changed"
    file: str  # the output file holding it
    calls: tuple[str, ...] = ()  # every module call written to that file ("" for the root)


@dataclass(frozen=True, slots=True)
class TreeChange:
    files: tuple[FileChange, ...] = ()
    blocks: tuple[BlockChange, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.files)


def module_outputs(manifest: bytes | None) -> dict[str, tuple[str, ...]]:
    """Return, by output file (``modules/net/main.tf.json``), the module calls written to it
    (``""`` for the root module), from a manifest's ``modules`` list; ``{}`` when unreadable."""
    try:
        doc = json.loads(manifest) if manifest is not None else None
    except (ValueError, RecursionError):
        doc = None
    modules = doc.get("modules") if isinstance(doc, dict) else None
    found: dict[str, list[str]] = {}
    for entry in modules if isinstance(modules, list) else ():
        if not isinstance(entry, dict):
            continue
        out, address = entry.get("output"), entry.get("module")
        if isinstance(out, str) and isinstance(address, str):
            target = _CONFIG if out in ("", ".") else posixpath.join(out, _CONFIG)
            found.setdefault(target, []).append(address)
    return {k: tuple(v) for k, v in found.items()}


def compare(old: Snapshot, new: Snapshot) -> TreeChange:
    """Return how ``new`` differs from ``old``: the files (the manifest left out: Terraform never
    reads it, and it names constraints and digests, not configuration), then the blocks of each
    changed module file (sorted by file, then address)."""
    old, new = normalized(old), normalized(new)
    files = []
    for rel in sorted((old.paths() | new.paths()) - {MANIFEST_NAME}):
        if rel not in old.paths():
            files.append(FileChange(rel, "added"))
        elif rel not in new.paths():
            files.append(FileChange(rel, "removed"))
        elif old.token(rel) != new.token(rel):
            files.append(FileChange(rel, "changed"))
    return with_blocks(files, old.generated, new.generated)


def with_blocks(
    files: Sequence[FileChange], old: Mapping[str, bytes], new: Mapping[str, bytes]
) -> TreeChange:
    """Return ``files`` with the top-level blocks that differ in each module file among them
    (``old``, ``new``: the generated files of each side, manifest included, by relative path)."""
    calls = {**module_outputs(old.get(MANIFEST_NAME)), **module_outputs(new.get(MANIFEST_NAME))}
    blocks: list[BlockChange] = []
    for change in files:
        if posixpath.basename(change.path) != _CONFIG:
            continue
        before = _blocks(old.get(change.path))
        after = _blocks(new.get(change.path))
        users = calls.get(change.path, ())
        prefix = users[0] + "." if users and users[0] else ""
        for key in sorted(before.keys() | after.keys()):
            kind, name = key
            if key not in before:
                how = "added"
            elif key not in after:
                how = "removed"
            elif before[key] != after[key]:
                how = "changed"
            else:
                continue
            blocks.append(BlockChange(prefix + name, kind, how, change.path, users))
    return TreeChange(tuple(files), tuple(blocks))


def package_changes(old: bytes | None, new: bytes | None) -> tuple[str, ...]:
    """Return one line per remote module call whose package differs between two manifests
    (``module.vpc: registry.example/ns/vpc/aws 1.0.0 -> 1.1.0``), sorted by call."""
    before, after = _packages(old), _packages(new)
    lines = []
    for address in sorted(before.keys() | after.keys()):
        a, b = before.get(address), after.get(address)
        if a != b:
            name = (b or a or ("", ""))[0]
            was = a[1] if a is not None else "none"
            now = b[1] if b is not None else "none"
            lines.append(f"{address}: {name} {was} -> {now}")
    return tuple(lines)


def _packages(manifest: bytes | None) -> dict[str, tuple[str, str]]:
    try:
        doc = json.loads(manifest) if manifest is not None else None
    except (ValueError, RecursionError):
        doc = None
    modules = doc.get("modules") if isinstance(doc, dict) else None
    found = {}
    for entry in modules if isinstance(modules, list) else ():
        pkg = entry.get("package") if isinstance(entry, dict) else None
        if isinstance(pkg, dict) and isinstance(entry.get("module"), str):
            which = pkg.get("version") or pkg.get("commit") or pkg.get("digest") or ""
            found[entry["module"]] = (str(pkg.get("address", "")), str(which))
    return found


def _blocks(data: bytes | None) -> dict[tuple[str, str], str]:
    """Return each top-level block of an output module file, canonically dumped, by (kind, address)."""
    if data is None:
        return {}
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        return {("file", ""): data.decode("utf-8", "replace")}
    if not isinstance(doc, dict):
        return {("file", ""): json.dumps(doc, sort_keys=True)}
    return dict(_entries(doc))


def _entries(doc: Mapping[str, object]) -> Iterator[tuple[tuple[str, str], str]]:
    for kind, value in doc.items():
        if kind in _TWO_LABELS and isinstance(value, dict):
            for rtype, named in value.items():
                for name, body in named.items() if isinstance(named, dict) else ():
                    yield (kind, f"{_TWO_LABELS[kind]}{rtype}.{name}"), _dump(body)
        elif kind == "provider" and isinstance(value, dict):
            for name, configs in value.items():
                for config in configs if isinstance(configs, list) else [configs]:
                    alias = config.get("alias") if isinstance(config, dict) else None
                    shown = f"provider.{name}" + (f".{alias}" if isinstance(alias, str) else "")
                    yield (kind, shown), _dump(config)
        elif kind in _ONE_LABEL:
            # ``locals`` may be one object or a list of them (one per block): each local apart.
            items = value if isinstance(value, list) else [value]
            for item in items:
                for name, body in item.items() if isinstance(item, dict) else ():
                    yield (kind, f"{_ONE_LABEL[kind]}{name}"), _dump(body)
        else:  # terraform, moved, import, removed, ...: the whole kind as one block
            yield (kind, kind), _dump(value)


def _dump(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class Cause:
    """A changed file a root reads, and the module call path through which it reads it:
    ``("live/prod", "module.net (modules/net)")`` for ``modules/net/nat.tftpl``."""

    file: str
    chain: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Verdict:
    """What ``flatten affected`` says of one root.

    ``status``: "affected" (its output changed, or it failed to build on a side), "added",
    "removed", "undecided" (``--offline``: a remote module it calls is not installed) or
    "unaffected". ``reason`` says why in a few words; ``failed`` names the side that did not build.
    """

    root: str
    status: str
    reason: str
    causes: tuple[Cause, ...] = ()
    change: TreeChange = TreeChange()
    packages: tuple[str, ...] = ()
    failed: str = ""
    diagnostics: Diagnostics = field(default_factory=Diagnostics)
    reads: tuple[str, ...] = ()  # every file the root reads, relative to the root (atlantis)

    @property
    def planned(self) -> bool:
        """Whether CI must plan it: its output changed, it is new, it failed, or it is undecided."""
        return self.status in ("affected", "added", "undecided")
