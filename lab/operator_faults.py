"""The fault lab's operator phase: faults an operator meets that are not crashes, one at a time,
each met with the commands the platform's one line names, as an operator would type them.

On a lake and topic of its own (beside the crash phase's broker), with the ack log of every
record the broker accepted:

1. a kill after some of a batch's table commits, then `rebuild --target main`, then a restart;
2. the checkpoint deleted: the start is refused, `ops.reset`, a restart;
3. a checkpoint file garbled: the start is refused naming it, `ops.reset`, a restart;
4. the lake lost (its folder moved away) while its checkpoint survives: the start is refused
   naming both, `streaming run --new-lake` begins a new lake from the topic, recorded in it;
5. the checkpoint of another lake (a second lake on the same topic): refused naming both, a
   start with the lake's own checkpoint;
6. records deleted from Kafka before the stream read them: refused naming the offsets,
   `ops.source_gaps accept`, a restart;
7. two starts half a second apart: the second is refused naming the first;
8. OPTIMIZE and VACUUM again and again beside the live stream: every run exits 0;
9. a disk that fills during a batch (a small tmpfs lake): one line, then a restart with space.

After each, the lab checks the one line it expected (exactly: `EXPECTED`) and that nothing is
lost or counted twice: silver holds each event once, both gold tables add up to silver, and every
acknowledged record is in silver or quarantine, or in a gap a person accepted. At the end the
lake is rebuilt from bronze and verified.
"""

from __future__ import annotations

import itertools
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from eo.runtime.config import REPO_ROOT, Settings, load_settings
from eo.runtime.kafka_admin import ensure_topic
from lab.instances import Instance
from producer.generator import ClickstreamGenerator, Rates
from producer.publish import publish

# The one line each refusal must be: the start of the job's `error:` line on stderr.
EXPECTED = {
    "lost checkpoint": r"^error: the stream's checkpoint at \S+ has no batch, but silver holds [\d,]+ events: a new "
    r"checkpoint would start with an empty engine state .* run `python -m ops\.reset`",
    "damaged checkpoint": r"^error: the stream's checkpoint is damaged: \S+/offsets/\d+: .* run `python -m ops\.reset`",
    "lost lake": r"^error: the lake at \S+ has no tables, but the stream's checkpoint at \S+ holds batches up to \d+"
    r".*: the lake was lost or EO_LAKE_ROOT points at the wrong place.* run `python -m streaming run --new-lake`",
    "another lake's checkpoint": r"^error: the stream's checkpoint at \S+ belongs to another lake: the lake at \S+ "
    r"never saw its commits .*Set EO_CHECKPOINT_ROOT to this lake's own checkpoint",
    "records gone from Kafka": r"^error: records lost at the source before the stream read them, \S+ partition 1 "
    r"offsets \[\d+, \d+\) \(200 records\)\. .*`python -m ops\.source_gaps accept ",
    "two starts at once": r"^error: another instance of the stream is starting or running: the stream on \S+ pid "
    r"(?P<pid>\d+) since [\d-]+ [\d:]+ UTC",
    "disk full": r"^error: a disk is full \(No space left on device\) where this job writes",
}
TOPIC = "chaos-operator"


def _first_gold_point() -> str:
    """Where a partial batch is left: right after the first gold commit of a batch (the table that
    counts distinct users commits before the sessions table)."""
    from eo.core.gold import counting_table
    from streaming.microbatch import commit_point

    return commit_point(counting_table().name)


@dataclass
class Step:
    name: str
    commands: list[dict] = field(default_factory=list)
    said: str | None = None
    expected: str | None = None
    checks: dict = field(default_factory=dict)
    note: str = ""
    passed: bool = False


class OperatorFaults:
    def __init__(self, workdir: Path, bootstrap: str, seed: int) -> None:
        self.workdir, self.seed = workdir, seed
        self.settings = self.settings_under(workdir, TOPIC, bootstrap)
        self.produced = 0
        self.steps: list[Step] = []

    @staticmethod
    def settings_under(root: Path, topic: str, bootstrap: str, lake: Path | None = None) -> Settings:
        lake = lake or root
        return load_settings().with_overrides(
            lake_root=str(lake / "lake"), checkpoint_root=str(lake / "checkpoints"), acks_root=str(root / "acks"),
            reports_root=str(root / "reports"), topic=topic, kafka_bootstrap=bootstrap,
        )  # fmt: skip

    @staticmethod
    def env_of(settings: Settings) -> dict[str, str]:
        keys = ("lake_root", "checkpoint_root", "acks_root", "reports_root", "topic", "kafka_bootstrap")
        return {f"EO_{k.upper()}": str(getattr(settings, k)) for k in keys} | {"EO_PG_DSN": "", "EO_FAULT_POINT": ""}

    # -- what an operator types --------------------------------------------------------------------
    def command(self, step: Step, *args: str, settings: Settings | None = None) -> int:
        """`python -m <args>` as an operator runs it; its exit code, and its `error:` line kept."""
        from eo.runtime.submit import submit_env

        settings = settings or self.settings
        began = time.monotonic()
        log = self.workdir / "logs" / f"{len(self.steps)}-{step.name.replace(' ', '-')}-{len(step.commands)}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        done = subprocess.run([sys.executable, "-m", *args], env=submit_env(self.env_of(settings)), cwd=REPO_ROOT,
                              capture_output=True, text=True)  # fmt: skip
        log.write_text(done.stdout + done.stderr)
        errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
        if errors:
            step.said = errors[-1]
        step.commands.append({"command": " ".join(["python", "-m", *args]), "exit": done.returncode,
                              "seconds": round(time.monotonic() - began, 1), "log": str(log)})  # fmt: skip
        print(f"[operator] {step.name}: python -m {' '.join(args)} -> exit {done.returncode}", flush=True)
        return done.returncode

    def catch_up(self, step: Step, settings: Settings | None = None) -> int:
        return self.command(step, "streaming", "run", "--until-caught-up", "--max-offsets-per-trigger", "3000",
                            settings=settings)  # fmt: skip

    def produce(self, events: int, seed: int, settings: Settings | None = None, first: int | None = None) -> None:
        """`events` records of the generator's `seed`; `first`: only the first that many (sent
        again: copies of what was sent before)."""
        settings = settings or self.settings
        rates = Rates(duplicate=0.04, late=0.02, very_late=0.005, malformed=0.02)
        generator = ClickstreamGenerator(seed, rates, span_hours=6, total_events=events)
        ack_log = Path(settings.acks_root) / f"{settings.topic}-{seed}-{time.time_ns()}.csv"
        messages = itertools.islice(generator.messages(), first)
        stats = publish(messages, settings, ack_log, log=lambda *_: None)
        if stats.acked != (first or events):
            raise RuntimeError(f"the broker acknowledged {stats.acked} of {first or events} records")

    def expect(self, step: Step, name: str) -> re.Match | None:
        step.expected = EXPECTED[name]
        return re.search(EXPECTED[name], step.said or "")

    # -- the steps ---------------------------------------------------------------------------------
    def partial_batch(self, step: Step) -> bool:
        from eo.runtime.live_tables import app_id_of, generation, positions

        self.produce(3000, self.seed + 1)
        env = self.env_of(self.settings) | {"EO_FAULT_POINT": _first_gold_point(), "EO_FAULT_AFTER": "1"}
        args = ["run", "--until-caught-up", "--max-offsets-per-trigger", "1000"]
        killed = Instance(1, self.settings, env, self.workdir / "logs" / "partial-batch.log", args).start()
        killed.wait(600)
        app_id = app_id_of(generation(self.settings))
        left = positions(self.settings, app_id)
        rebuilt = self.command(step, "batch.rebuild", "--target", "main")
        aligned = positions(self.settings, app_id)
        step.checks["positions_after_the_kill"], step.checks["positions_after_the_rebuild"] = left, aligned
        restarted = self.catch_up(step)
        return len(set(left.values())) > 1 and len(set(aligned.values())) == 1 and rebuilt == restarted == 0

    def lost_checkpoint(self, step: Step) -> bool:
        shutil.rmtree(self.settings.checkpoint_path("events"))
        events = self.invariants()["silver"]
        self.produce(4000, self.seed, first=1500)  # sent again: copies of events accepted before
        refused = self.catch_up(step)
        found = self.expect(step, "lost checkpoint")
        recovered = self.command(step, "ops.reset") == 0 and self.catch_up(step) == 0
        step.checks["copies_accepted_again"] = self.invariants()["silver"] - events
        return refused == 3 and bool(found) and recovered and step.checks["copies_accepted_again"] == 0

    def damaged_checkpoint(self, step: Step) -> bool:
        offsets = Path(self.settings.checkpoint_path("events")) / "offsets"
        newest = max((p for p in offsets.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
        newest.write_text("v1\n{garbled")
        (offsets / f".{newest.name}.crc").unlink(missing_ok=True)
        self.produce(1000, self.seed + 2)
        refused = self.catch_up(step)
        found = self.expect(step, "damaged checkpoint")
        return refused == 3 and bool(found) and self.command(step, "ops.reset") == 0 and self.catch_up(step) == 0

    def lost_lake(self, step: Step) -> bool:
        """The lake's folder moved away (a deleted prefix, a wrong EO_LAKE_ROOT), its checkpoint kept."""
        from eo.runtime.lake_origin import NEW_LAKE, begun

        lake = Path(self.settings.lake_root)
        lake.rename(lake.with_name("lake.lost"))
        self.produce(1000, self.seed + 7)
        refused = self.catch_up(step)
        found = self.expect(step, "lost lake")
        began = self.command(step, "streaming", "run", "--until-caught-up", "--new-lake",
                             "--max-offsets-per-trigger", "5000")  # fmt: skip
        recorded = begun(self.settings)
        step.checks["recorded_beginning"] = recorded[-1] if recorded else None
        new_lake = bool(recorded) and recorded[-1]["how"] == NEW_LAKE
        return refused == 3 and bool(found) and began == 0 and new_lake and self.catch_up(step) == 0

    def another_lakes_checkpoint(self, step: Step) -> bool:
        """A second lake on the same topic; this lake started with that lake's checkpoint."""
        other = self.settings_under(self.workdir / "other", TOPIC, self.settings.kafka_bootstrap)
        first = self.catch_up(step, other)
        self.produce(1000, self.seed + 8)
        wrong = self.settings.with_overrides(checkpoint_root=other.checkpoint_root)
        refused = self.catch_up(step, wrong)
        found = self.expect(step, "another lake's checkpoint")
        return first == 0 and refused == 3 and bool(found) and self.catch_up(step) == 0

    def records_gone(self, step: Step) -> bool:
        from confluent_kafka import TopicPartition
        from confluent_kafka.admin import AdminClient

        from eo.runtime.source_gaps import next_offsets

        self.produce(2000, self.seed + 3)
        start = next_offsets(self.settings).get(1, 0)
        admin = AdminClient({"bootstrap.servers": self.settings.kafka_bootstrap})
        for future in admin.delete_records([TopicPartition(self.settings.topic, 1, start + 200)]).values():
            future.result()
        refused = self.catch_up(step)
        found = self.expect(step, "records gone from Kafka")
        accepted = self.command(
            step, "ops.source_gaps", "accept", "--by", "chaos lab", "--reason", "deleted on purpose"
        )
        step.checks["accepted_records"] = 200
        return refused == 3 and bool(found) and accepted == 0 and self.catch_up(step) == 0

    def _continuous(self, name: str) -> tuple[subprocess.Popen, Path]:
        """`python -m streaming run` in the background, its output in a log of its own."""
        from eo.runtime.submit import submit_env

        log = self.workdir / "logs" / f"{name}.log"
        args = [sys.executable, "-m", "streaming", "run", "--trigger-seconds", "1", "--max-offsets-per-trigger", "500"]
        with open(log, "ab") as out:
            process = subprocess.Popen(args, env=submit_env(self.env_of(self.settings)), cwd=REPO_ROOT, stdout=out,
                                       stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
        return process, log

    def two_starts(self, step: Step) -> bool:
        first, first_log = self._continuous("first-start")
        time.sleep(0.5)
        second, second_log = self._continuous("second-start")
        try:
            loser = self._first_to_exit(first, second, 120)
            winner, log = (second, first_log) if loser is first else (first, second_log)
            said = [line for line in log.read_text(errors="replace").splitlines() if line.startswith("error: ")]
            step.said = said[-1] if said else None
            step.commands.append({"command": "python -m streaming run (twice, 0.5 s apart)", "exit": loser.returncode})
            found = self.expect(step, "two starts at once")
            named = bool(found) and int(found["pid"]) == winner.pid
            step.checks["loser_exit"], step.checks["winner_alive"] = loser.returncode, winner.poll() is None
            return loser.returncode == 3 and named and winner.poll() is None
        finally:
            for process in (first, second):
                if process.poll() is None:
                    process.send_signal(signal.SIGTERM)
                    process.wait(60)
            self.catch_up(step)

    @staticmethod
    def _first_to_exit(a: subprocess.Popen, b: subprocess.Popen, timeout: float) -> subprocess.Popen:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for process in (a, b):
                if process.poll() is not None:
                    return process
            time.sleep(0.2)
        raise TimeoutError("neither start ended: two instances run at once")

    def maintenance(self, step: Step) -> bool:
        from lab.bench.pipeline import caught_up

        stream, _ = self._continuous("beside-maintenance")
        try:
            self.produce(3000, self.seed + 4)
            codes = []
            deadline = time.monotonic() + 600
            while len(codes) < 3 or not caught_up(self.settings):
                codes.append(self.command(step, "batch.maintenance", "--optimize", "--vacuum"))
                if stream.poll() is not None or time.monotonic() > deadline:
                    break
            step.checks["maintenance_runs"], step.checks["stream_alive"] = len(codes), stream.poll() is None
            return all(code == 0 for code in codes) and stream.poll() is None
        finally:
            if stream.poll() is None:
                stream.send_signal(signal.SIGTERM)
                stream.wait(60)
            self.catch_up(step)

    def disk_full(self, step: Step) -> bool:
        mount = self.workdir / "small-disk"
        mount.mkdir(parents=True, exist_ok=True)
        made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mount)], capture_output=True)
        if made.returncode != 0:
            step.note = f"skipped: a small file system cannot be mounted here ({made.stderr.decode().strip()})"
            return True
        disk = self.settings_under(self.workdir / "disk", f"{TOPIC}-disk", self.settings.kafka_bootstrap, mount)
        try:
            ensure_topic(disk)
            self.produce(2000, self.seed + 5, disk)
            first = self.catch_up(step, disk)
            ballast = mount / "ballast"
            free = shutil.disk_usage(mount).free
            subprocess.run(["fallocate", "-l", str(max(free - (1 << 20), 0)), str(ballast)], check=True)
            self.produce(10000, self.seed + 6, disk)
            refused = self.catch_up(step, disk)
            found = self.expect(step, "disk full")
            ballast.unlink()
            again = self.catch_up(step, disk)
            step.checks.update(self.invariants(disk), torn_tables=self.torn(disk))
            return first == 0 and refused == 3 and bool(found) and again == 0 and not step.checks["torn_tables"]
        finally:
            subprocess.run(["umount", "-l", str(mount)], capture_output=True)

    # -- checks ----------------------------------------------------------------------------------
    def invariants(self, settings: Settings | None = None) -> dict:
        """Silver holds each event once; both gold tables add up to silver; every acknowledged
        record is in silver or quarantine, or in a gap a person accepted."""
        from pyspark.sql import functions as F

        from batch.rebuild import classify_log
        from eo.core.quality.reconcile import account_for_acks, read_acks
        from eo.core.tables import GOLD, QUARANTINE, SILVER
        from eo.runtime import lake, source_gaps
        from eo.runtime.spark import build_session

        settings = settings or self.settings
        spark = build_session("eo-chaos-operator", settings)
        silver, quarantine = lake.read(spark, settings, SILVER), lake.read(spark, settings, QUARANTINE)
        events = silver.count()
        acks = read_acks(spark, [str(p) for p in Path(settings.acks_root).glob("*.csv")], settings.topic)
        found = account_for_acks(acks, classify_log(spark, settings), silver, quarantine,
                                 source_gaps.accepted(settings))  # fmt: skip
        statuses = {r["status"]: r["count"] for r in found.groupBy("status").count().collect()}
        sums = {
            t.name: lake.read(spark, settings, t).agg(F.sum("events")).first()[0] or 0
            for t in GOLD
            if "events" in t.columns  # the tables that count every event once
        }
        return {
            "silver": events,
            "duplicated": events - silver.select("event_id").distinct().count(),
            "lost": statuses.get("lost", 0),
            "lost_at_source_accepted": statuses.get("lost_at_source", 0),
            "gold_events_off_by": sum(abs(total - events) for total in sums.values()),
        }

    @staticmethod
    def torn(settings: Settings) -> list[str]:
        """Files a table's latest version names that are not on storage (a torn table)."""
        from deltalake import DeltaTable

        from eo.core.tables import ALL

        missing = []
        for name in ALL:
            try:
                table = DeltaTable(settings.table_path(name))
            except Exception:  # noqa: BLE001 (a table never made: nothing to tear)
                continue
            missing += [uri for uri in table.file_uris() if not Path(uri.removeprefix("file://")).exists()]
        return missing

    # -- the phase -------------------------------------------------------------------------------
    def run(self, only: list[str] | None = None) -> dict:
        """Every step in turn, or `only` those named (after the setup; the rest is not run)."""
        ensure_topic(self.settings)
        setup = Step("setup")
        self.produce(4000, self.seed)
        ok = self.catch_up(setup) == 0
        steps = [
            ("a rebuild after a partial batch", self.partial_batch),
            ("lost checkpoint", self.lost_checkpoint),
            ("damaged checkpoint", self.damaged_checkpoint),
            ("lost lake", self.lost_lake),
            ("another lake's checkpoint", self.another_lakes_checkpoint),
            ("records gone from Kafka", self.records_gone),
            ("two starts at once", self.two_starts),
            ("maintenance beside the stream", self.maintenance),
            ("disk full", self.disk_full),
        ]
        for name, action in steps:
            if only and name not in only:
                continue
            step = Step(name)
            print(f"[operator] {name}", flush=True)
            try:
                done = action(step)
            except Exception as error:  # noqa: BLE001 (the step fails, the phase goes on and says why)
                step.note, done = f"{type(error).__name__}: {error}".splitlines()[0], False
            if name != "disk full":
                step.checks.update(self.invariants())
            exact = step.checks.get("lost", 0) == step.checks.get("duplicated", 0) == 0
            step.passed = done and exact and step.checks.get("gold_events_off_by", 0) == 0
            self.steps.append(step)
            print(f"[operator] {name}: {'passed' if step.passed else 'FAILED'} {step.checks} {step.note}", flush=True)
        verdict = Step("verify")
        verified = self.command(verdict, "batch.rebuild") == 0 and self.command(verdict, "batch.verify") == 0
        return {
            "steps": [asdict(s) for s in self.steps],
            "verified": verified,
            "passed": ok and verified and all(s.passed for s in self.steps),
        }


def main(argv: list[str] | None = None) -> int:
    """`python -m lab.operator_faults [--seed N] [--port P]`: the operator phase alone, on a broker
    of its own (`make chaos` runs it after the crash phase)."""
    import argparse
    import datetime as dt
    import json

    from infra.kafka import Broker

    parser = argparse.ArgumentParser(prog="python -m lab.operator_faults", description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--port", type=int, default=29192)
    parser.add_argument("--only", action="append", help="run only this step (repeatable), e.g. 'lost lake'")
    args = parser.parse_args(argv)
    workdir = REPO_ROOT / "data" / "chaos" / f"{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%SZ}-operator"
    broker = Broker(args.port, workdir / "kafka")
    broker.start()
    try:
        result = OperatorFaults(workdir, broker.bootstrap, args.seed).run(args.only)
    finally:
        broker.stop()
    (workdir / "operator-faults.json").write_text(json.dumps(result, indent=2, default=str))
    from lab.report import operator_lines

    print("\n".join(operator_lines({"operator_faults": result})))
    print(f"report: {workdir / 'operator-faults.json'}")
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
