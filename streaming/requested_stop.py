"""A requested stop of the stream (SIGTERM: `make stream-stop`, a cancelled job run, `kill PID`):
the query stops, the lease is let go, and the process exits 0 saying so (streaming/run.py `cli`),
not 143 with the engine's complaints of a session gone."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class StopRequested(BaseException):
    """SIGTERM (`make stream-stop`, a cancelled job run, `kill PID`): a stop asked for, not a failure.
    A BaseException, as KeyboardInterrupt: no `except Exception` on its way takes it for an error."""


STOP = threading.Event()  # set once a stop is asked for: what fails after it is the stop's doing


@contextmanager
def stop_on_sigterm() -> Iterator[None]:
    """SIGTERM raises StopRequested in the main thread while the block runs: the query is stopped,
    the lease let go (`holding`'s exit), and the process ends with exit 0 and a line saying so
    (`cli`). A second SIGTERM ends the process at once. Only the main thread can set a handler."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)

    def requested(signum: int, frame) -> None:
        if STOP.is_set():  # a second one: at once
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        STOP.set()
        raise StopRequested

    signal.signal(signal.SIGTERM, requested)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


STOPPED = "[streaming] stopped: a stop was requested (SIGTERM); the next start resumes from the checkpoint"
