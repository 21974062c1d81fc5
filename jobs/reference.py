"""The reference tables: which campaigns exist, and which ads belong to each.

Deterministic, so the producer (plain Python) and Spark agree on them without sharing state.
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


def ad_rows(count: int = CAMPAIGN_COUNT) -> list[tuple[str, str]]:
    return [(ad, cid) for cid in campaign_ids(count) for ad in ad_ids(cid)]


def write_reference(spark, settings, namespace: str = "main") -> None:
    """(Re)write both reference tables; the same rows every time, so re-running is harmless."""
    from jobs import lake
    from jobs.tables import ADS, CAMPAIGNS, ensure_table

    for table, rows in ((CAMPAIGNS, campaign_rows()), (ADS, ad_rows())):
        path = ensure_table(spark, settings, table, namespace)
        lake.overwrite(spark.createDataFrame(rows, table.ddl), path)


def ensure_reference(spark, settings) -> None:
    """Write the reference tables when either is missing or empty (a lake made before ads existed)."""
    from jobs import storage
    from jobs.tables import REFERENCE, ensure_table

    for table in REFERENCE:
        ensure_table(spark, settings, table)
    if any(not storage.delta_table(settings, table.name).refresh().file_uris() for table in REFERENCE):
        write_reference(spark, settings)
