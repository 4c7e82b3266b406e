"""Progress for downloads: a one-line display on a terminal, log records otherwise.

The library never prints: records go to the ``flatten.sources`` logger, and the live line is
drawn only on a stream the caller passes (the CLI passes ``sys.stderr`` when it is a TTY).
"""

from __future__ import annotations

import threading
from typing import TextIO

from flatten.lang.printable import printable

__all__ = ["Progress"]


def _log(message: str, *args: object) -> None:
    # logging is imported by the first download, not by every build that makes a fetcher (its
    # import is about 4 ms of a build's start).
    import logging

    logging.getLogger("flatten.sources").info(message, *args)


class Progress:
    """Counts downloads in flight; ``stream`` (or None for quiet) shows ``[done/total] label``."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self._started = 0
        self._done = 0

    def begin(self, label: str) -> None:
        _log("downloading %s", label)
        with self._lock:
            self._started += 1
            self._draw(f"downloading {label}")

    def end(self, label: str, *, ok: bool) -> None:
        _log("%s %s", "downloaded" if ok else "failed to download", label)
        with self._lock:
            self._done += 1
            self._draw(("downloaded " if ok else "failed ") + label)
            if self._stream is not None and self._done == self._started:
                self._stream.write("\r\x1b[K")
                self._stream.flush()

    def _draw(self, text: str) -> None:
        if self._stream is None:
            return
        # The label is a source address: escaped (lang/printable.py) before flatten's own codes.
        self._stream.write(f"\r\x1b[K[{self._done}/{self._started}] {printable(text)}"[:200])
        self._stream.flush()
