"""Run the streaming query, continuously or until caught up.

    python -m streaming run [--until-caught-up] [--trigger-seconds S] [--max-offsets-per-trigger N]
    python -m streaming run --standby [...]   # warm, takes over when the active instance exits
    python -m streaming run --new-lake [...]  # begin a new lake from the topic (recorded in it)

One query, `events`: Kafka -> bronze, quarantine, silver and gold, one micro-batch at a time
(streaming/plan.py, streaming/microbatch.py). spark-submit runs it as `jobs/stream.py ...`.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace

from pyspark.sql import DataFrame

from eo.core.tables import SEED, SILVER, TableDef
from eo.runtime import lake, lake_origin, lake_tables
from eo.runtime.active import ActiveLock
from eo.runtime.cli import EXIT_CODES, NotReady, guarded
from eo.runtime.config import STREAM_QUERY, Settings, load_settings
from eo.runtime.environment import environment
from eo.runtime.fencing import EXIT_FENCED, HEARTBEAT_SECONDS, HOLD_SECONDS, HeldBy, holding
from eo.runtime.kafka_admin import topic_partitions
from eo.runtime.lake import table_exists
from eo.runtime.live_tables import app_id_of, holder, is_stream, live_holder, wait_for_lapse
from eo.runtime.spark import build_session, close_state_stores
from streaming import checkpoint, checkpoint_files, lake_match, source_loss
from streaming.microbatch import MicroBatch
from streaming.plan import Source, kafka_records_between
from streaming.query import (
    Knobs,
    Planned,
    bootstrap_offsets,
    cross_accepted_gaps,
    plan_query,
    read_seed,
    run_query,
)
from streaming.requested_stop import STOP, STOPPED, stop_on_sigterm
from streaming.standby import stand_by
from streaming.takeover import prepare, refused_by, take_over

QUERY = STREAM_QUERY


def run(
    settings: Settings,
    knobs: Knobs,
    standby: bool = False,
    take_over: bool = False,
    after_dead: bool = False,
    new_lake: bool = False,
) -> int:
    """One instance at a time: a start while another instance starts or runs is refused in one
    line naming it (NotReady), unless `take_over` (it is fenced, and so is a reset or a rebuild
    into main: a person's decision, the fault lab's zombie). `after_dead` (the stream supervisor's
    start): a stream instance's hold is waited out until it lapses (a crashed or cancelled driver
    no longer renews it), then fenced by this start's epoch; a reset or a rebuild into main is
    never fenced, and a stream still renewing after the wait is not either: refused in one line.
    A standby waits for its turn instead. The lake and the checkpoint must agree
    (streaming/lake_match.py); `new_lake` begins a new lake from the topic."""
    lock = ActiveLock.for_job(settings, [QUERY])
    if not standby:
        # First thing: a standby must not mistake this instance's start-up for a vacancy.
        if not lock.try_acquire():
            if not take_over:
                raise NotReady(_another(lock.holder(), live_holder(settings)))
            lock.hold()  # taken as soon as the instance it fences exits
        _refuse_while_held(settings, take_over, HOLD_SECONDS + HEARTBEAT_SECONDS if after_dead else 0.0)
    try:
        return _run(settings, knobs, standby, lock, take_over, new_lake)
    finally:
        lock.release()  # the process may go on (tests, tools): the job is over


def _another(who: str, held: HeldBy | None) -> str:
    lease = f" (epoch {held.epoch}, its hold renewed until {held.until})" if held and held.holder == who else ""
    return (
        f"another instance of the stream is starting or running: {who}{lease}. Stop it first "
        "(make stream-stop), or start this one with --take-over to fence it"
    )


def _refuse_while_held(settings: Settings, take_over: bool, wait: float = 0.0) -> None:
    """NotReady while another live holder has the lease (a stream on another machine, a rebuild
    into the live tables, a reset), unless `take_over`. `wait`: seconds a stream's hold is given
    to lapse first (live_tables.py `wait_for_lapse`)."""
    held = live_holder(settings)
    if held is not None and wait and not take_over:
        held = wait_for_lapse(settings, held, wait)
    if held is None or take_over:
        return
    if is_stream(held):
        raise NotReady(_another(held.holder, held))
    raise NotReady(
        f"{held} is writing the stream's live tables: start the stream once it has ended "
        "(or start it with --take-over, which makes that work fail)"
    )


def _partitions(settings: Settings) -> list[int]:
    """The topic's partitions; NotReady (one line, exit 3) when the broker or the topic is missing."""
    partitions = topic_partitions(settings)  # a broker that is down raises: eo/runtime/cli.py explains it
    if not partitions:
        raise NotReady(
            f"topic {settings.topic} not found at {settings.kafka_bootstrap}: create it by producing "
            "(`python -m producer generate`) or with `make demo`"
        )
    return partitions


def plan_ahead(spark, settings: Settings, knobs: Knobs) -> Planned | None:
    """A standby's plan, for the checkpoint the active instance runs on (none before its first batch:
    a new checkpoint's starting offsets are decided at the takeover)."""
    if not checkpoint.has_offsets(settings, QUERY):
        return None
    return plan_query(spark, settings, Source(max_offsets_per_trigger=knobs.max_offsets_per_trigger))


def _run(
    settings: Settings,
    knobs: Knobs,
    standby: bool,
    lock: ActiveLock,
    take_over_held: bool = False,
    new_lake: bool = False,
) -> int:
    began = time.monotonic()
    _partitions(settings)  # before Spark starts: a broker that is down is said in seconds
    beginning = None  # likewise a damaged or lost checkpoint or lake, and records gone from Kafka
    if not standby:
        beginning = _checked_before_spark(settings, new_lake)
    spark = build_session("eo-streaming", settings)
    aside = lake_match.keep_aside(spark, settings) if beginning == lake_origin.NEW_LAKE else None
    found_before = lake_match.present_tables(settings)
    prepare(spark, settings)
    _record_tables(settings, found_before)
    if beginning is not None:  # once bronze is made: a start that fails later has begun the lake all the same
        _record_beginning(settings, beginning, aside)
    ahead = None
    if standby:
        ahead = stand_by(spark, settings, lock, plan=lambda: plan_ahead(spark, settings, knobs))
        began = time.monotonic()  # from here on it is a start like any other, only warm
        whole(settings)  # the checkpoint as the instance it replaces left it
    partitions = _partitions(settings)
    new = not checkpoint.has_offsets(settings, QUERY)
    seeding = new and _seeding(spark, settings)  # refuses a new checkpoint that would forget events
    starting = bootstrap_offsets(spark, settings, partitions) if new else None
    skips = source_loss.before_start(settings, starting)  # refuses while records are gone no one accepted
    past = source_loss.past_accepted(settings, starting) if skips else {}
    if starting is not None and past:  # a new checkpoint starts after them: Spark's check stays on
        starting = source_loss.starting_past(starting, settings.topic, past)
    started = time.monotonic()
    if not standby:
        _refuse_while_held(settings, take_over_held)  # again: a rebuild may have started meanwhile
    app_id = app_id_of(checkpoint.ensure_id(settings, QUERY))
    fence, sinks = take_over(settings, app_id)
    with holding(fence):  # a SIGTERM lets go of the lease, then `cli`'s requested stop ends the run
        claimed = time.monotonic()
        source = Source(
            starting_offsets=starting,
            max_offsets_per_trigger=knobs.max_offsets_per_trigger,
        )
        planned = ahead if ahead is not None and ahead.holds(settings, source) else None
        if ahead is not None and planned is None:
            print("[streaming] the plan built while standing by is stale (poison, catalogue, checkpoint)", flush=True)
        print(
            f"[streaming] ready in {time.monotonic() - began:.1f} s (session and tables {started - began:.1f} s, "
            f"fencing claims {claimed - started:.1f} s, checks {time.monotonic() - claimed:.1f} s; "
            f"plan {'built while standing by' if planned else 'built at start'})",
            flush=True,
        )

        def records_of(batch_id: int) -> DataFrame:
            start, end = checkpoint.kafka_range(settings, QUERY, batch_id)
            return kafka_records_between(spark, settings, start, end)

        guard = source_loss.BatchGuard(settings) if skips else None
        batch = MicroBatch(settings, fence, app_id, sinks, records_of=records_of, read_guard=guard)
        try:
            if seeding:
                read_seed(spark, settings, batch, source)
            if past and not new:  # the checkpoint's next read lies before them: its check is off until past them
                cross_accepted_gaps(spark, settings, knobs, batch, replace(source, fail_on_data_loss=False), past)
                planned = None
            return run_query(spark, settings, knobs, batch, source, started, planned)
        except Exception as exc:
            layer = refused_by(exc, fence)
            if layer is None and (failure := checkpoint_files.state_failure(exc)):
                whole(settings)  # names the file, when it can
                state = f"{settings.checkpoint_path(QUERY)}/state"
                line = f"the stream's engine state under {state} cannot be loaded ({failure}). {RESET}"
                raise NotReady(line) from None
            if layer is None and (lost := source_loss.named(settings, exc)):
                raise NotReady(lost) from None
            if layer is None:
                raise
            print(
                f"FENCED: a newer instance of this streaming job has started; {layer} refused this one's "
                f"commit ({QUERY} epoch {fence.epoch}). It stops without committing anything more.",
                file=sys.stderr,
                flush=True,
            )
            return EXIT_FENCED


def whole(settings: Settings) -> None:
    """NotReady naming the first checkpoint file a restart would fail on (streaming/checkpoint_files.py)."""
    try:
        checkpoint_files.check(environment(settings).lake_files, settings.checkpoint_path(QUERY))
    except checkpoint_files.Damaged as damage:
        raise NotReady(f"the stream's checkpoint is damaged: {damage}. {RESET}") from None


RESET = (
    "Stop every instance and run `python -m ops.reset`: it keeps the checkpoint aside and rebuilds the "
    "engine state and the tables from bronze, nothing lost; then start the stream again"
)


def _record_tables(settings: Settings, found_before: list[str]) -> None:
    """When each live table joined the lake (eo/runtime/lake_tables.py): one declared since the
    last start was created empty by `prepare` and holds the batches after the checkpoint's last."""
    from eo.runtime.monitoring import last_committed_batch

    committed = last_committed_batch(settings.checkpoint_path(QUERY), environment(settings).lake_files)
    joined = lake_tables.record(settings, found_before, lake_match.present_tables(settings), committed)
    for name in joined:
        print(f"[lake] {name} joined the lake after batch {committed}: it holds the batches from here on", flush=True)


def _record_beginning(settings: Settings, how: str, aside: str | None) -> None:
    """The lake's beginning, in the lake (eo/runtime/lake_origin.py): from the topic's earliest offsets."""
    from eo.runtime.source_gaps import earliest_offsets

    note = f"the checkpoint of the lake before moved to {aside}" if aside else ""
    entry = lake_origin.record(settings, how, holder(), earliest_offsets(settings), note)
    print(f"[streaming] the lake at {settings.lake_root}: {lake_origin.described(entry)}", flush=True)


def _checked_before_spark(settings: Settings, new_lake: bool = False) -> str | None:
    """What can be refused from files, the lake's logs and the broker alone, in seconds: the
    checks after the session repeat them (`_run`), with Spark where a count needs it. Returns how
    the lake begins with this start, if it does (streaming/lake_match.py)."""
    if new_lake:  # the checkpoint goes aside: only the lake is checked
        return lake_match.check(settings, new_lake=True)
    whole(settings)
    beginning = lake_match.check(settings)
    if checkpoint.has_offsets(settings, QUERY):
        source_loss.before_start(settings, None)
    elif table_exists(settings, settings.table_path(SILVER.name)):
        _seeding(None, settings)
    return beginning


def _rows(spark, settings: Settings, table: TableDef) -> int | None:
    """A table's rows, from its log's statistics (a Spark count where a file has none; without a
    session, None)."""
    if not table_exists(settings, settings.table_path(table.name)):
        return 0
    counted = environment(settings).table(table.name).records()
    if counted is None and spark is not None:
        return lake.read(spark, settings, table).count()
    return counted


def _seeding(spark, settings: Settings) -> bool:
    """For a new checkpoint: whether it reads the seed into its engine state first (a reset left
    one). NotReady when silver holds events the new state would not know: the checkpoint was
    lost, or points at the wrong place, and starting would accept copies of them again.

    The seed is current when it holds as many ids as silver (a reset writes it from silver, and
    silver only grows): every id silver holds."""
    events = _rows(spark, settings, SILVER)
    seeded = _rows(spark, settings, SEED)
    if events is None or seeded is None:  # without a session, and a file without statistics: later
        return False
    if events == 0 or seeded == events:
        return seeded > 0
    stale = f" (the seed holds {seeded:,} ids from an earlier reset)" if seeded else ""
    raise NotReady(
        f"the stream's checkpoint at {settings.checkpoint_path(QUERY)} has no batch, but silver holds "
        f"{events:,} events{stale}: a new checkpoint would start with an empty engine state and accept copies "
        "of them again. If the checkpoint was lost or damaged, run `python -m ops.reset` (it rebuilds the state "
        "from the log, nothing lost), then start the stream; if the path is wrong, set EO_CHECKPOINT_ROOT"
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m streaming", description=__doc__.split("\n")[0], epilog=EXIT_CODES)
    commands = parser.add_subparsers(dest="command", required=True)
    run_cmd = commands.add_parser("run", help="run the streaming query")
    run_cmd.add_argument("--until-caught-up", action="store_true", help="availableNow, then exit")
    run_cmd.add_argument("--trigger-seconds", type=float, default=0.0)
    run_cmd.add_argument("--max-offsets-per-trigger", type=int)
    run_cmd.add_argument(
        "--take-over",
        action="store_true",
        help="start even while another instance runs or a rebuild writes the live tables, and fence it",
    )
    run_cmd.add_argument(
        "--after-dead-stream",
        action="store_true",
        help="start once the stream instance holding the lease no longer answers (its hold lapsed); "
        "never fence a reset or a rebuild into main: what the stream supervisor starts",
    )
    run_cmd.add_argument(
        "--new-lake",
        action="store_true",
        help="begin a new lake from the topic where the lake holds no table (its old checkpoint kept aside); "
        "recorded in the lake",
    )
    run_cmd.add_argument(
        "--standby",
        action="store_true",
        help="start warm, wait for the active instance to exit, then take over (streaming/standby.py)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    settings = load_settings()
    knobs = Knobs(
        until_caught_up=args.until_caught_up,
        trigger_seconds=args.trigger_seconds,
        max_offsets_per_trigger=args.max_offsets_per_trigger,
    )
    if args.standby and knobs.until_caught_up:
        print("--standby is for the continuous job (not --until-caught-up)", file=sys.stderr)
        return 2
    if args.standby and args.new_lake:
        print("--new-lake is for the instance that begins the lake (not --standby)", file=sys.stderr)
        return 2
    return run(
        settings,
        knobs,
        standby=args.standby,
        take_over=args.take_over,
        after_dead=args.after_dead_stream,
        new_lake=args.new_lake,
    )


def cli(argv: list[str] | None = None) -> int:
    """The process's entry point (`python -m streaming`, `spark-submit jobs/stream.py`). A requested
    stop (SIGTERM) exits 0 and says so, whatever the engine's shutdown raised after it."""
    try:
        with stop_on_sigterm():
            code = guarded(main, argv)
    except BaseException:
        if not STOP.is_set():
            raise
        code = 0
    try:
        close_state_stores()
    except Exception:  # after a stop the JVM may be gone: nothing is left to close
        if not STOP.is_set():
            raise
    if STOP.is_set():
        print(STOPPED, file=sys.stderr, flush=True)
        return 0
    return code
