"""`python -m ops.reset`: start the stream afresh from bronze, as if it had never stopped.

A checkpoint holds the query's Kafka offsets and its engine state: every event id accepted
(streaming/plan.py). When it is lost or damaged, a reset rebuilds what it stood for from the full
log:

1. the checkpoint is moved aside (kept, for a post-mortem);
2. silver, quarantine and gold are rebuilt from bronze by the batch job, in place;
3. the seed table gets the rebuilt silver's event ids (the rebuilt user_sessions hold the metric
   keys each user is counted in: the stream counts distinct users against them);
4. the next `python -m streaming run` starts a new checkpoint (a new idempotency id for its commits): it
   reads the seed into its state first, with Kafka held back so that no live copy of an event can
   race its original, then Kafka right after the last offset bronze holds.

The stream must be stopped: a reset refuses to run while a live stream holds its lease (in every
environment); otherwise it first takes a new epoch and claims the stream's tables, so that no
zombie of the stream can commit into what it rebuilds (eo/runtime/live_tables.py).
"""

from __future__ import annotations

import argparse
import sys

from batch.rebuild import rebuild
from eo.core.tables import SEED, SILVER
from eo.runtime import lake, live_tables
from eo.runtime.cli import EXIT_CODES, NOT_READY, NotReady, guarded
from eo.runtime.config import STREAM_QUERY, Settings, load_settings
from eo.runtime.environment import environment
from eo.runtime.live_tables import RESET, holding_live_tables
from eo.runtime.sinks import postgres
from eo.runtime.spark import build_session, close_state_stores

QUERY = STREAM_QUERY


def write_seed(spark, settings: Settings) -> int:
    """The seed: each accepted event's id and time, from silver. Returns how many. (A seed written
    by a release before sources were declared has a user tuple's columns too: left null.)"""
    seed = lake.read(spark, settings, SILVER).select(*SEED.columns)
    lake.overwrite(seed, settings.table_path(SEED.name))
    return lake.read(spark, settings, SEED).count()


def reset(settings: Settings) -> int:
    try:
        with holding_live_tables(settings, RESET) as fence:
            return _reset(settings, fence)
    except NotReady as refusal:
        print(refusal, file=sys.stderr)
        return NOT_READY


def _reset(settings: Settings, fence) -> int:
    owner = live_tables.owner(settings, fence)  # the app id claimed: before the checkpoint moves away
    spark = build_session("eo-streaming-reset", settings)
    # A query this process ran and stopped still has its state stores open, and their maintenance
    # uploads a pending snapshot into the checkpoint's path: after the move, into the new one.
    close_state_stores()
    checkpoint = settings.checkpoint_path(QUERY)
    if archived := lake.move_aside(spark, checkpoint, "reset"):
        print(f"[reset] checkpoint moved to {archived}", flush=True)
    stats = rebuild(spark, settings, target="main", fence=fence, owner=owner)
    print(f"[reset] silver, quarantine and gold rebuilt from {stats['bronze_rows']:,} bronze records", flush=True)
    seeded = write_seed(spark, settings)
    print(f"[reset] seed written: {seeded:,} event ids for the stream's state", flush=True)
    dsn = environment(settings).sink_dsn
    if dsn:
        postgres.reset(dsn, QUERY)
        print("[reset] PostgreSQL sink tables emptied: they receive what the stream adds from now on", flush=True)
    print("[reset] done: the next `streaming run` reads the seed, then Kafka after bronze's last offset")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.reset", description=__doc__.split("\n")[0], epilog=EXIT_CODES)
    parser.parse_args(argv)
    try:
        return reset(load_settings())
    finally:
        close_state_stores()


def cli(argv: list[str] | None = None) -> int:
    """The process's entry point (`python -m ops.reset`, `spark-submit jobs/reset.py`)."""
    return guarded(main, argv)


if __name__ == "__main__":
    raise SystemExit(cli())
