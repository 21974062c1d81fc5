"""Seams the fault lab plugs into (lab/faults.py). In production every hook does nothing.

Production code calls `hooks()`; only the lab calls `install`, in its own entry point
(lab/hooked.py) or in a test, so no production module imports the lab.
"""

from __future__ import annotations

from typing import Any


class Hooks:
    """The do-nothing hooks production runs with."""

    def point(self, name: str) -> None:
        """A named point in the commit path (a crash there is what the lab tests)."""

    def source(self, raw: Any) -> Any:
        """The records as read from Kafka or bronze, before the reading (the lab poisons some)."""
        return raw

    def sinks(self, dsn: str, fence: Any) -> list:
        """Further external sinks beside the exactly-once one (the lab's weaker guarantees)."""
        return []


_installed: Hooks = Hooks()


def hooks() -> Hooks:
    return _installed


def install(new: Hooks) -> Hooks:
    """Install `new`; return the hooks it replaces, so a test can put them back."""
    global _installed
    previous, _installed = _installed, new
    return previous
