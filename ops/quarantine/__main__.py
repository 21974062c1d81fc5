"""python -m ops.quarantine: failures this command does not know are explained by eo/runtime/cli.py."""

import sys

from eo.runtime.cli import guarded
from ops.quarantine.cli import main

if __name__ == "__main__":
    sys.exit(guarded(main))
