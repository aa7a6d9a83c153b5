"""The ``msgpack-arrow`` command installed with the package: the Rust CLI, run from the extension
module (no second binary to build). Same commands and options as ``cargo install --path .``."""

from __future__ import annotations

import sys


def main() -> None:
    from ._internal import cli_main

    sys.exit(cli_main(sys.argv))


if __name__ == "__main__":
    main()
