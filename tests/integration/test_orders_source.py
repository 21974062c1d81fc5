"""A second declared source, `orders`, gets every guarantee the clickstream has, in tables of its own
(docs/sources.md, "Several sources"). Its processes serve it by EO_SOURCE=orders, chosen once, at
import: each run here is a process of its own.

- the real streaming query over messy orders (copies, re-stamped and re-priced copies, late and
  broken records, an undeclared key) killed at each of its commit points and replayed: bronze,
  quarantine, silver and its gold table (currency_hour_revenue) hold each record once;
- the rebuild from its bronze and verification agree with the stream, row by row, and explain
  adds a row of its gold up from its events;
- its tables live under its own prefix, apart from the clickstream's: an order whose id equals a
  click's id is an order, not a copy of the click."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from eo.core.tables import SILVER
from eo.runtime.config import REPO_ROOT
from tests.conftest import lake_settings
from tests.helpers import event, prepare_lake, records, sorted_rows, stream

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SCRIPT = """
import json, sys
from pathlib import Path
from eo.core.tables import BRONZE, GOLD, QUARANTINE, SILVER
from eo.runtime.config import load_settings
from eo.runtime.spark import BASE_CONF, JAVA, build_session
from eo.runtime.hooks import install
from producer.generator import Rates
from producer.orders import OrdersGenerator
from streaming.microbatch import commit_point
from tests.conftest import lake_settings
from tests.helpers import CrashOnce, micro_batch, prepare_lake, records, sorted_rows, stream

settings = lake_settings(Path(sys.argv[1]), topic="orders")
spark = build_session("eo-orders", load_settings("local"), conf={
    "spark.master": "local[2]", "spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false",
    JAVA: BASE_CONF[JAVA]})
payloads = [json.loads(m.value) if m.value.startswith(b"{") and m.value.endswith(b"}") else m.value.decode()
            for m in OrdersGenerator(5, Rates(duplicate=0.05, malformed=0.08), total_events=600).messages()]
payloads.append({"order_id": "e1", "user_id": "u1", "amount": "9.99", "currency": "EUR",
                 "event_time": "2026-11-20T10:00:00Z"})  # the id of a click the test streams too
rows = records(payloads, partitions=3, topic="orders", key_by="order_id")
prepare_lake(spark, settings)
points = [commit_point(t.name) for t in (BRONZE, QUARANTINE, SILVER, *GOLD)]
cuts = [rows[i * len(rows) // len(points):(i + 1) * len(rows) // len(points)] for i in range(len(points))]
crashed = []
for point, cut in zip(points, cuts):  # each instance killed at one point, then a new one takes over
    previous = install(CrashOnce(point))
    try:
        stream(spark, settings, [cut], micro_batch(settings, log_progress=False))
    except Exception as error:
        crashed.append(point if "crash at" in str(error) else str(error)[:300])
    finally:
        install(previous)
    stream(spark, settings, [[]], micro_batch(settings, log_progress=False))  # the restart replays it

from batch.explain import explain
from batch.rebuild import rebuild
from batch.verify import verify
rebuild(spark, settings)
verdict = verify(spark, settings)
hour = sorted_rows(spark, settings, GOLD[0])[0]
found = explain(settings, GOLD[0].name, [f"currency={hour.currency}", f"window_start={hour.window_start.isoformat()}"])
print(json.dumps({
    "crashed": crashed, "points": points, "passed": verdict["passed"], "tables": verdict["tables"],
    "reconciliation": verdict["reconciliation"], "gold": [t.name for t in GOLD],
    "silver_columns": SILVER.columns, "silver_path": settings.table_path(SILVER.name),
    "ids": sorted(r.order_id for r in sorted_rows(spark, settings, SILVER)),
    "quarantine": sorted(r.reason for r in sorted_rows(spark, settings, QUARANTINE)),
    "adds_up": found["adds_up"], "explained_events": len(found["events"]), "orders": hour.orders,
}, default=str))
"""


def test_orders_stream_crashes_at_each_commit_replays_and_equals_its_rebuild(spark, tmp_path):
    root = tmp_path / "data"
    env = {**os.environ, "EO_SOURCE": "orders", "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(SCRIPT), str(root)],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])

    assert found["gold"] == ["currency_hour_revenue"]  # the orders' declarations only
    assert found["crashed"] == found["points"]  # each kill point was reached, and each replay recovered
    assert found["passed"], found["tables"]
    assert all(t["missing"] == t["extra"] == t["different"] == 0 for t in found["tables"].values())
    counts = found["reconciliation"]
    assert counts["duplicates_removed"] > 0  # copies, re-stamped and re-priced ones included
    assert counts["accepted"] == counts["silver"] + counts["quarantine"] + counts["duplicates_removed"]
    assert len(found["ids"]) == len(set(found["ids"])) == counts["silver"]
    # Every broken kind is quarantined by the rule it breaks, the undeclared key by name.
    reasons = {reason.split(":")[0] for reason in found["quarantine"]}
    assert {"malformed_json", "missing_field", "bad_type", "bad_value", "unknown_field"} <= reasons
    assert found["adds_up"] and found["explained_events"] == found["orders"]
    assert found["silver_path"].endswith("/lake/orders/silver/events")
    assert found["silver_columns"][:5] == ["order_id", "user_id", "amount", "currency", "event_time"]

    # The clickstream, in the same lake: its own tables, its own ids; "e1" is a click and an order.
    clicks = lake_settings(root, topic="clickstream")
    prepare_lake(spark, clicks)
    stream(spark, clicks, [records([event("e1", 1), event("e2", 2)])])
    assert [r.event_id for r in sorted_rows(spark, clicks, SILVER)] == ["e1", "e2"]
    assert "e1" in found["ids"]
