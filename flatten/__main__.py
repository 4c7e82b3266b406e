"""Entry point for ``flatten`` and ``python -m flatten``: signals and exit codes.

The program itself (the command line, with the caches' help for ``build``) runs in
flatten.shell.process, imported inside the ``try`` so that Ctrl-C during start-up, or SIGTERM
while the output is being swapped in, ends the process quietly with the conventional exit code
(130, 143) instead of a Python traceback.
"""

from __future__ import annotations

import sys


def main() -> None:
    code: object = 0
    try:
        _main()
    except SystemExit as exc:
        code = exc.code
    except KeyboardInterrupt:  # between the build's own handler and here
        code = 130
    while True:
        try:
            _exit(code)
        except KeyboardInterrupt:  # before _exit blocked the signal: exit all the same
            code = 130


def _main() -> None:
    try:
        from flatten.shell import process

        process.main()
    except KeyboardInterrupt:
        sys.stderr.write("flatten: interrupted\n")
        sys.exit(130)
    except SystemExit:  # the usual way out: the command line decided the code
        raise
    except BaseException as exc:
        from flatten.stages.emit import Interrupted

        if isinstance(exc, Interrupted):
            sys.stderr.write("flatten: terminated; the previous output was left in place\n")
            sys.exit(143)
        raise


def _exit(code: object) -> None:
    """End the process with ``code`` (as ``sys.exit`` takes it): 0 for None, else the number, or
    1 after printing a message (flatten.shell.process.end finishes the caches' writes)."""
    import signal

    # The outcome is decided: a Ctrl-C or SIGTERM now would only turn it into a traceback.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    from flatten.shell.process import end

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
