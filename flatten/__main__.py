"""Entry point for ``flatten`` and ``python -m flatten``.

It imports the CLI inside the ``try`` so that Ctrl-C during start-up, or SIGTERM while the output
is being swapped in, ends the process quietly with the conventional exit code instead of a
Python traceback.
"""

from __future__ import annotations

import os
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
        import gc

        # A one-shot process whose objects nearly all live to the end: cyclic collection only
        # costs time (about a quarter of a warm build; docs/performance.md).
        gc.disable()
        from flatten.shell.parse_cache import run_build_command

        def cli_main() -> None:
            from flatten.cli import main as run  # imported lazily: a replayed build never needs it

            run()

        if "_FLATTEN_COMPLETE" in os.environ:
            # A shell asking for completions (the words come from the environment): answer it
            # and build nothing, even should a build command line be present.
            cli_main()
        else:
            run_build_command(sys.argv[1:], cli_main)
    except KeyboardInterrupt:
        sys.stderr.write("flatten: interrupted\n")
        sys.exit(130)
    except BaseException as exc:
        from flatten.stages.emit import Interrupted

        if isinstance(exc, Interrupted):
            sys.stderr.write("flatten: terminated; the previous output was left in place\n")
            sys.exit(143)
        raise


def _exit(code: object) -> None:
    """End the process with ``code`` (as ``sys.exit`` takes it) without tearing the heap down.

    Freeing what a build made (a full collection, then every object one by one) took 0.15 to
    0.25 s after a 200-module build, a third of a rebuild after one edit; mypy exits the same way.
    First every cache write finishes and both streams are flushed; a stream that cannot be
    flushed (a closed pipe) makes the status 120, as Python's own exit does.
    """
    import signal

    # The outcome is decided: a Ctrl-C or SIGTERM now would only turn it into a traceback.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    from flatten.shell.parse_cache import finish

    finish()
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        sys.stderr.write(f"{code}\n")
        status = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            status = status or 120
    os._exit(status)


if __name__ == "__main__":
    main()
