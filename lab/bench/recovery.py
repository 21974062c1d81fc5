"""Recovery: SIGKILL the running job under load, twice.

1. cold: a supervisor starts a new spark-submit (new JVM, session, tables, fencing claims);
2. warm standby: a second driver started with `--standby` (streaming/standby.py) is waiting, and
   has waited a while (`idle`: as a standby does; longer than the minute after which Spark ends
   idle Python workers).

For each: seconds from the kill to the first micro-batch committed after it (the `events`
checkpoint's commits/ folder grows), and to caught up (everything produced before the kill
committed). The load goes on at the same rate meanwhile.
"""

from __future__ import annotations

import time

from eo.runtime.kafka_admin import end_offsets
from lab.bench import job_log
from lab.bench.live import LiveJob
from lab.bench.load import PacedProducer
from lab.bench.pipeline import caught_up_with, wait_until
from lab.instances import committed_batches


def kill_and_recover(live: LiveJob, take_over, rate: int, seconds: float, log=print) -> dict:
    """Offer `rate` events/s; SIGKILL the job once it commits under that load; `take_over()`
    returns the instance that carries on (it becomes the live job)."""
    settings, job = live.settings, live.job
    load = live.loads.make(int(rate * seconds), rate)
    producer = PacedProducer(settings, load, rate)
    producer.start()
    successor = None
    try:
        before = committed_batches(settings)
        if wait_until(lambda: committed_batches(settings) >= before + 1, 300) is None:
            raise RuntimeError(f"the streaming job never committed under load; see {job.log}")
        backlog = end_offsets(settings)  # everything produced up to the kill
        killed_at = time.time()
        job.kill()
        log(f"   SIGKILLed the streaming job (pid {job.proc.pid}) under load at {rate:,} events/s")
        successor = take_over()
        successor.count_from(killed_at)
        live.job = successor
        first = successor.wait_first_commit(300)
        if first is None:
            raise RuntimeError(f"the job that took over never committed; see {successor.log}")
        caught = wait_until(caught_up_with(settings, backlog), 600, every=0.2)
    finally:
        producer.stop()
        producer.join()
    return {
        "first_batch_s": round(first, 1),
        "caught_up_s": None if caught is None else round(time.time() - killed_at, 1),
        "ready_s": job_log.ready_seconds(successor.log_text()),
        "log": str(successor.log),
    }


def measure_recovery(live: LiveJob, rate: int, seconds: float, idle: float, log=print) -> dict:
    live.ensure_running()
    live.drain(600, "the backlog of the phase before")  # a kill must find the job keeping up
    # The instances that take over keep Spark's event log: where their first batch's time goes.
    cold = kill_and_recover(live, lambda: live.spawn(event_log=True), rate, seconds, log)
    log(f"   cold restart: first batch {cold['first_batch_s']} s, caught up {cold['caught_up_s']} s")
    standby = live.spawn(standby=True, event_log=True)
    if wait_until(lambda: "[standby] warm" in standby.log_text(), 300) is None:
        raise RuntimeError(f"the standby never got warm; see {standby.log}")
    live.drain(600, "the cold restart's backlog")
    if idle:
        log(f"   the standby waits {idle:.0f} s before the kill")
        time.sleep(idle)
    warm = kill_and_recover(live, lambda: standby, rate, seconds, log)
    log(f"   warm standby: first batch {warm['first_batch_s']} s, caught up {warm['caught_up_s']} s")
    return {"rate": rate, "cold": cold, "standby": {**warm, "idle_s": idle}}
