"""campaign_minute_metrics: per campaign, event type and event-time minute, the events, the
distinct users and the revenue (purchases' prices), exact however late an event comes."""

import datetime as dt

from eo.core.declaration import Additive, Domain, Explain, GoldTable
from eo.core.sources import DECLARED
from eo.core.transforms.metrics import COLUMNS, METRIC_KEY, NAME, batch_metrics, campaign_minute_metrics

TABLE = GoldTable(
    name=NAME,
    source="clicks",
    columns=COLUMNS,
    key=tuple(METRIC_KEY),
    range_column="window_start",
    partition_by=("window_date",),
    transform=batch_metrics,
    # A user counts once per key: the sessions' owners count it against the user's stored
    # sessions' metric_keys (eo/core/transforms/sessions.py `new_user_tuples`).
    merge=Additive(values=("events", "distinct_users", "revenue"), distinct_users="distinct_users"),
    domain=Domain(
        in_set={"event_type": DECLARED["clicks"].by_name["event_type"].allowed},
        minimum={"events": 1, "distinct_users": 1, "revenue": 0},
        at_least=(("events", "distinct_users"),),
    ),
    explain=Explain(equal=("campaign_id", "event_type"), window=dt.timedelta(minutes=1)),
    rebuild=campaign_minute_metrics,  # a group of keys per call: each key's users counted once
)
