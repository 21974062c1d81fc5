"""The running job keeps its tasks' Python workers warm while it has no data (streaming/query.py
`_serve`): Spark ends a worker idle for a minute, and the first batch after a lull paid for new
ones. Integration: a real streaming query, with no data."""

from __future__ import annotations

import threading
import time

import pytest

from streaming import python_workers
from streaming.query import _serve

pytestmark = pytest.mark.integration


def test_a_quiet_query_keeps_its_workers_warm_until_it_stops(spark, tmp_path, monkeypatch):
    calls: list[float] = []
    monkeypatch.setattr(python_workers, "keep_warm", lambda _spark, who: calls.append(time.monotonic()))
    (tmp_path / "in").mkdir()
    query = (
        spark.readStream.schema("x long")
        .parquet(str(tmp_path / "in"))
        .writeStream.format("noop")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(processingTime="100 milliseconds")
        .start()
    )
    served = threading.Thread(target=_serve, args=(spark, query, 1.2), daemon=True)
    began = time.monotonic()
    served.start()
    try:
        time.sleep(4.0)
    finally:
        query.stop()
    served.join(10)
    assert not served.is_alive(), "the wait did not end with the query"
    # Quiet all along: kept warm, never sooner than 1.2 s after the start or the last time.
    assert 1 <= len(calls) <= 4, calls
    gaps = [later - earlier for earlier, later in zip([began, *calls], calls, strict=False)]
    assert min(gaps) >= 1.2, gaps
