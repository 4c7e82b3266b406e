"""Authenticated cache entries: each carries an HMAC-SHA256 tag made with a key kept on this machine.

Later builds read back what earlier ones stored: parse, module and emit cache entries and build
records (pickles, which run code when crafted) and the records of downloaded packages. CI systems
restore caches that other branches, and on some platforms pull requests from forks, wrote. So
every entry carries a tag over (kind, name, payload) made with a secret key that never lives in
the cache directory; an entry whose tag does not verify is a miss, and its bytes are never
unpickled nor used. A cache restored from another machine is therefore all misses.

The key is ``FLATTEN_CACHE_KEY`` when set (any secret string: CI jobs that share a cache on
purpose give every trusted job the same secret), else the file ``cache-key`` in
``$XDG_STATE_HOME/flatten`` or ``~/.local/state/flatten``: 32 random bytes, mode 0600, created
atomically (written to a temporary file, then linked into place). A key file that is a symlink,
not a regular file, not owned by this user, open to group or others, or not 32 bytes is not
trusted and is replaced by a new one (existing entries become misses). A state directory not
owned by this user gives no key; one of this user's that others may enter is made private
(0700). Without a key, the caches are off.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
import threading
from collections.abc import Mapping
from pathlib import Path

from flatten import gate

__all__ = ["TAG_SIZE", "key", "key_file", "seal", "tag", "tagger", "verify"]

TAG_SIZE = 32  # bytes of an HMAC-SHA256 tag
_KEY_SIZE = 32
_ENV = "FLATTEN_CACHE_KEY"

# Keys found, by what decides them (the environment may change between in-process builds).
_KEYS: dict[tuple[str | None, str | None, str | None], bytes | None] = {}
_LOCK = threading.Lock()


class _Untrusted(Exception):
    pass


def key_file(environ: Mapping[str, str] | None = None) -> Path:
    """Return where the machine's key lives (``$XDG_STATE_HOME/flatten`` or ``~/.local/state/flatten``)."""
    env = os.environ if environ is None else environ
    state = env.get("XDG_STATE_HOME")
    base = Path(state) if state else Path.home() / ".local" / "state"
    return base / "flatten" / "cache-key"


def key() -> bytes | None:
    """Return the key entries are tagged with, or None when there is none (the caches are then off)."""
    env = os.environ
    # Called for every entry: a dict look-up by what decides the key, no path built.
    where = (env.get(_ENV) or None, env.get("XDG_STATE_HOME"), env.get("HOME"))
    found = _KEYS.get(where, b"")
    if found != b"":
        return found
    with _LOCK:
        if where not in _KEYS:
            _KEYS[where] = _find(where[0])
        return _KEYS[where]


def _find(secret: str | None) -> bytes | None:
    if secret:
        # Derived, so that the key is always 32 bytes, whatever the secret's length.
        return hashlib.sha256(b"flatten-cache-key\0" + secret.encode("utf-8", "surrogatepass")).digest()
    try:
        path = key_file()
    except RuntimeError:  # no home directory
        return None
    return _load(path)


def _load(path: Path) -> bytes | None:
    try:
        with gate.open_dir(path.parent, create=True, mode=0o700) as directory:
            st = os.fstat(directory.fd)
            # Whoever else could write the directory could swap the key file after we checked
            # it: one of another user's is refused, one of ours made private (umask 002, say).
            if st.st_uid != os.geteuid():
                return None
            if st.st_mode & 0o077:
                os.fchmod(directory.fd, 0o700)
            try:
                found = _read(directory, path.name)
            except _Untrusted:
                return _create(directory, path.name, replace=True)
            if found is not None:
                return found
            try:
                return _create(directory, path.name, replace=False)
            except FileExistsError:  # another build made it first: use theirs
                return _read(directory, path.name)
    except (OSError, _Untrusted):
        return None


def _read(directory: gate.Dir, name: str) -> bytes | None:
    """Return the key in ``name``, None when there is no such file; raise _Untrusted when it is
    not safe (a symlink, not ours, readable by others, the wrong size)."""
    try:
        st = directory.stat(name)
    except FileNotFoundError:
        return None
    if (
        not stat.S_ISREG(st.st_mode)
        or st.st_uid != os.geteuid()
        or st.st_mode & 0o077
        or st.st_size != _KEY_SIZE
    ):
        raise _Untrusted(directory.join(name))
    try:
        data = directory.read(name, limit=_KEY_SIZE)
    except OSError:  # replaced meanwhile by a symlink (refused), or unreadable
        raise _Untrusted(directory.join(name)) from None
    if len(data) != _KEY_SIZE:
        raise _Untrusted(directory.join(name))
    return data


def _create(directory: gate.Dir, name: str, *, replace: bool) -> bytes:
    """Write a new key to ``name``: complete before it appears, private whatever the umask (the
    file is made 0600). Raise FileExistsError when one appeared meanwhile and ``replace`` is false
    (a symlink there is replaced itself, never what it points to)."""
    data = os.urandom(_KEY_SIZE)
    directory.write(name, data, mode=0o600, exclusive=not replace)
    return data


def tagger(kind: str, name: str) -> hmac.HMAC | None:
    """Return what makes ``tag(kind, name, payload)`` from a payload given in pieces (``update``,
    then ``digest``), or None when there is no key: how an entry written as it is encoded is tagged."""
    secret = key()
    if secret is None:
        return None
    return hmac.new(secret, f"{kind}\0{name}\0".encode("utf-8", "surrogatepass"), "sha256")


def tag(kind: str, name: str, payload: bytes | memoryview) -> bytes:
    """Return the tag of ``payload`` stored as ``kind`` entry ``name`` (zeros when there is no key,
    which nothing verifies)."""
    h = tagger(kind, name)
    if h is None:
        return bytes(TAG_SIZE)
    h.update(payload)
    return h.digest()


def seal(kind: str, name: str, payload: bytes) -> bytes:
    """Return ``tag + payload``: what ``verify`` accepts for the same kind and name."""
    return tag(kind, name, payload) + payload


def verify(kind: str, name: str, data: bytes, start: int = 0) -> bool:
    """Return whether ``data[start:]`` is a tag followed by the payload it authenticates."""
    secret = key()
    if secret is None or len(data) < start + TAG_SIZE:
        return False
    view = memoryview(data)
    expected = tag(kind, name, view[start + TAG_SIZE :])
    return hmac.compare_digest(expected, view[start : start + TAG_SIZE])
