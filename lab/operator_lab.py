"""The means of the fault lab's operator phase (lab/operator_faults.py): a lake and topic of its
own, the commands an operator types (their exit codes and `error:` lines kept), records produced
with an ack log, background streams, and the checks after each fault: nothing lost or counted
twice, no table torn."""

from __future__ import annotations

import itertools
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from eo.runtime.config import REPO_ROOT, Settings, load_settings
from producer.generator import ClickstreamGenerator, Rates
from producer.publish import publish


@dataclass
class Step:
    name: str
    commands: list[dict] = field(default_factory=list)
    said: str | None = None
    expected: str | None = None
    checks: dict = field(default_factory=dict)
    note: str = ""
    passed: bool = False


class OperatorLab:
    """A subclass names its topic and the one line each refusal must be (`EXPECTED`)."""

    TOPIC: ClassVar[str]
    EXPECTED: ClassVar[dict[str, str]]

    def __init__(self, workdir: Path, bootstrap: str, seed: int) -> None:
        self.workdir, self.seed = workdir, seed
        self.settings = self.settings_under(workdir, self.TOPIC, bootstrap)
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
        step.expected = self.EXPECTED[name]
        return re.search(self.EXPECTED[name], step.said or "")

    def _continuous(self, name: str) -> tuple[subprocess.Popen, Path]:
        """`python -m streaming run` in the background, its output in a log of its own."""
        from eo.runtime.submit import submit_env

        log = self.workdir / "logs" / f"{name}.log"
        args = [sys.executable, "-m", "streaming", "run", "--trigger-seconds", "1", "--max-offsets-per-trigger", "500"]
        with open(log, "ab") as out:
            process = subprocess.Popen(args, env=submit_env(self.env_of(self.settings)), cwd=REPO_ROOT, stdout=out,
                                       stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
        return process, log

    @staticmethod
    def _first_to_exit(a: subprocess.Popen, b: subprocess.Popen, timeout: float) -> subprocess.Popen:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for process in (a, b):
                if process.poll() is not None:
                    return process
            time.sleep(0.2)
        raise TimeoutError("neither start ended: two instances run at once")

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
