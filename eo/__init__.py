"""The platform's shared packages: core (pure), runtime (services), cloud (AWS tooling).

A declaration the platform cannot carry (a source's JSON Schema, a gold table's module) is refused
when its registry loads, which is at import, before any command's own error handling runs. So a
refusal ends the process here in its one line (exit 2, as a bad argument), never in a traceback
that buries it: `DeclarationError` is what both registries raise.
"""

from __future__ import annotations

import os
import sys

USAGE = 2  # eo/runtime/cli.py's exit code for what the person must correct


class DeclarationError(ValueError):
    """A declaration the platform cannot carry: its text is one line naming it and what is wrong."""


def refusal_line(kind: type[BaseException], value: BaseException, traceback, previous=sys.excepthook) -> None:
    """sys.excepthook: a DeclarationError is its one line on stderr and exit 2; anything else as before."""
    if isinstance(value, DeclarationError):
        sys.stderr.write(f"{value}\n")
        sys.stderr.flush()
        sys.stdout.flush()
        os._exit(USAGE)  # the hook cannot set the status otherwise; nothing has started yet
    previous(kind, value, traceback)


sys.excepthook = refusal_line
