"""``python -m simulator ...``: the ``socsim`` command, for an environment whose scripts
folder is not on ``PATH`` (or to pick the interpreter: ``python3.12 -m simulator``)."""

import sys

from simulator.cli import main

if __name__ == "__main__":
    sys.exit(main())
