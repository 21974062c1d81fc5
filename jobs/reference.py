"""The campaigns reference table: which campaign ids exist.

Deterministic, so the producer (plain Python) and Spark agree on it without sharing state.
"""

from __future__ import annotations

CAMPAIGN_COUNT = 100
ADS_PER_CAMPAIGN = 10


def campaign_ids(count: int = CAMPAIGN_COUNT) -> list[str]:
    return [f"c{i:03d}" for i in range(count)]


def ad_ids(campaign_id: str, per_campaign: int = ADS_PER_CAMPAIGN) -> list[str]:
    return [f"a{campaign_id[1:]}-{j}" for j in range(per_campaign)]


def campaign_rows(count: int = CAMPAIGN_COUNT) -> list[tuple[str, str, str]]:
    return [(cid, f"Campaign {cid}", f"adv{int(cid[1:]) % 17:02d}") for cid in campaign_ids(count)]


def write_campaigns(spark, settings, namespace: str = "main") -> None:
    """(Re)write the reference table; the same rows every time, so re-running is harmless."""
    from jobs import lake
    from jobs.tables import CAMPAIGNS, ensure_table

    path = ensure_table(spark, settings, CAMPAIGNS, namespace)
    rows = spark.createDataFrame(campaign_rows(), CAMPAIGNS.ddl)
    lake.overwrite(rows, path)
