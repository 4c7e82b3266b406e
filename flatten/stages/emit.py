"""Canonical Terraform JSON: one function owns the bytes, and the output tree is swapped in atomically.

Same input, same bytes (style.md §10): keys are sorted wherever their order has no meaning
(block types, labels, argument names, object keys), and kept in source order where it does
(repeated nested blocks, provisioners, ``moved``/``import``/``removed`` lists). Labelled nested
blocks use the array-of-objects form so their relative order survives (spec §7.5). Numbers are
written exactly (spec §7.1). Emitting a module and loading the result gives the same module,
so building the output again reproduces it byte for byte.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import glob
import json
import os
import shutil
import signal
import stat
import tempfile
import threading
from collections.abc import Iterator, Mapping
from decimal import Context, Decimal
from pathlib import Path

from flatten.lang.attributes_as_blocks import attribute_blocks
from flatten.lang.blocks import Emit, emit_form
from flatten.lang.model import Attribute, Block, Body, JsonValue, Module, Range
from flatten.syntax.references import ExpressionError, template_references

__all__ = ["MANIFEST_NAME", "OutputError", "body_json", "dumps", "module_json", "write_tree"]

MANIFEST_NAME = "flatten.manifest.json"


class OutputError(Exception):
    """The output directory cannot be written or replaced (a usage problem, not configuration)."""


def _number(value: int | Decimal) -> str:
    if isinstance(value, int):
        return str(value)
    if not value.is_finite():
        raise ValueError(f"not a JSON number: {value}")
    # normalize() rounds to the context precision; give it room for every digit.
    if value.is_zero():
        # Terraform keeps the sign of zero: -0.0 converts to the string "-0" (checked with 1.11).
        return "-0" if value.is_signed() else "0"
    exact = value.normalize(Context(prec=max(28, len(value.as_tuple().digits))))
    if abs(exact.adjusted()) < 64:
        text = format(exact, "f")
        return text.split(".")[0] if exact == exact.to_integral_value() else text
    return str(exact).replace("E", "e")


def _string(value: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: keep them representable
        return json.dumps(value, ensure_ascii=True)
    return json.dumps(value, ensure_ascii=False)


def _sorted_keys(obj: Mapping[str, JsonValue]) -> list[str]:
    keys = list(obj)
    # Template keys could collide once evaluated; their order then decides the winner, so keep it.
    if any("${" in k or "%{" in k for k in keys):
        return keys
    return sorted(keys)


# Pieces of text are joined every so many (``_write``'s ``done``): a list of millions of small
# strings took three to five times the memory of the text they make (docs/reliability.md, "Memory").
_JOIN_EVERY = 16384


def _write(value: JsonValue, out: list[str], indent: int, sort: bool, done: list[str] | None = None) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, (int, Decimal)):
        out.append(_number(value))
    elif isinstance(value, str):
        out.append(_string(value))
    elif isinstance(value, list):
        if not value:
            out.append("[]")
            return
        pad = "  " * (indent + 1)
        out.append("[\n")
        for i, item in enumerate(value):
            out.append(pad)
            _write(item, out, indent + 1, sort, done)
            out.append(",\n" if i < len(value) - 1 else "\n")
            if done is not None and len(out) > _JOIN_EVERY:
                done.append("".join(out))
                out.clear()
        out.append("  " * indent + "]")
    elif isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        pad = "  " * (indent + 1)
        keys = _sorted_keys(value) if sort else list(value)
        out.append("{\n")
        for i, key in enumerate(keys):
            out.append(pad + _string(key) + ": ")
            _write(value[key], out, indent + 1, sort, done)
            out.append(",\n" if i < len(keys) - 1 else "\n")
            if done is not None and len(out) > _JOIN_EVERY:
                done.append("".join(out))
                out.clear()
        out.append("  " * indent + "}")
    else:  # pragma: no cover - the representation holds JSON values only
        raise TypeError(f"not a JSON value: {value!r}")


def dumps(doc: JsonValue, *, sort_keys: bool = True) -> str:
    """Return ``doc`` as canonical JSON text: two-space indent, UTF-8, exact numbers, final newline.

    >>> dumps({"b": 1, "a": [Decimal("0.10")]})
    '{\\n  "a": [\\n    0.1\\n  ],\\n  "b": 1\\n}\\n'
    """
    out: list[str] = []
    done: list[str] = []
    _write(doc, out, 0, sort_keys, done)
    out.append("\n")
    done.append("".join(out))
    return "".join(done)


def _provenance(origins: tuple[Range, ...]) -> str:
    return "merged from " + ", ".join(f"{r.filename}:{r.start.line}" for r in origins)


def body_json(
    body: Body,
    *,
    origins: tuple[Range, ...] = (),
    provenance: bool = False,
    as_blocks: frozenset[str] = frozenset(),
) -> dict[str, JsonValue]:
    """Return a block body as a Terraform JSON object (nested blocks grouped by type).

    ``as_blocks`` names the provider arguments of this body (dotted paths reach into nested
    blocks) that are attributes written in block form; their blocks become ``dynamic`` blocks
    (flatten.lang.attributes_as_blocks).
    """
    doc: dict[str, JsonValue] = {}
    if provenance and origins:
        doc["//"] = _provenance(origins)
    for attr in sorted(body.attributes, key=lambda a: a.name):
        doc[attr.name] = attr.expr.value
    grouped: dict[str, list[Block]] = {}
    for block in body.blocks:
        as_dynamic = block.type in as_blocks and not block.labels and not _refers_to(block.body, block.type)
        grouped.setdefault("dynamic" if as_dynamic else block.type, []).append(block)
    for type_, blocks in grouped.items():
        doc[type_] = _nested_json(type_, blocks, provenance=provenance, as_blocks=as_blocks)
    return doc


def _under(paths: frozenset[str], name: str) -> frozenset[str]:
    """The paths inside nested block ``name``."""
    prefix = name + "."
    return frozenset(p[len(prefix) :] for p in paths if p.startswith(prefix))


def _refers_to(body: Body, root: str) -> bool:
    """Whether an expression in ``body`` refers to ``root`` (a dynamic block's iterator would shadow it).

    Unreadable text counts as a reference, so such a block keeps its plain form.
    """
    stack: list[object] = [body]
    while stack:
        value = stack.pop()
        if isinstance(value, Body):
            stack.extend(a.expr.value for a in value.attributes)
            stack.extend(b.body for b in value.blocks)
        elif isinstance(value, str):
            if "${" in value or "%{" in value:
                try:
                    if any(r.root == root for r in template_references(value)):
                        return True
                except ExpressionError:
                    return True
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, dict):
            stack.extend(value.values())
    return False


def _nested_json(
    group: str, blocks: list[Block], *, provenance: bool, as_blocks: frozenset[str]
) -> JsonValue:
    items: list[JsonValue] = []
    for block in blocks:
        inner = _under(as_blocks, block.labels[0] if block.type == "dynamic" and block.labels else block.type)
        if block.type == "dynamic":
            inner = frozenset("content." + p for p in inner)
        value: JsonValue = body_json(
            block.body, origins=block.origins, provenance=provenance, as_blocks=inner
        )
        if block.type != group:
            # An attribute written as a block, in a group of dynamic blocks: one dynamic block
            # whose single iteration gives this body.
            value = {block.type: {"for_each": [0], "content": [value]}}
        for label in reversed(block.labels):
            value = {label: value}
        items.append(value)
    # Always an array, one object per block, even for a single block: Terraform reads an array
    # of objects both as nested blocks and as a provider attribute of list/set-of-object type,
    # while a lone object is rejected for the latter ("set of object required"; docs/conversion.md).
    return items


def _labelled(blocks: list[Block], *, provenance: bool) -> dict[str, JsonValue]:
    """Top-level labelled blocks as nested objects keyed by label; repeats become lists."""
    tree: dict[str, object] = {}
    for block in blocks:
        node = tree
        for label in block.labels[:-1]:
            child = node.setdefault(label, {})
            assert isinstance(child, dict)
            node = child
        leaf = node.setdefault(block.labels[-1], [])
        assert isinstance(leaf, list)
        leaf.append(block)

    def render(node: dict[str, object]) -> dict[str, JsonValue]:
        out: dict[str, JsonValue] = {}
        for key in sorted(node):
            child = node[key]
            if isinstance(child, dict):
                out[key] = render(child)
                continue
            assert isinstance(child, list)
            bodies: list[JsonValue] = [
                body_json(
                    b.body,
                    origins=b.origins,
                    provenance=provenance,
                    as_blocks=attribute_blocks(b.labels[0]) if b.type == "resource" else frozenset(),
                )
                for b in _provider_order(child)
            ]
            out[key] = bodies[0] if len(bodies) == 1 else bodies
        return out

    return render(tree)


def _provider_order(blocks: list[Block]) -> list[Block]:
    # Several blocks under one label only happen for provider configurations (by alias);
    # their order has no meaning, so the default comes first and aliases sort.
    def alias(block: Block) -> str:
        attr: Attribute | None = block.body.attribute("alias")
        return attr.value if attr is not None and isinstance(attr.value, str) else ""

    if all(b.type == "provider" for b in blocks):
        return sorted(blocks, key=alias)
    return blocks


def module_json(module: Module, *, provenance: bool = False) -> dict[str, JsonValue]:
    """Return a merged module as one Terraform JSON document."""
    grouped: dict[str, list[Block]] = {}
    for block in module.blocks:
        grouped.setdefault(block.type, []).append(block)
    doc: dict[str, JsonValue] = {}
    for type_ in sorted(grouped):
        blocks = grouped[type_]
        form = emit_form(type_)  # flatten/lang/blocks.py
        if form is Emit.MERGED:
            merged: dict[str, JsonValue] = {}
            origins: tuple[Range, ...] = ()
            for block in blocks:
                merged.update(body_json(block.body))
                origins += block.origins
            if provenance and origins:
                # One object holds every local, so its one "//" names every file that made it.
                merged["//"] = _provenance(origins)
            doc[type_] = merged
        elif blocks[0].labels:
            doc[type_] = _labelled(blocks, provenance=provenance)
        elif form is Emit.LIST or len(blocks) > 1:
            doc[type_] = [body_json(b.body, origins=b.origins, provenance=provenance) for b in blocks]
        else:
            doc[type_] = body_json(blocks[0].body, origins=blocks[0].origins, provenance=provenance)
    return doc


# Temporary directories of the in-place swap (an --out that is a mount point), inside --out itself.
_INSIDE_PREFIXES = (".flatten-new-", ".flatten-old-")


def _is_previous_output(path: Path) -> bool:
    return (path / MANIFEST_NAME).is_file() or not any(
        not p.name.startswith(_INSIDE_PREFIXES) for p in path.iterdir()
    )


class Interrupted(BaseException):
    """SIGTERM arrived while the output was being written (raised so cleanup runs)."""


@contextlib.contextmanager
def _terminate_as_exception() -> Iterator[None]:
    # SIGTERM normally kills the process without unwinding; turn it into an exception for the
    # duration of the write so the temporary tree is removed and the old output stays in place.
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        raise Interrupted(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``directory`` so two builds into the same place take turns."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap two directories atomically (Linux renameat2); return False where unsupported."""
    # Imported here: ctypes costs every build's start-up 7 ms, and only a rebuild into an
    # existing --out swaps (docs/performance.md, "Start-up").
    import ctypes

    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if renameat2 is None:
        return False
    result = renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    return bool(result == 0)


def _swap_by_renames(tmp: Path, out: Path) -> None:
    """Move ``tmp`` to ``out`` with two renames, restoring the old ``out`` if interrupted between."""
    old = tmp.with_name(tmp.name + "-old") if out.exists() else None
    if old is not None:
        os.rename(out, old)
    try:
        os.rename(tmp, out)
    except BaseException:
        if old is not None and not out.exists():
            os.rename(old, out)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def copied_mode(mode: int) -> int:
    """Return the permissions a copied file gets from its source's ``st_mode``.

    Scripts keep their executable bits and private files stay private, but setuid, setgid and
    sticky bits and write access for group and others are dropped (an archive saying 4777 gives
    0755), and the owner can always read and write the copy.

    >>> oct(copied_mode(0o104777)), oct(copied_mode(0o100600)), oct(copied_mode(0o100664))
    ('0o755', '0o600', '0o644')
    """
    return (stat.S_IMODE(mode) & 0o755) | 0o600


def _write_files(tmp: Path, files: Mapping[str, bytes], copies: Mapping[str, Path]) -> None:
    for rel, data in sorted(files.items()):
        target = tmp / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    for rel, source in sorted(copies.items()):
        target = tmp / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        os.chmod(target, copied_mode(os.stat(source).st_mode))
    os.chmod(tmp, 0o755)


def _swap_contents(out: Path, new: Path, old: Path) -> None:
    """Make the entries of ``new`` the entries of ``out``, moving ``out``'s own entries into ``old``.

    For an ``out`` that cannot itself be renamed (a mount point). Each move is one rename on the
    same filesystem; the manifest leaves last and arrives first, so ``out`` holds a manifest (or
    only these temporary directories) at every moment. On any exception every move is undone.
    """
    ours = {new.name, old.name}
    leaving = sorted(n for n in os.listdir(out) if n not in ours)
    leaving.sort(key=lambda n: n == MANIFEST_NAME)
    arriving = sorted(os.listdir(new))
    arriving.sort(key=lambda n: n != MANIFEST_NAME)
    moved_out: list[str] = []
    moved_in: list[str] = []
    try:
        for name in leaving:
            os.rename(out / name, old / name)
            moved_out.append(name)
        for name in arriving:
            os.rename(new / name, out / name)
            moved_in.append(name)
    except BaseException:
        for name in reversed(moved_in):
            os.rename(out / name, new / name)
        for name in reversed(moved_out):
            os.rename(old / name, out / name)
        raise


def _replace_contents(
    out: Path, files: Mapping[str, bytes], copies: Mapping[str, Path], mask: set[int] | None
) -> None:
    """Write the tree inside ``out`` and swap ``out``'s contents for it (``out`` stays in place)."""
    new: Path | None = None
    old: Path | None = None
    try:
        new = Path(tempfile.mkdtemp(prefix=_INSIDE_PREFIXES[0], dir=out))
        with _signals_allowed(mask):
            _write_files(new, files, copies)
        old = Path(tempfile.mkdtemp(prefix=_INSIDE_PREFIXES[1], dir=out))
        _swap_contents(out, new, old)
    finally:
        for tmp in (new, old):
            if tmp is not None:
                _remove(tmp)


# A directory that cannot be renamed: a mount point (EBUSY), or one on another filesystem than
# the temporary tree (EXDEV). Its contents can still be replaced.
_UNRENAMABLE = frozenset({errno.EBUSY, errno.EXDEV})


def write_tree(out: Path, files: Mapping[str, bytes], copies: Mapping[str, Path] | None = None) -> None:
    """Write ``files`` (relative path -> bytes) and ``copies`` (relative path -> source file) as
    the directory ``out``, replacing it atomically.

    The tree is written into a temporary directory beside ``out`` and swapped into place (an
    atomic exchange where the kernel supports it), so a failed or interrupted build (an
    exception, Ctrl-C or SIGTERM) leaves the previous output untouched and no temporary directory
    behind. Builds into the same ``out`` take turns (a lock on its parent directory). An existing
    ``out`` is replaced only if it is empty or holds a previous flatten output (it has the
    manifest); anything else raises ``OutputError``.

    An ``out`` that cannot be renamed (a mount point, such as a container volume) keeps its
    place: the tree is written into a temporary directory inside it, and its entries are then
    swapped one rename at a time, undone on any failure (docs/reliability.md).
    """
    out = out.absolute()
    parent = out.parent
    parent.mkdir(parents=True, exist_ok=True)
    deferred: set[int] | None = None
    try:
        with _terminate_as_exception(), _locked(parent):
            if out.exists():
                if not out.is_dir():
                    raise OutputError(f"{out} exists and is not a directory")
                if not _is_previous_output(out):
                    raise OutputError(
                        f"{out} is not empty and holds no {MANIFEST_NAME}; refusing to replace a "
                        "directory flatten did not write. Choose an empty or new --out directory."
                    )
            # Leftovers of a build that was killed outright (SIGKILL): we hold the lock, so they are stale.
            for stale in parent.glob(f".{glob.escape(out.name)}.flatten-*"):
                shutil.rmtree(stale, ignore_errors=True)
            if out.is_dir():
                for prefix in _INSIDE_PREFIXES:
                    for stale in out.glob(prefix + "*"):
                        shutil.rmtree(stale, ignore_errors=True)
            # From here Ctrl-C and SIGTERM take effect only while files are written: a signal
            # handled between creating the temporary directory and the start of its cleanup, or
            # during the swap, would leave that directory behind. One that arrives meanwhile is
            # handled after the tree is complete (the new output is then in place).
            deferred = _signal_mask()  # first: whatever happens next, the finally restores it
            _block_signals(deferred)
            in_place = out.is_dir() and os.path.ismount(out)
            tmp: Path | None = None
            try:
                if not in_place:
                    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.flatten-", dir=parent))
                    with _signals_allowed(deferred):
                        _write_files(tmp, files, copies or {})
                    try:
                        if not (
                            out.exists() and _exchange(tmp, out)
                        ):  # after an exchange tmp holds the old output
                            _swap_by_renames(tmp, out)
                    except OSError as exc:
                        if exc.errno not in _UNRENAMABLE or not out.is_dir():
                            raise
                        in_place = True  # _swap_by_renames put the old output back
            finally:
                if tmp is not None:
                    _remove(tmp)
            if in_place:
                _replace_contents(out, files, copies or {}, deferred)
    finally:
        if deferred is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, deferred)


_DEFERRED = frozenset({signal.SIGINT, signal.SIGTERM})


def _signal_mask() -> set[int] | None:
    """Return this thread's blocked signals (None where signals cannot be masked)."""
    if not hasattr(signal, "pthread_sigmask"):
        return None
    return set(signal.pthread_sigmask(signal.SIG_BLOCK, ()))


def _block_signals(mask: set[int] | None) -> None:
    if mask is not None:
        signal.pthread_sigmask(signal.SIG_BLOCK, _DEFERRED)


@contextlib.contextmanager
def _signals_allowed(mask: set[int] | None) -> Iterator[None]:
    """Deliver Ctrl-C and SIGTERM again (as in ``mask``) for the duration of the block."""
    if mask is None:
        yield
        return
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_BLOCK, _DEFERRED)


def _remove(tmp: Path) -> None:
    """Remove ``tmp`` whole, even when an interrupt is raised meanwhile; then raise the first one.

    (Signals are deferred while it runs; this also covers a handler that was already due.)
    """
    pending: BaseException | None = None
    while True:
        try:
            shutil.rmtree(tmp, ignore_errors=True)
            break
        except (Interrupted, KeyboardInterrupt) as exc:
            pending = pending or exc
    if pending is not None:
        raise pending
