"""user_sessions: a user's events less than 30 minutes apart in event time make one session, with
its events, its revenue and the campaign_minute_metrics keys it counts its user in (`metric_keys`,
"campaign|type|minute", sorted: the stream counts a user in a minute's distinct users only if no
stored session of the user holds that key; docs/hot-path.md)."""

from eo.core.declaration import Domain, Explain, GoldTable, Sessions
from eo.core.transforms.sessions import COLUMNS, GAP, NAME, SESSION_KEY, sessions_of, user_sessions

TABLE = GoldTable(
    name=NAME,
    source="clicks",
    columns=COLUMNS,
    key=tuple(SESSION_KEY),
    range_column="session_start",  # a session is rebuilt whole, in the interval it starts in
    partition_by=("session_date",),
    zorder=("session_end",),
    transform=sessions_of,
    merge=Sessions(gap=GAP),
    domain=Domain(
        not_null=("session_end",), minimum={"events": 1, "revenue": 0}, at_least=(("session_end", "session_start"),)
    ),
    explain=Explain(equal=("user_id",), until="session_end"),
    rebuild=user_sessions,  # a group of users per call
)
