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
