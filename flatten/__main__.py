"""Entry point for ``flatten`` and ``python -m flatten``.

It imports the CLI inside the ``try`` so that Ctrl-C during start-up, or SIGTERM while the output
is being swapped in, ends the process quietly with the conventional exit code instead of a
Python traceback.
"""

from __future__ import annotations

import sys


def main() -> None:
    try:
        import gc

        # A one-shot process whose objects nearly all live to the end: cyclic collection only
        # costs time (about a quarter of a warm build; docs/performance.md).
        gc.disable()
        from flatten.parse_cache import run_build_command

        def cli_main() -> None:
            from flatten.cli import main as run  # imported lazily: a replayed build never needs it

            run()

        run_build_command(sys.argv[1:], cli_main)
    except KeyboardInterrupt:
        sys.stderr.write("flatten: interrupted\n")
        sys.exit(130)
    except BaseException as exc:
        from flatten.emit import Interrupted

        if isinstance(exc, Interrupted):
            sys.stderr.write("flatten: terminated; the previous output was left in place\n")
            sys.exit(143)
        raise


if __name__ == "__main__":
    main()
