"""The seed's stream (streaming/plan.py `seed_records`): read whole only by the run that seeds the
state; any other new checkpoint starts it at the seed's latest version, and a checkpoint that has
offsets goes on from its own, whatever the option says."""

import datetime as dt

import pytest

from eo.core.tables import SEED
from streaming.plan import seed_records

pytestmark = pytest.mark.unit


def _seed_rows(spark, settings, ids: list[str]) -> None:
    when = dt.datetime(2026, 11, 29, 12)
    rows = [(i, when) for i in ids]  # an event id and its time
    spark.createDataFrame(rows, SEED.ddl).write.format("delta").mode("append").save(settings.table_path(SEED.name))


def _read(spark, settings, whole: bool, checkpoint: str) -> list[str]:
    seen: list[str] = []
    query = (
        seed_records(spark, settings, whole=whole)
        .writeStream.foreachBatch(lambda batch, _id: seen.extend(r.event_id for r in batch.collect()))
        .trigger(availableNow=True)
        .option("checkpointLocation", checkpoint)
        .start()
    )
    query.awaitTermination()
    return sorted(seen)


def test_only_the_seeding_run_reads_the_seed_whole(spark, lake, tmp_path):
    _seed_rows(spark, lake, ["e1", "e2"])
    _seed_rows(spark, lake, ["e3"])
    assert _read(spark, lake, whole=True, checkpoint=str(tmp_path / "seeding")) == ["e1", "e2", "e3"]
    assert _read(spark, lake, whole=False, checkpoint=str(tmp_path / "live")) == []


def test_the_live_query_after_the_seeding_run_goes_on_from_its_offset(spark, lake, tmp_path):
    _seed_rows(spark, lake, ["e1"])
    checkpoint = str(tmp_path / "events")
    assert _read(spark, lake, whole=True, checkpoint=checkpoint) == ["e1"]
    _seed_rows(spark, lake, ["e2"])
    # The checkpoint has offsets: `whole=False` neither reads e1 again nor skips e2.
    assert _read(spark, lake, whole=False, checkpoint=checkpoint) == ["e2"]


def test_a_stream_started_at_the_latest_version_reads_what_is_added_after(spark, lake, tmp_path):
    _seed_rows(spark, lake, ["e1"])
    seen: list[str] = []
    query = (
        seed_records(spark, lake, whole=False)
        .writeStream.foreachBatch(lambda batch, _id: seen.extend(r.event_id for r in batch.collect()))
        .option("checkpointLocation", str(tmp_path / "live"))
        .start()
    )
    try:
        query.processAllAvailable()
        _seed_rows(spark, lake, ["e2"])
        query.processAllAvailable()
    finally:
        query.stop()
    assert seen == ["e2"]
