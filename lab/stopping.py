"""A lab run stops what it started when it is stopped, as when it ends.

A SIGTERM ends a Python process at once, its `finally` blocks skipped: an interrupted `make bench`
left its streaming job and its Kafka broker running. `stoppable` turns SIGTERM and SIGHUP into
`Stopped`, a KeyboardInterrupt (Ctrl-C, SIGINT, already is one), raised in the main thread: the
run unwinds through the `finally` blocks that stop its broker and its jobs (a child that
`subprocess.run` waits for is killed on the way), and ends with 128 + the signal's number.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable

SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Stopped(KeyboardInterrupt):
    """The run was asked to stop by a signal (its number in `signum`)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def stoppable(main: Callable[[list[str] | None], int], argv: list[str] | None = None) -> int:
    """Run `main(argv)` with SIGTERM and SIGHUP unwinding it. A second signal while it stops
    does not interrupt the stopping. Returns main's code, or 128 + the signal's number."""
    stopping: list[int] = []

    def stop(signum, _frame) -> None:
        if not stopping:  # once: a second signal must not cut the cleanup short
            stopping.append(signum)
            raise Stopped(signum)

    previous = {s: signal.signal(s, stop) for s in SIGNALS}
    try:
        return main(argv)
    except Stopped as stopped:
        name = signal.Signals(stopped.signum).name
        print(f"stopped by {name}: what this run started was stopped", file=sys.stderr, flush=True)
        return 128 + stopped.signum
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
