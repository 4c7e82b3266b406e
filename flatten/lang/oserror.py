"""An operating-system error in the user's words: what failed, on which path, and what to do.

Python's ``str(OSError)`` is ``[Errno 17] File exists: '/x/afile'``: the errno is noise to a
user, and "File exists" does not say that ``afile`` is a file where a directory was needed. Every
place that reports an ``OSError`` (the output tree, the caches, module and configuration reads)
goes through :func:`describe_os_error` or :func:`os_error_diagnostic`, so no ``[Errno N]`` text
reaches a user (tests/cli/test_os_errors.py walks the CLI's error paths).

Terraform does the same: its ``fmt`` command reports "Failed to read file PATH" and "Failed to
write PATH" instead of Go's error text, which "does not produce error messages that are end-user-
appropriate" (hashicorp/terraform internal/command/fmt.go). flatten adds what went wrong and what
to do, since its user cannot see the errno's meaning either.

No I/O here: the words come from the errno alone (a leaf of ``lang``).
"""

from __future__ import annotations

import errno
import os
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flatten.lang.diagnostics import Diagnostic

__all__ = ["Refused", "describe_os_error", "os_error_diagnostic"]

#: errno -> (what happened, in plain words; what the user can do about it). ``{path}`` is the
#: path the error names.
_WORDS = MappingProxyType(
    {
        errno.EACCES: (
            "permission was denied",
            "Check the permissions of {path} and its parent directories, or choose a location you "
            "can write to.",
        ),
        errno.EPERM: (
            "the operation is not permitted there",
            "Choose a location you own and can write to (not a system or special directory).",
        ),
        errno.EEXIST: (
            "a file is in the way: a path that must be a directory exists as a file",
            "Remove or rename {path}, or choose another location.",
        ),
        errno.ENOTDIR: (
            "a part of the path is a file, not a directory",
            "Check that every directory of {path} is a directory, or choose another location.",
        ),
        errno.EISDIR: (
            "it is a directory where a file was expected",
            "Remove or rename the directory {path}.",
        ),
        errno.ENOENT: (
            "it does not exist",
            "Check the path, or create its parent directory first.",
        ),
        errno.EROFS: (
            "the file system is read-only",
            "Choose a location on a writable file system.",
        ),
        errno.ENOSPC: (
            "there is no space left on the device",
            "Free some space on that file system (`flatten cache clean` empties flatten's cache), "
            "or choose a location on another one.",
        ),
        errno.EDQUOT: (
            "the disk quota is exceeded",
            "Free some space within your quota (`flatten cache clean` empties flatten's cache), "
            "or choose another location.",
        ),
        errno.ENAMETOOLONG: (
            "the path is too long for the file system",
            "Choose a shorter path.",
        ),
        errno.ELOOP: (
            "it passes through a symlink loop",
            "Fix the symbolic links on the path.",
        ),
        errno.EMFILE: (
            "too many files are open",
            "Raise the limit on open files (`ulimit -n`) and run again.",
        ),
        errno.ENFILE: (
            "the system has too many files open",
            "Run again when fewer files are open.",
        ),
        errno.EIO: (
            "the device reported an input/output error",
            "Check the disk or network file system, then run again.",
        ),
        errno.EBUSY: (
            "it is busy (in use, or a mount point)",
            "Run again when it is free, or choose another location.",
        ),
        errno.ENOTEMPTY: (
            "the directory is not empty",
            "Empty or remove {path}, or choose another location.",
        ),
        errno.EXDEV: (
            "it lies on another file system than its temporary copy",
            "Choose a location on one file system.",
        ),
    }
)


#: The advice for a failed *read* where ``_WORDS``' is about writing (a read error must not tell
#: the user to choose a location they can write to).
_READ_TODO = MappingProxyType(
    {
        errno.EACCES: "Check the permissions of {path} and its parent directories: flatten must be able "
        "to read it and to enter each directory above it.",
        errno.EPERM: "Check the permissions of {path} and its parent directories: flatten must be able "
        "to read it.",
        errno.ENOENT: "Check the path.",
        errno.EEXIST: "Check the path.",
        errno.ENOTDIR: "Check that every directory of {path} is a directory.",
        errno.EBUSY: "Run again when it is free.",
    }
)


class Refused(OSError):
    """A file operation flatten's gate (``flatten/gate.py``) declined: a device, FIFO or socket
    where a file was expected, a symlink leading where its rule does not allow, a file over its
    size budget, the build's deadline passed, or a directory flatten did not mark as its own.

    Data, not wording to parse: ``reason`` is one of :data:`REASONS`; ``what`` and ``todo`` are
    the two halves :func:`describe_os_error` words every error with. An ``OSError`` (with the
    errno nearest in meaning), so a caller that already turns ``OSError`` into a diagnostic turns
    this one too, and never with ``[Errno N]``.
    """

    REASONS = frozenset(
        {"special", "symlink", "outside", "too-large", "deadline", "not-owned", "not-directory"}
    )

    def __init__(self, code: int, reason: str, path: str, what: str, todo: str) -> None:
        super().__init__(code, what, path)
        assert reason in self.REASONS, reason
        self.reason = reason
        self.what = what
        self.todo = todo

    #: The reasons that say what the file is (a device, a link, too large, not a directory), not
    #: what the run is (its deadline passed, a directory is not flatten's).
    FILE_REASONS = frozenset({"special", "symlink", "outside", "too-large", "not-directory"})

    def __reduce__(self) -> tuple[object, ...]:  # crosses process boundaries (prefetch, fan-out)
        return (Refused, (self.errno, self.reason, self.filename, self.what, self.todo))

    @property
    def about_the_file(self) -> bool:
        """Whether the refusal says what the file is (so it cannot be the file wanted), rather
        than that the run may not go on (``deadline``, ``not-owned``)."""
        return self.reason in self.FILE_REASONS


def describe_os_error(
    exc: OSError, *, doing: str, path: str | os.PathLike[str] | None = None, reading: bool = False
) -> str:
    """Return a sentence and an instruction for ``exc``: ``flatten could not {doing}: {what}
    ({path}). {what to do}``.

    ``doing`` is what was attempted ("write the output tree to out/"); ``path`` is where it
    failed, by default the path the error names; ``reading``: the attempt only read (a file or a
    directory listing), so the advice is about reading it, never about a location to write to.
    Never holds ``[Errno N]``.
    """
    named = path if path is not None else exc.filename
    where = os.fspath(named) if named is not None else ""
    code = exc.errno if exc.errno is not None else -1
    if isinstance(exc, Refused):
        what, todo = exc.what, exc.todo
    else:
        what, todo = _WORDS.get(code, (_plain(exc), "Check the path and run again."))
        if reading:
            todo = _READ_TODO.get(code, todo)
    subject = f" ({where})" if where else ""
    return f"flatten could not {doing}: {what}{subject}. {todo.format(path=where or 'it')}"


def _plain(exc: OSError) -> str:
    """The error's own words without the errno (``strerror``), lower-cased to continue a sentence."""
    text = exc.strerror or type(exc).__name__
    return text[:1].lower() + text[1:]


def os_error_diagnostic(
    exc: OSError,
    *,
    summary: str,
    doing: str,
    path: str | os.PathLike[str] | None = None,
    reading: bool = False,
) -> Diagnostic:
    """Return ``exc`` as an error diagnostic: ``summary`` (Terraform's, where it has one), and the
    detail of :func:`describe_os_error`. ``extra`` carries the errno's name for later stages."""
    # Imported here: the gate (flatten/gate.py) raises Refused on a replayed build's path, which
    # never loads the model the diagnostics bring in (tests/project/test_api.py).
    from flatten.lang.diagnostics import Code, Diagnostic, Extra

    name = exc.reason if isinstance(exc, Refused) else errno.errorcode.get(exc.errno or -1, "")
    return Diagnostic.error(
        summary,
        describe_os_error(exc, doing=doing, path=path, reading=reading),
        extra=Extra(Code.OS_ERROR, subject=name),
    )
