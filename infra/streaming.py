"""The streaming job as a long-running local service (what the supervisor DAG restarts).

    python -m infra.streaming start|standby|stop|status|kill [-- extra streaming args]
    python -m infra.streaming status [--json] [--check]

It is `spark-submit jobs/stream.py run`, detached, with its pid and log under
data/services/streaming-<topic>/. A restart resumes from the queries' checkpoints. `standby`
starts a warm second driver (`run --standby`) that takes over the moment the job dies; once it
has, it is the job (its pid file is promoted), and another standby can be started.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path

from eo.runtime.config import REPO_ROOT, Settings, load_settings
from eo.runtime.submit import submit_command, submit_env
from infra import process, service
from infra.status import Status, seconds

SERVICES_DIR = REPO_ROOT / "data" / "services"


def _kafka_error(exc: BaseException) -> str:
    """librdkafka's own words ("Local: Broker transport failure"), not its error's repr."""
    error = exc.args[0] if exc.args else exc
    return error.str() if hasattr(error, "str") else str(error)


def home(settings: Settings) -> Path:
    return SERVICES_DIR / f"streaming-{settings.topic}"


def pid_file(settings: Settings, role: str = "streaming") -> Path:
    return home(settings) / f"{role}.pid"


def _alive(settings: Settings, role: str) -> bool:
    return process.alive(process.read_pid(pid_file(settings, role)))


def _promote(settings: Settings) -> None:
    """A standby outliving the job has taken over (or is about to): from now on it is the job."""
    if not _alive(settings, "streaming") and _alive(settings, "standby"):
        pid_file(settings, "standby").replace(pid_file(settings))


def by_lease(settings: Settings):
    """The stream instance holding the stream's lease (eo/runtime/fencing.py HeldBy), however it was
    started (`make stream-start`, `python -m streaming run` or spark-submit by hand, another
    machine), unless its hold is over or its process is known gone; None otherwise."""
    from eo.runtime.live_tables import is_stream, live_holder

    held = live_holder(settings)
    return held if is_stream(held) else None


def instance(held) -> dict | None:
    """The running instance as the lease names it, for status: its pid, host and epoch (the number
    a newer instance's fence is above), or None when no stream holds the lease."""
    from eo.runtime.live_tables import holder_parts

    if held is None:
        return None
    host, pid = holder_parts(held.holder)
    return {"pid": pid, "host": host, "epoch": held.epoch, "renewed_until": held.until, "holder": held.holder}


def _local_pid(held) -> int | None:
    """The holder's process, when it runs on this machine."""
    import socket

    from eo.runtime.live_tables import holder_parts

    host, pid = holder_parts(held.holder) if held else (None, None)
    return pid if host == socket.gethostname() else None


def running(settings: Settings) -> bool:
    """The service's job runs, or another instance of the stream holds the lake's lease."""
    _promote(settings)
    return _alive(settings, "streaming") or by_lease(settings) is not None


def standing_by(settings: Settings) -> bool:
    _promote(settings)
    return _alive(settings, "standby")


def _spawn(settings: Settings, role: str, args: list[str]) -> int:
    """The job as a daemon of its own (process.daemon), run from the checkout, in the caller's
    environment without Airflow's (infra/airflow.py outside_airflow): started by the supervisor's
    Airflow task or from a shell, it outlives whoever started it, and stopping or restarting
    Airflow (`make airflow-stop`, the watchdog) leaves it running."""
    from infra.airflow import outside_airflow

    home(settings).mkdir(parents=True, exist_ok=True)
    cmd = submit_command("jobs/stream.py", ["run", *args], settings)
    log = home(settings) / f"{role}.log"
    return process.daemon(cmd, log, pid_file(settings, role), environ=outside_airflow(submit_env()), cwd=REPO_ROOT)


def start(settings: Settings, args: list[str] | None = None) -> int | None:
    """Start the continuous streaming job unless it runs already; returns the new pid."""
    if running(settings):
        return None
    return _spawn(settings, "streaming", args or [])


def start_standby(settings: Settings, args: list[str] | None = None) -> int | None:
    """Start a warm standby next to the job unless one waits already; returns its pid."""
    if standing_by(settings):
        return None
    return _spawn(settings, "standby", [*(args or []), "--standby"])


def _terminate(settings: Settings, role: str) -> bool:
    """SIGTERM to the job's Python driver, the lease's holder, when it is in the job's process
    group: it stops its query, lets go of the lease and exits 0, and spark-submit with it. The
    whole group gets SIGTERM when there is no such driver (a standby, a job still starting) or
    when it has not ended within 60 s."""
    pid = process.read_pid(pid_file(settings, role))
    if not process.alive(pid):
        return False
    driver = _local_pid(by_lease(settings)) if role == "streaming" else None
    if driver is not None and driver in process.group(pid):
        os.kill(driver, signal.SIGTERM)
        try:
            process.wait_for(lambda: not process.alive(pid), 60, f"{role} exit")
        except TimeoutError:
            print(f"the {role} job did not stop within 60 s of its SIGTERM: its whole process group is stopped")
    if process.alive(pid):
        os.killpg(pid, signal.SIGTERM)
        process.wait_for(lambda: not process.alive(pid), 60, f"{role} exit")
    pid_file(settings, role).unlink(missing_ok=True)
    return True


def stop(settings: Settings) -> bool:
    """The standby first, so that it does not take over from the job being stopped, then the job
    (`_terminate`); then a stream started by hand on this machine that holds the lake's lease."""
    _terminate(settings, "standby")
    stopped = _terminate(settings, "streaming")
    by_hand = _local_pid(by_lease(settings))
    if by_hand is not None and process.alive(by_hand):
        os.kill(by_hand, signal.SIGTERM)
        process.wait_for(lambda: not process.alive(by_hand), 60, "the stream started by hand: exit")
        stopped = True
    return stopped


def hold_file(settings: Settings) -> Path:
    return home(settings) / "stopped-by-hand"


def held(settings: Settings) -> str | None:
    """Why the stream stays stopped: `stream-stop` by hand, until `stream-start` (the supervisor
    DAG would otherwise start it again within 5 minutes)."""
    path = hold_file(settings)
    return f"stopped by hand at {path.read_text().strip()} (make stream-stop)" if path.exists() else None


def started_at(settings: Settings) -> float | None:
    """When the running instance started, in epoch seconds; None when none runs. A standby that
    took over counts from when it was found to have (its pid file promoted: the file's change
    time), not from when it began to wait."""
    _promote(settings)
    return _started(settings, _alive(settings, "streaming"), None)


def _started(settings: Settings, by_service: bool, held) -> float | None:
    """`started_at`, with the service's state and (when it runs none) the lease's holder known:
    the lease is read only when needed (a DynamoDB call in the cloud)."""
    if not by_service:  # started otherwise, if at all: its lease says since when
        return _since(held if held is not None else by_lease(settings))
    path = pid_file(settings)
    began = process.started(process.read_pid(path))
    try:
        changed = path.stat().st_ctime
    except FileNotFoundError:
        return began
    return changed if began is None else max(began, changed)


def _since(held) -> float | None:
    """When a lease holder started, from its holder line (`... since 2026-12-06 16:00:00 UTC`)."""
    import calendar
    import re

    found = re.search(r" since (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC", held.holder) if held else None
    return calendar.timegm(time.strptime(found[1], "%Y-%m-%d %H:%M:%S")) if found else None


def kill(settings: Settings) -> int | None:
    """SIGKILL the whole driver, as a crash would (a standby, if one waits, takes over)."""
    _promote(settings)
    pid = process.read_pid(pid_file(settings))
    if not process.alive(pid):
        return None
    os.killpg(pid, signal.SIGKILL)
    process.wait_for(lambda: not process.alive(pid), 10, "killed streaming job exit")
    return pid


def status(settings: Settings, args: argparse.Namespace | None = None) -> Status:
    """Running or not, standby, lag and freshness of the query, poison records isolated."""
    from confluent_kafka import KafkaException

    from eo.runtime.monitoring import health
    from streaming.poison import read_record

    poison = read_record(settings)
    _promote(settings)
    by_service = _alive(settings, "streaming")
    held = by_lease(settings)  # read once: whoever runs it, however it was started
    up = by_service or held is not None
    try:
        queries, kafka = health(settings), "reachable"
    except KafkaException as exc:  # the lag needs the broker; the rest does not
        queries, kafka = {}, f"not reachable at {settings.kafka_bootstrap} ({_kafka_error(exc)}): make kafka-start"
    since = _started(settings, by_service, held) if up else None
    when = "" if since is None else time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(since))
    started = [] if since is None else [("started", f"{when}, {seconds(time.time() - since)} ago")]
    report = {
        "running": up,
        "started_at": since,  # epoch seconds: the stall judgement counts from it (ops/stream_service.py)
        "standby": standing_by(settings),
        "kafka": kafka,
        "queries": queries,
        "lease_holder": str(held) if held else None,  # whoever runs it, however it was started
        "instance": instance(held),  # its pid, host and epoch
        "poison_records_isolated": poison["records"],
        "last_isolation": poison["isolations"][-1] if poison["isolations"] else None,
    }
    state = "running" if by_service else "stopped (make stream-start)"
    if up and not by_service:
        state = "running, not started by make stream-start (make stream-stop stops it where it runs here)"
    rows: list[tuple[str, object]] = [
        ("streaming job", state),
        *started,
        *([("instance", _instance_line(report["instance"]))] if held else []),
        *([("lease", str(held))] if held else []),
        ("standby", "waiting" if report["standby"] else "none (make stream-standby)"),
    ]
    if not queries:
        rows.append(("Kafka", kafka))
    for name, query in queries.items():
        age = query["seconds_since_commit"]
        done = "no batch committed yet" if age is None else f"last batch {query['last_batch']}, {seconds(age)} ago"
        rows.append((f"query {name}", done))
        lag = ", ".join(f"p{p} {n:,}" for p, n in query["lag_by_partition"].items())
        rows.append(("  Kafka lag", f"{query['lag']:,} records" + (f" ({lag})" if lag else "")))
    if queries:
        report["source_gaps"], gap_rows = _source_gaps(settings)
        rows += gap_rows
    report["lake"], lake_rows = lake_state(settings)
    rows += lake_rows
    report["unknown_fields"], unknown_rows = _unknown_fields(settings)
    rows += unknown_rows
    rows.append(("poison records", f"{poison['records']} isolated (docs/bad-input.md)"))
    rows.append(("log", home(settings) / "streaming.log"))
    return Status(up, report, rows)


def _instance_line(found: dict) -> str:
    where = f"pid {found['pid']} on {found['host']}" if found["pid"] is not None else found["holder"]
    return f"{where}, epoch {found['epoch']}"


def lake_state(settings: Settings) -> tuple[dict, list[tuple[str, object]]]:
    """Where each live table is against the checkpoint's batches, a partial batch named (a failure
    between a batch's table commits: readers see it in some tables until the next start completes
    it), and how the lake began (eo/runtime/lake_origin.py)."""
    from eo.runtime.lake_report import lake_report

    try:
        report = lake_report(settings)
    except Exception as error:  # noqa: BLE001 (status answers whatever the lake holds: the rest still counts)
        line = f"not readable: {type(error).__name__}: {error}".splitlines()[0]
        return {"error": line}, [("tables", line)]
    rows: list[tuple[str, object]] = [("tables", report["tables_line"])]
    rows += [("lake begun", line) for line in report["begun_lines"][-2:]]
    return report, rows


def _unknown_fields(settings: Settings) -> tuple[dict, list[tuple[str, object]]]:
    """Keys records carried that their source's declaration lacks, each with its records: never
    dropped unseen (docs/sources.md)."""
    from eo.core.sources import unknown_field_lines
    from eo.runtime import unknown_fields

    try:
        counts = unknown_fields.counted(settings)
    except Exception as error:  # noqa: BLE001 (status answers whatever the lake holds)
        line = f"not readable: {type(error).__name__}: {error}".splitlines()[0]
        return {"error": line}, [("unknown fields", line)]
    return counts, [("unknown fields", line) for line in unknown_field_lines(counts)] or [("unknown fields", "none")]


def _source_gaps(settings: Settings) -> tuple[dict, list[tuple[str, object]]]:
    """Records lost at the source before the stream's next read (eo/core/source_gaps.py): those no
    one accepted stop the stream until someone does."""
    from eo.core.source_gaps import described
    from eo.runtime import source_gaps
    from streaming.source_loss import accept_command

    gaps, missing = source_gaps.current(settings)
    report = {
        "before_next_read": [{**vars(g), "records": g.records} for g in gaps],
        "not_accepted": [{**vars(g), "records": g.records} for g in missing],
    }
    if missing:
        said = f"{described(missing)}; not accepted: the stream stops at them ({accept_command(missing)})"
        return report, [("lost at the source", said)]
    if gaps:
        return report, [("lost at the source", f"{described(gaps)}; accepted: the stream reads past them")]
    return report, [("lost at the source", "none before the next read")]


def _start(settings: Settings, args: argparse.Namespace) -> None:
    hold_file(settings).unlink(missing_ok=True)  # the supervisor may restart it again
    pid = start(settings, args.extra)
    print(f"streaming job started, pid {pid}" if pid else "streaming job already running")
    print(f"log: {home(settings) / 'streaming.log'}")


def _standby(settings: Settings, args: argparse.Namespace) -> None:
    pid = start_standby(settings, args.extra)
    print(f"standby started, pid {pid}" if pid else "a standby is already waiting")
    print(f"log: {home(settings) / 'standby.log'}")


def _stop(settings: Settings, args: argparse.Namespace) -> None:
    home(settings).mkdir(parents=True, exist_ok=True)
    hold_file(settings).write_text(time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()))
    print("streaming job stopped" if stop(settings) else "streaming job was not running")
    print("the stream_supervisor DAG leaves it stopped until `make stream-start`")


def _kill(settings: Settings, args: argparse.Namespace) -> None:
    pid = kill(settings)
    print(f"streaming job pid {pid} killed" if pid else "streaming job was not running")


def main(argv: list[str] | None = None) -> int:
    return service.main(
        "infra.streaming", __doc__, lambda args: load_settings(), start=_start, stop=_stop, status=status,
        verbs={"standby": _standby, "kill": _kill}, passthrough=("start", "standby"), argv=argv,
    )  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
