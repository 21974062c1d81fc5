"""The whole flow on a real broker and real Delta tables: produce, stream, rebuild, verify.

Then the check must be able to fail: tampering with one gold row, or losing one silver row,
has to turn the verdict red.
"""

import datetime as dt
import json
import shutil
from decimal import Decimal
from pathlib import Path

import pytest
from delta.tables import DeltaTable

from batch.rebuild import rebuild
from batch.verify import verify
from eo.core.tables import CAMPAIGN_MINUTE_METRICS, SILVER
from eo.runtime.quality.site import remote_links
from producer.generator import QUARANTINE_KINDS
from streaming.query import Knobs
from streaming.run import run
from tests.conftest import lake_settings
from tests.integration.producing import produce

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def flowed(spark, kafka, tmp_path_factory):
    from eo.runtime.kafka_admin import ensure_topic

    settings = lake_settings(tmp_path_factory.mktemp("flow"), kafka_bootstrap=kafka.bootstrap)
    ensure_topic(settings)
    stats = produce(settings, 20_000)
    assert run(settings, Knobs(until_caught_up=True, max_offsets_per_trigger=8000)) == 0
    rebuild(spark, settings)
    return settings, stats, verify(spark, settings)


def test_stream_equals_batch_and_every_record_is_accounted_for(flowed):
    settings, stats, verdict = flowed
    assert verdict["passed"], verdict
    r = verdict["reconciliation"]
    assert r["acked"] == stats.acked == 20_000
    assert r["lost"] == 0
    assert r["quarantine"] == sum(stats.kinds[k] for k in QUARANTINE_KINDS)
    assert r["duplicates_removed"] == stats.kinds["duplicate"] + stats.kinds["duplicate_variant"]
    for name in ("campaign_minute_metrics", "user_sessions", "silver", "quarantine"):
        t = verdict["tables"][name]
        assert t["stream_rows"] == t["batch_rows"] > 0 and t["missing"] == t["extra"] == t["different"] == 0
    latest = json.loads((Path(settings.reports_root) / "verify" / "latest.json").read_text())
    assert latest["passed"] is True and set(latest["tables"]["silver"]) >= {"stream_rows", "batch_rows", "missing"}
    site = Path(verdict["data_docs"]).parent
    assert (site / "index.html").is_file() and site == Path(settings.reports_root) / "data-docs"
    assert remote_links(site) == []  # styles and scripts are local: the pages work offline
    assert verdict["run_name"] == "batch.verify_all"


def tampered_copy(settings, tmp_path):
    """The flow's lake, copied, so tampering leaves the other tests' lake alone."""
    shutil.copytree(settings.lake_root, tmp_path / "lake")
    return settings.with_overrides(lake_root=str(tmp_path / "lake"), reports_root=str(tmp_path / "reports"))


def test_one_cent_on_one_gold_row_fails_verification(spark, flowed, tmp_path):
    settings = tampered_copy(flowed[0], tmp_path)
    gold = DeltaTable.forPath(spark, settings.table_path(CAMPAIGN_MINUTE_METRICS.name))
    victim = gold.toDF().where("event_type = 'purchase'").first()
    gold.update(
        f"campaign_id = '{victim.campaign_id}' AND event_type = 'purchase' AND window_start = '{victim.window_start}'",
        {"revenue": "revenue + 0.01"},
    )
    verdict = verify(spark, settings)
    assert not verdict["passed"]
    assert verdict["tables"]["campaign_minute_metrics"]["different"] == 1
    assert verdict["tables"]["user_sessions"]["passed"]
    failed = [e for e in verdict["expectations"] if not e["success"] and e["suite"].startswith("agreement_")]
    # GX's own column-pair check names the column, and the differing key is in the verdict.
    assert [e["expectation"] for e in failed] == [
        "expect_column_pair_values_to_be_equal(stream_revenue vs batch_revenue)"
    ], failed
    assert victim.campaign_id in failed[0]["examples"][0]
    # The verdict names instants in UTC; PySpark hands them back naive, in local time.
    window_start = victim.window_start.astimezone(dt.UTC).isoformat()
    key = {"campaign_id": victim.campaign_id, "event_type": "purchase", "window_start": window_start}
    # Both sides' values of the differing column, as exact decimals.
    values = {"revenue": {"stream": str(victim.revenue + Decimal("0.01")), "batch": str(victim.revenue)}}
    assert verdict["tables"]["campaign_minute_metrics"]["sample"] == [{**key, "status": "different", "values": values}]


def test_a_lost_silver_row_fails_verification(spark, flowed, tmp_path):
    settings = tampered_copy(flowed[0], tmp_path)
    silver = DeltaTable.forPath(spark, settings.table_path(SILVER.name))
    spark.sql(
        f"ALTER TABLE delta.`{settings.table_path(SILVER.name)}` SET TBLPROPERTIES ('delta.appendOnly' = 'false')"
    )
    victim = silver.toDF().first()
    silver.delete(f"event_id = '{victim.event_id}'")
    verdict = verify(spark, settings)
    assert not verdict["passed"]
    assert verdict["tables"]["silver"]["missing"] == 1
    assert verdict["reconciliation"]["lost"] >= 1
    # The failing no-loss check names the lost record by where the broker put it, on Spark's
    # engine, whose Data Docs page lists the failing rows.
    (no_loss,) = [e for e in verdict["expectations"] if e["suite"] == "no_loss" and not e["success"]]
    assert no_loss["engine"] == "spark"
    assert no_loss["unexpected_count"] == verdict["reconciliation"]["lost"]
    source = (victim.kafka_topic, victim.kafka_partition, victim.kafka_offset)
    assert any(all(str(part) in example for part in source) for example in no_loss["examples"]), no_loss
