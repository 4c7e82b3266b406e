"""Entry point for ``flatten`` and ``python -m flatten``.

It imports the CLI inside the ``try`` so that Ctrl-C during start-up, or SIGTERM while the output
is being swapped in, ends the process quietly with the conventional exit code instead of a
Python traceback.
"""

from __future__ import annotations

import sys


def main() -> None:
    try:
        from flatten.cli import main as cli_main

        cli_main()
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
