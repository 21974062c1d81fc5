"""Quarantined records: see them, export them and re-send them (`python -m ops.quarantine`, docs/quarantine.md).

- filters.py    what a person chooses records by: reason pattern, time window, coordinates
- escape.py     text from the data made safe for a terminal
- selection.py  the chosen quarantine rows, paired with bronze's exact bytes
- listing.py    the `list` command: counts by reason and family, samples, tables or JSON
- export.py     the `export` command: exact bytes, one record per line, for `producer replay`
- republish.py  the `republish` command: exact bytes sent to the topic again
- stderr.py     one-line failures and warnings
- cli.py        the arguments, and the exit codes of eo/runtime/cli.py
"""

from ops.quarantine.cli import main

__all__ = ["main"]
