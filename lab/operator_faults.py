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

import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

from eo.runtime.config import REPO_ROOT
from eo.runtime.kafka_admin import ensure_topic
from lab.instances import Instance
from lab.operator_lab import OperatorLab, Step

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


class OperatorFaults(OperatorLab):
    """The steps of the phase (the module's docstring), each met with the command its line names."""

    TOPIC, EXPECTED = TOPIC, EXPECTED

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
