"""Entry point for ``flatten`` and ``python -m flatten``: signals and exit codes.

The program itself (the command line, with the caches' help for ``build``) runs in
flatten.shell.process, imported inside the ``try`` so that Ctrl-C during start-up, or SIGTERM
while the output is being swapped in, ends the process quietly with the conventional exit code
(130, 143) instead of a Python traceback.
"""

from __future__ import annotations

import sys


class Terminated(BaseException):
    """SIGTERM arrived: raised where the program is, so that cleanup runs as for Ctrl-C.

    A BaseException, like KeyboardInterrupt: no ``except Exception`` swallows it. While the output
    is being written, flatten.stages.output installs its own handler (its ``Interrupted``).
    """


def _terminate(signum: int, frame: object) -> None:
    raise Terminated(signum)


#: What the user reads for each interrupt: one line, the outcome included (every write swaps a
#: finished tree in, so an interrupted build never leaves a half-written output).
INTERRUPTED = "flatten: interrupted; the previous output was left in place\n"
TERMINATED = "flatten: terminated; the previous output was left in place\n"


def main() -> None:
    code: object = 0
    try:
        _main()
    except SystemExit as exc:
        code = exc.code
    except KeyboardInterrupt:  # between the build's own handler and here
        code = 130
    except Terminated:
        code = 143
    while True:
        try:
            _exit(code)
        except KeyboardInterrupt:  # before _exit blocked the signal: exit all the same
            code = 130
        except Terminated:
            code = 143


def _main() -> None:
    try:
        # Inside the ``try``: importing signal runs Python code (it builds its enums), and a
        # Ctrl-C there was a traceback (CI, stop 47) where it is "interrupted" and 130.
        import signal

        # Without a handler SIGTERM kills the process outright, with no message and no chance to
        # end the helpers it forked (flatten/shell/process.py ``end``).
        signal.signal(signal.SIGTERM, _terminate)
        from flatten.shell import process

        process.main()
    except KeyboardInterrupt:
        _say(INTERRUPTED)
        sys.exit(130)
    except Terminated:
        _say(TERMINATED)
        sys.exit(143)
    except SystemExit as exc:  # the usual way out: the command line decided the code
        if exc.code == 130:  # typer turns Ctrl-C into a silent exit 130 (typer.core._main)
            _say(INTERRUPTED)
        raise
    except BaseException as exc:
        from flatten.stages.emit import Interrupted

        if isinstance(exc, Interrupted):
            _say(TERMINATED)
            sys.exit(143)
        raise


def _say(message: str) -> None:
    """Print the interrupt's line on a line of its own (a progress line may be drawn)."""
    stream = sys.stderr
    isatty = getattr(stream, "isatty", None)
    prefix = "\r\x1b[K" if isatty is not None and isatty() else ""
    stream.write(prefix + message)


def _exit(code: object) -> None:
    """End the process with ``code`` (as ``sys.exit`` takes it): 0 for None, else the number, or
    1 after printing a message (flatten.shell.process.end finishes the caches' writes)."""
    import signal

    # The outcome is decided: a Ctrl-C or SIGTERM now would only turn it into a traceback.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    from flatten.shell.process import end

    if code in (130, 143):
        # Interrupted: the prefetching children and their helpers would otherwise run to the end
        # of their work first (tens of seconds on a large tree), with `end` waiting for them.
        prefetch = sys.modules.get("flatten.shell.prefetch")
        if prefetch is not None:
            prefetch.abandon()
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        sys.stderr.write(f"{code}\n")
        status = 1
    end(status)


if __name__ == "__main__":
    main()
