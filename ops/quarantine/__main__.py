"""python -m ops.quarantine: failures this command does not know are explained by eo/runtime/cli.py."""

from eo.runtime.cli import exit_with, guarded
from ops.quarantine.cli import main

if __name__ == "__main__":
    exit_with(guarded, main)
