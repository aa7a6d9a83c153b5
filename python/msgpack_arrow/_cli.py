"""The ``msgpack-arrow`` command installed with the package: the Rust CLI, run from the extension
module (no second binary to build). Same commands and options as ``cargo install --path .``."""

from __future__ import annotations

import sys


def main() -> None:
    import signal

    from ._internal import cli_main

    # The work runs in Rust without returning to Python: let Ctrl-C end the process as it ends the
    # Rust binary (outputs are written to a temporary file and renamed only when complete).
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.exit(cli_main(["msgpack-arrow", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
