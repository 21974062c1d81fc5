"""What every command line does with a failure it knows: one line that says what to do next.

    raise SystemExit(guarded(main))

Exit codes, the same for every entry point (each `--help` says them):
  0 done; 1 the work ran and found a problem (verification failed, records not acknowledged);
  2 bad arguments; 3 not ready (a service down, a table or a jar missing, the stream running).
Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Callable

OK, FAILED, USAGE, NOT_READY = 0, 1, 2, 3
EXIT_CODES = (
    "exit codes: 0 done, 1 the work found a problem (verification failed, records not acknowledged), "
    "2 bad arguments, 3 not ready (a service down, a table or jar missing, an interval not rebuilt)"
)


class Progress:
    """One line as each step of long work starts ("[rebuild] 2/4 silver (t+14 s)"): a rebuild or a
    verification of millions of events takes minutes. `clock` is there for tests."""

    def __init__(self, label: str, steps: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.label, self.steps, self.clock, self.done = label, steps, clock, 0
        self.started = clock()

    def elapsed(self) -> float:
        """Seconds since the work started: the figure its stats report as well."""
        return self.clock() - self.started

    def step(self, name: str) -> None:
        self.done += 1
        print(f"[{self.label}] {self.done}/{self.steps} {name} (t+{self.elapsed():.0f} s)", flush=True)


class NotReady(RuntimeError):
    """Something this command needs is not there yet; the message says what to do."""


class Refused(NotReady):
    """Not ready, and trying again soon will not change it (another writer holds the live tables,
    whose normal state is held): a scheduler that runs the command does not retry it."""


# Set by whoever runs a command in a subprocess (the DAGs' Spark operator): the one line of a known
# failure is written there as JSON ({"code", "line", "retry"}), so the caller can say it first.
ONE_LINE_FILE = "EO_ONE_LINE_FILE"


def record_one_line(code: int, line: str, retry: bool) -> None:
    """Write the failure's one line where ONE_LINE_FILE names (nothing when it is unset)."""
    if path := os.environ.get(ONE_LINE_FILE):
        with open(path, "w", encoding="utf-8") as out:
            json.dump({"code": code, "line": line, "retry": retry}, out)


def read_one_line(path: str) -> dict | None:
    """What `record_one_line` wrote at `path`, or None when the command wrote nothing there."""
    try:
        with open(path, encoding="utf-8") as found:
            return json.load(found)
    except (OSError, ValueError):
        return None


def _kafka_down(exc: BaseException) -> bool:
    try:
        from confluent_kafka import KafkaError, KafkaException
    except ImportError:  # pragma: no cover - confluent-kafka is a dependency
        return False
    if not isinstance(exc, KafkaException) or not exc.args or not isinstance(exc.args[0], KafkaError):
        return False
    return exc.args[0].code() in (KafkaError._TRANSPORT, KafkaError._TIMED_OUT, KafkaError._ALL_BROKERS_DOWN)


def _disk_full(exc: BaseException) -> bool:
    """ENOSPC, raised here or in a Spark task, a JVM or delta-rs (their errors carry its text)."""
    return (isinstance(exc, OSError) and exc.errno == 28) or "No space left on device" in str(exc)


def _missing_table(exc: BaseException) -> str | None:
    """The path of a Delta table that is not there, from Spark's or delta-rs's error."""
    text = str(exc)
    spark_classes = ("DELTA_MISSING_DELTA_TABLE", "PATH_NOT_FOUND", "DELTA_TABLE_NOT_FOUND")
    if type(exc).__name__ == "AnalysisException" and any(name in text for name in spark_classes):
        return text.split("\n")[0]
    if type(exc).__name__ == "TableNotFoundError":
        return text.split("\n")[0]
    return None


def _missing_table_line(error_line: str) -> str:
    """What to run for a missing table: a rebuild for one under _rebuild/, else the stream."""
    found = re.search(r"([a-z0-9]+://|/)[^\s`'\"]+", error_line)
    where = found.group(0).rstrip(".,;:") if found else error_line
    if "/_rebuild/" in where:
        return f"no rebuild at {where} yet: run `python -m batch.rebuild` (or the rebuild_derived DAG) first"
    return f"a table is missing at {where}: run the stream or `make demo` first"


# Spark's refusal to resume a checkpoint whose engine state another release of the query wrote:
# a state's key or value schema, or the operator itself, changed.
_STATE_FROM_ANOTHER_RELEASE = (
    "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE",
    "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE",
    "STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA",
)


def explain(exc: BaseException) -> tuple[int, str] | None:
    """(exit code, one line) for a failure a person can fix; None for a bug."""
    from eo.runtime.jars import MissingJarsError

    if isinstance(exc, NotReady):
        return NOT_READY, str(exc)
    if isinstance(exc, MissingJarsError):
        return NOT_READY, f"{exc} (run `make jars`)"
    if _kafka_down(exc):
        from eo.runtime.config import load_settings

        bootstrap = load_settings().kafka_bootstrap
        return NOT_READY, f"Kafka is not reachable at {bootstrap}: start it with `make kafka-start`"
    if _disk_full(exc):
        from eo.runtime.config import load_settings

        settings = load_settings()
        return NOT_READY, (
            f"a disk is full (No space left on device) where this job writes: the lake ({settings.lake_root}) "
            f"or the checkpoints ({settings.checkpoint_root}). What failed was not committed; free space, then "
            "run it again (a stream reads the failed batch again)"
        )
    table = _missing_table(exc)
    if table:
        return NOT_READY, _missing_table_line(table)
    if any(name in str(exc) for name in _STATE_FROM_ANOTHER_RELEASE):
        return NOT_READY, (
            "the checkpoint's engine state was written by another release of the stream: stop it, run "
            "`python -m ops.reset`, then start it (docs/operations.md, upgrading)"
        )
    return None


def guarded(main: Callable[[list[str] | None], int], argv: list[str] | None = None) -> int:
    """Run `main`; a known failure becomes one line on stderr and its exit code. Spark's log of
    the drivers it starts goes to a file (eo/runtime/job_log.py), which the line names."""
    from eo.runtime import job_log

    log, before = job_log.begin(getattr(main, "__module__", "command").replace("__main__", "command"))
    try:
        return main(argv)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        known = explain(exc)
        if known is None:
            raise
        code, line = known
        print(f"error: {line}{job_log.named(log)}", file=sys.stderr)
        record_one_line(code, line, retry=not isinstance(exc, Refused))
        return code
    finally:
        job_log.end(before)
