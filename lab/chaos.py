"""The fault-injection lab (`make chaos`): effectively-once under crashes, zombies and broker
restarts, with the three delivery guarantees of the PostgreSQL sink side by side.

It serves the source EO_SOURCE names (eo/core/sources/; `make chaos` runs the clickstream, then
`orders`): that source's generator, stream, kill points and tables. The PostgreSQL sinks deliver
the clickstream's counted table; a source without one (orders) runs the same faults against its
Delta tables alone, its one guarantee exactly-once.

    python -m lab.chaos [--seed N] [--kills 20] [--broker-restarts 2] [--zombies 1] [--rate 400]
    python -m lab.chaos --smoke       # the short version `make test` runs
    python -m lab.chaos --no-operator-faults   # the crash phase alone

Real processes throughout: a Kafka broker, PostgreSQL, the streaming job under spark-submit.
While a producer publishes (with malformed records), the lab SIGKILLs the streaming driver at
random moments and at named commit points, kills and restarts the broker, and pauses one
instance while a second one takes over. All three guarantees are delivered by the same job, so
they live through the very same schedule. Afterwards the stream catches up, the batch rebuild
recomputes everything from bronze, and the lab counts what each guarantee lost or repeated.

Then (not in the smoke) the operator phase (lab/operator_faults.py): faults that are not
crashes, each met with the command its one line names, on a lake of its own.

Exits 0 only if exactly-once lost, repeated and mismatched nothing, the weaker guarantees did
show losses or duplicates (otherwise the lab could not see what it is for), and every operator
fault said what it should and lost and doubled nothing.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import shutil
import signal
import statistics
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from eo.core.gold import DECLARED, counting_table
from eo.core.sources import SELECTED
from eo.runtime.config import REPO_ROOT, STREAM_QUERY, load_settings
from eo.runtime.kafka_admin import ensure_topic
from infra.kafka import Broker
from infra.postgres import Postgres
from lab import report as lab_report
from lab.instances import STREAM_ARGS, Instance
from lab.operator_faults import OperatorFaults
from lab.schedule import HOOKS, Fault, draw
from lab.timeline import LagSampler, Timeline
from lab.weak_sinks import GUARANTEES
from producer.generator import Rates
from producer.publish import publish
from producer.sources import generator_for

REPORTS = REPO_ROOT / "reports" / "chaos"
# The PostgreSQL sinks deliver the increments of the served source's counted table: none, no sinks.
SINKS = counting_table() is not None


@dataclass(frozen=True)
class LabConfig:
    seed: int
    kills: int
    broker_restarts: int
    zombies: int
    rate: float
    hooks: tuple[str, ...] = HOOKS
    require_weaker: bool = True  # fail if the weaker guarantees show nothing
    kafka_port: int = 29092
    pg_port: int = 25432

    @classmethod
    def smoke(cls, seed: int) -> LabConfig:
        """A few minutes: two random kills and one inside the exactly-once transaction (without
        sinks, right after the last gold table's commit)."""
        hook = "sink.exactly-once.before_commit" if SINKS else HOOKS[-1]
        return cls(
            seed=seed, kills=3, broker_restarts=1, zombies=1, rate=150, hooks=(hook,), require_weaker=False,
        )  # fmt: skip


class Producer(threading.Thread):
    """Publishes a clickstream at `rate` events/s until stopped, recording every ack."""

    def __init__(self, settings, seed: int, rate: float, ack_log: Path) -> None:
        super().__init__(daemon=True)
        self.settings, self.seed, self.rate, self.ack_log = settings, seed, rate, ack_log
        self.stopping = threading.Event()
        self.stats = None

    def paced(self):
        rates = Rates(duplicate=0.03, late=0.02, very_late=0.005, malformed=0.02)
        generator = generator_for(SELECTED.name).make(self.seed, rates, span_hours=6, total_events=10_000_000)
        started = time.monotonic()
        for n, message in enumerate(generator.messages()):
            if self.stopping.is_set():
                return
            ahead = n / self.rate - (time.monotonic() - started)
            if ahead > 0:
                time.sleep(ahead)
            yield message

    def run(self) -> None:
        self.stats = publish(self.paced(), self.settings, self.ack_log, progress_every=30, log=lambda *_: None)

    def stop(self) -> None:
        self.stopping.set()
        self.join()


class Lab:
    def __init__(self, config: LabConfig) -> None:
        self.config = config
        served = "" if SELECTED.name == "clicks" else f"-{SELECTED.name}"
        self.run_id = f"{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%SZ}{served}-seed{config.seed}"
        self.workdir = REPO_ROOT / "data" / "chaos" / self.run_id
        self.timeline = Timeline()
        self.broker = Broker(config.kafka_port, self.workdir / "kafka")
        self.postgres = Postgres(config.pg_port, self.workdir / "postgres")
        self.instances: list[Instance] = []
        self.recoveries: list[float] = []
        self.zombie_checks: list[dict] = []
        self.live: Instance | None = None

    # -- setup ---------------------------------------------------------------------------------
    def environment(self) -> dict[str, str]:
        sinks = {"EO_PG_DSN": self.postgres.dsn(), "EO_PG_GUARANTEES": ",".join(GUARANTEES)} if SINKS else {}
        return {
            "EO_LAKE_ROOT": str(self.workdir / "lake"),
            "EO_CHECKPOINT_ROOT": str(self.workdir / "checkpoints"),
            "EO_ACKS_ROOT": str(self.workdir / "acks"),
            "EO_REPORTS_ROOT": str(self.workdir / "reports"),
            "EO_KAFKA_BOOTSTRAP": self.broker.bootstrap,
            "EO_TOPIC": "chaos" if SELECTED.name == "clicks" else f"chaos-{SELECTED.topic}",
            **sinks,
            "EO_FAULT_LOG": str(self.workdir / "faults.jsonl"),
        }

    def setup(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.broker.start()
        if SINKS:
            self.postgres.start()
        self.env = self.environment()
        os.environ.update({k: v for k, v in self.env.items() if k != "EO_FAULT_LOG"})
        self.settings = load_settings()
        ensure_topic(self.settings)

    # -- one streaming instance ------------------------------------------------------------------
    def start_instance(self, args: list[str] | None = None, **fault_env: str) -> Instance:
        number = len(self.instances) + 1
        log = self.workdir / "instances" / f"{number}.log"
        instance = Instance(number, self.settings, {**self.env, **fault_env}, log, args=args or list(STREAM_ARGS))
        self.instances.append(instance.start())
        self.timeline.add("start", instance=number, **({"hook": fault_env["EO_FAULT_POINT"]} if fault_env else {}))
        return instance

    def recovered(self, instance: Instance) -> bool:
        seconds = instance.wait_first_commit()
        if seconds is None:
            return False
        self.recoveries.append(round(seconds, 1))
        self.timeline.add("first_commit", instance=instance.number, seconds=round(seconds, 1))
        return True

    def apply(self, fault: Fault) -> None:
        handler = getattr(self, f"fault_{fault.kind}")
        handler(fault)

    # A driver that lives through a fault (the zombie's successor, one that rode out a broker
    # restart) carries on into the next fault, rather than being replaced: each start costs
    # half a minute of JVM and session start-up on this machine, and adds nothing to the test.
    def running_instance(self) -> Instance:
        live = self.live if self.live is not None and self.live.alive else None
        self.live = None
        if live is not None:
            return live
        instance = self.start_instance()
        self.recovered(instance)
        return instance

    def retire_live(self) -> None:
        """A hook needs a driver started with it armed: the live one is SIGKILLed (a kill like any)."""
        if self.live is not None and self.live.alive:
            self.live.kill()
            self.timeline.add("kill", instance=self.live.number)
        self.live = None

    def fault_kill(self, fault: Fault) -> None:
        instance = self.running_instance()
        time.sleep(fault.delay)
        instance.kill()
        self.timeline.add("kill", instance=instance.number)

    def fault_hook(self, fault: Fault) -> None:
        self.retire_live()
        instance = self.start_instance(EO_FAULT_POINT=fault.point, EO_FAULT_AFTER=str(fault.after))
        code = instance.wait(240)
        if code is None:  # the point never came: crash it anyway, so the count holds
            instance.kill()
        self.timeline.add("hook", instance=instance.number, point=fault.point, exit=instance.proc.returncode)

    def fault_broker(self, fault: Fault) -> None:
        instance = self.running_instance()
        self.broker.kill()
        self.timeline.add("broker_kill")
        time.sleep(fault.delay)
        self.broker.start()
        self.timeline.add("broker_start")
        time.sleep(5)  # the job rides it out, or dies and the next fault starts another
        self.live = instance

    def fault_zombie(self, fault: Fault) -> None:
        zombie = self.running_instance()
        zombie.signal(signal.SIGSTOP)
        self.timeline.add("zombie_pause", instance=zombie.number)
        successor = self.start_instance(args=[*STREAM_ARGS, "--take-over"])  # it fences the stuck one
        self.recovered(successor)
        resumed_at = time.time()
        zombie.signal(signal.SIGCONT)
        self.timeline.add("zombie_resume", instance=zombie.number)
        code = zombie.wait(120)
        if zombie.fenced:
            self.timeline.add("zombie_fenced", instance=zombie.number)
        else:
            self.timeline.add("zombie_not_fenced", instance=zombie.number, exit=code)
            zombie.kill()
        self.zombie_checks.append({"epochs": epochs_of(zombie), "resumed_at": resumed_at, "fenced": zombie.fenced})
        time.sleep(fault.delay)
        self.live = successor

    # -- the run ---------------------------------------------------------------------------------
    def run(self) -> dict:
        c = self.config
        faults = draw(c.seed, c.kills, c.broker_restarts, c.zombies, c.hooks)
        self.setup()
        producer = Producer(self.settings, self.config.seed, self.config.rate, self.workdir / "acks" / "acks.csv")
        sampler = LagSampler(self.settings, self.timeline)
        producer.start()
        sampler.start()
        try:
            for n, fault in enumerate(faults, 1):
                print(f"[lab] fault {n}/{len(faults)}: {fault}", flush=True)
                self.apply(fault)
            producer.stop()
            self.timeline.add("producer_stopped", sent=producer.stats.sent, acked=producer.stats.acked)
            self.retire_live()
            final = self.start_instance(args=["run", "--until-caught-up"])
            if final.wait(1800) != 0:
                raise RuntimeError(f"the final catch-up run failed; see {final.log}")
            self.timeline.add("caught_up")
        finally:
            sampler.stop()
            if producer.is_alive():
                producer.stop()
            for instance in self.instances:
                if instance.alive:
                    instance.kill()
        return self.evaluate(producer.stats.acked)

    def evaluate(self, acked: int) -> dict:
        """The batch rebuild from bronze, the agreement check, and each sink against the rebuild."""
        from batch.rebuild import rebuild
        from batch.verify import describe, verify
        from eo.runtime.spark import build_session
        from lab.sink_check import check_sinks, silver_duplicates

        spark = build_session("eo-chaos-evaluate", self.settings)
        rebuild(spark, self.settings)
        verdict = verify(spark, self.settings)
        print(describe(verdict), flush=True)
        verdict_path = Path(self.settings.source_reports) / "verify" / "latest.json"
        guarantees = list(GUARANTEES) if SINKS else ["exactly-once"]  # without sinks: the Delta tables'
        none = {"postgres_lost": 0, "postgres_duplicated": 0, "postgres_mismatched_rows": 0}
        sinks = check_sinks(spark, self.settings, self.postgres.dsn(), guarantees) if SINKS else {"exactly-once": none}
        silver_rows, silver_dups = silver_duplicates(spark, self.settings)
        gold_delta = sum(
            t["missing"] + t["extra"] + t["different"] for name, t in verdict["tables"].items() if name in DECLARED
        )
        refused = sum(1 for z in self.zombie_checks if z["fenced"])
        zombie_rows = self.rows_committed_by_zombies()
        faults = {
            "sigkill_random": self.timeline.count("kill"),
            "sigkill_at_commit_points": self.timeline.count("hook"),
            "broker_restarts": self.timeline.count("broker_kill"),
            "zombies": len(self.zombie_checks),
        }
        recovery = {
            "p50": round(statistics.median(self.recoveries), 1) if self.recoveries else None,
            "max": max(self.recoveries, default=None),
        }
        lost = verdict["reconciliation"].get("lost", 0)
        rows = {}
        for guarantee in guarantees:
            sink = sinks[guarantee]
            row = {
                "kills": faults["sigkill_random"] + faults["sigkill_at_commit_points"],
                "faults": faults,
                "events_acked": acked,
                "silver_rows": silver_rows,
                "lost": lost,
                "duplicated": silver_dups,
                "postgres_lost": sink["postgres_lost"],
                "postgres_duplicated": sink["postgres_duplicated"],
                "gold_mismatched_rows": gold_delta + sink["postgres_mismatched_rows"],
                "zombie_commits_refused": refused,
                "zombie_rows_after_resume": zombie_rows,
                "recovery_seconds": recovery,
            }
            row["passed"] = lab_report.promised(guarantee, row, verdict["passed"], len(self.zombie_checks))
            rows[guarantee] = row
        weaker_visible = (
            SINKS and rows["at-least-once"]["postgres_duplicated"] > 0 and rows["at-most-once"]["postgres_lost"] > 0
        )
        return {
            "run_id": self.run_id,
            "seed": self.config.seed,
            "events_acked": acked,
            "verdict": str(verdict_path),
            "guarantees": rows,
            "weaker_guarantees_visible": weaker_visible,
            "passed": rows["exactly-once"]["passed"] and (weaker_visible or not self.config.require_weaker),
        }

    def rows_committed_by_zombies(self) -> int:
        """Commits (PostgreSQL and Delta) made with a zombie's epochs after it was resumed: none."""
        from lab.sink_check import delta_commits_by_epoch

        total = 0
        for z in self.zombie_checks:
            for job, epoch in z["epochs"].items():
                total += delta_commits_by_epoch(self.settings, job, epoch, z["resumed_at"])
        if not SINKS:
            return total
        import psycopg

        with psycopg.connect(self.postgres.dsn()) as conn:
            for z in self.zombie_checks:
                for job, epoch in z["epochs"].items():
                    total += conn.execute(
                        "SELECT count(*) FROM sink_commits WHERE job = %s AND epoch = %s "
                        "AND committed_at > to_timestamp(%s)",
                        (job, epoch, z["resumed_at"]),
                    ).fetchone()[0]
        return total

    def teardown(self, keep: bool) -> None:
        self.broker.stop()
        if SINKS:
            self.postgres.stop()
        if not keep:  # the report and the instances' logs stay; the bulky data goes
            for folder in ("lake", "kafka", "postgres", "checkpoints"):
                shutil.rmtree(self.workdir / folder, ignore_errors=True)


def epochs_of(instance: Instance) -> dict[str, int]:
    """The epochs an instance took per query, from the line it logs at start."""
    found = re.findall(rf"({re.escape(STREAM_QUERY)}) epoch (\d+)", instance.log.read_text(errors="replace"))
    return {q: int(e) for q, e in found}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.chaos", description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=int(os.environ.get("EO_CHAOS_SEED", "7")))
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--broker-restarts", type=int, default=2)
    parser.add_argument("--zombies", type=int, default=1)
    parser.add_argument("--rate", type=float, default=400.0, help="events per second produced meanwhile")
    parser.add_argument("--smoke", action="store_true", help="3 kills, 1 broker restart, 1 zombie")
    parser.add_argument("--keep", action="store_true", help="keep the lake and broker data of the run")
    parser.add_argument(
        "--operator-faults",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="then the operator phase (lab/operator_faults.py, ~15 min; clicks only); off for --smoke",
    )
    args = parser.parse_args(argv)
    if args.operator_faults is None:
        args.operator_faults = not args.smoke and SINKS
    if args.operator_faults and not SINKS:  # its faults are staged on the clickstream's tables
        print(f"the operator phase runs on the clickstream only: add --no-operator-faults for {SELECTED.name}")
        return 2
    os.environ["TZ"] = "UTC"
    time.tzset()
    config = (
        LabConfig.smoke(args.seed)
        if args.smoke
        else LabConfig(args.seed, args.kills, args.broker_restarts, args.zombies, args.rate, require_weaker=SINKS)
    )
    lab = Lab(config)
    started = time.monotonic()
    try:
        result = lab.run()
        if args.operator_faults:
            phase = OperatorFaults(lab.workdir / "operator", lab.broker.bootstrap, config.seed).run()
            result["operator_faults"] = phase
            result["passed"] = result["passed"] and phase["passed"]
    finally:
        lab.teardown(args.keep)
    folder = REPORTS / lab.run_id
    html_path = lab_report.write(folder, result, lab.timeline)
    lab_report.point_latest(REPORTS, folder)
    print()
    print(lab_report.table_text(result))
    if not SINKS:
        print(f"({SELECTED.name} has no PostgreSQL sinks, which deliver the clickstream's counted table: zeros there)")
    recovery = result["guarantees"]["exactly-once"]["recovery_seconds"]
    print(f"\nrecovery (restart -> first committed batch): p50 {recovery['p50']} s, max {recovery['max']} s")
    print(f"{'PASSED' if result['passed'] else 'FAILED'} in {time.monotonic() - started:.0f} s; report: {html_path}")
    if config.require_weaker and not result["weaker_guarantees_visible"]:
        print("the weaker guarantees showed neither loss nor duplicates: the lab did not see what it is for")
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
