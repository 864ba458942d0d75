"""`python3 -m devplace ...` runs the devplace command-line program (docs/cli.md) with the same arguments.

The program is looked for relative to this package: in a build tree (build/python/devplace -> build/apps/devplace),
then in an install prefix (<prefix>/lib/python3/dist-packages/devplace -> <prefix>/bin/devplace), then on PATH.
DEVPLACE_PROGRAM overrides the search."""

import os
import shutil
import sys
from pathlib import Path


def find_program():
    override = os.environ.get("DEVPLACE_PROGRAM")
    if override:
        return override
    here = Path(__file__).resolve().parent
    for candidate in (here.parents[1] / "apps" / "devplace", here.parents[3] / "bin" / "devplace"):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("devplace")


def main():
    program = find_program()
    if program is None:
        sys.exit("devplace: the devplace program was not found next to the Python package or on PATH "
                 "(build it, or set DEVPLACE_PROGRAM)")
    os.execv(program, [program] + sys.argv[1:])


if __name__ == "__main__":
    main()
