"""A realistic, seeded clickstream in the shape of the Yahoo Streaming Benchmark.

Users browse in sessions; each session shows ad impressions, some become clicks and a few
become purchases with a decimal price. On top of that the generator does what real sources do,
each at its own rate: sends events again (sometimes with a changed payload), sends them out of
order, very late, or broken.
"""

from __future__ import annotations

import datetime as dt
import heapq
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field

from eo.core.reference import ad_ids, campaign_ids

UTC = dt.UTC
DEFAULT_START = dt.datetime(2026, 11, 20, tzinfo=UTC)


@dataclass(frozen=True)
class Rates:
    """Probabilities per message. Defaults are what the demo uses."""

    duplicate: float = 0.03  # an already-sent event is sent again
    duplicate_variant: float = 0.3  # share of duplicates whose payload differs
    out_of_order: float = 0.10  # event time up to a minute behind the stream
    late: float = 0.01  # 1 minute to 3 hours late
    very_late: float = 0.002  # 1 to 3 days late
    malformed: float = 0.01  # bad JSON, missing/ill-typed fields, negative price, unknown campaign


@dataclass(frozen=True)
class Message:
    key: bytes
    value: bytes
    kind: str


MALFORMED_KINDS = ("malformed_json", "missing_field", "bad_type", "negative_price", "unknown_campaign")
QUARANTINE_KINDS = frozenset(MALFORMED_KINDS)


@dataclass(order=True)
class _Session:
    next_time: float
    seq: int
    user_id: str = field(compare=False)
    session_id: str = field(compare=False)
    campaign_id: str = field(compare=False)
    remaining: int = field(compare=False)
    clicked: bool = field(compare=False, default=False)


def covered_days(span_hours: float, start: dt.datetime = DEFAULT_START) -> str:
    """The UTC days a generated stream's event times fall on, in words: the span from `start`, the
    sessions still open at its end (their last events a few hours past it), and how far the very
    late events (up to 3 days, Rates.very_late) reach back."""
    end = start + dt.timedelta(hours=span_hours)
    last = (end - dt.timedelta(microseconds=1)).date()
    earliest = (start - dt.timedelta(days=3)).date()
    return (
        f"event times run from {start:%Y-%m-%d %H:%M} UTC for --span-hours ({span_hours:g}: {start.date()} to "
        f"{last}), sessions open at its end a few hours past it; very late events reach back to {earliest}"
    )


def _iso(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class ClickstreamGenerator:
    def __init__(
        self,
        seed: int = 7,
        rates: Rates = Rates(),
        start: dt.datetime = DEFAULT_START,
        span_hours: float = 48.0,
        total_events: int = 1_000_000,
        users: int | None = None,
        extra_fields: dict[str, str] | None = None,
    ) -> None:
        """`extra_fields`: added to every event as they are, as a producer that starts sending a
        field before the source's declaration has it (docs/sources.md); the rest draws the same."""
        self.extra_fields = dict(extra_fields or {})
        self.rng = random.Random(seed)
        self.rates = rates
        self.start = start.timestamp()
        self.rate = total_events / (span_hours * 3600)  # events per event-time second
        self.total = total_events
        self.users = users or max(50, total_events // 40)
        self.campaigns = campaign_ids()
        self._sessions: list[_Session] = []
        self._seq = 0
        self._clock = self.start
        self._recent: list[dict] = []  # reservoir of sent events, for duplicates

    # -- the clean stream -------------------------------------------------------------------
    def _new_session(self, at: float) -> _Session:
        self._seq += 1
        user = int(self.users * self.rng.random() ** 2)  # skewed: low ids are the heavy users
        return _Session(
            next_time=at,
            seq=self._seq,
            user_id=f"u{user:06d}",
            session_id=f"s{self._seq:09d}",
            campaign_id=self.rng.choice(self.campaigns),
            remaining=1 + int(self.rng.expovariate(1 / 7)),
        )

    def _gap(self) -> float:
        # Mostly seconds to minutes; sometimes a pause around the 30-minute session gap.
        if self.rng.random() < 0.04:
            return self.rng.uniform(20 * 60, 45 * 60)
        return self.rng.expovariate(1 / 60)

    def _clean_event(self) -> dict:
        """The next event in event-time order, from the heap of open sessions."""
        sessions_per_second = self.rate / 8
        while not self._sessions or self._sessions[0].next_time > self._clock:
            self._clock += self.rng.expovariate(sessions_per_second)
            heapq.heappush(self._sessions, self._new_session(self._clock))
        session = heapq.heappop(self._sessions)
        at = session.next_time
        roll = self.rng.random()
        if session.clicked and roll < 0.25:
            kind, price = "purchase", f"{self.rng.randint(1, 50000) / 100:.2f}"
        elif roll < 0.12:
            kind, price = "click", None
            session.clicked = True
        else:
            kind, price = "impression", None
        event = {
            "event_id": f"{int(at * 1000):012x}-{self.rng.getrandbits(64):016x}",
            "event_type": kind,
            "event_time": _iso(at),
            "user_id": session.user_id,
            "session_id": session.session_id,
            "campaign_id": session.campaign_id,
            "ad_id": self.rng.choice(ad_ids(session.campaign_id)),
        }
        if price is not None:
            event["price"] = price
        event.update(self.extra_fields)
        session.remaining -= 1
        if session.remaining > 0:
            session.next_time = at + self._gap()
            heapq.heappush(self._sessions, session)
        return event

    # -- what real sources add --------------------------------------------------------------
    def _shift_back(self, event: dict, seconds: float) -> None:
        at = dt.datetime.fromisoformat(event["event_time"].replace("Z", "+00:00")).timestamp() - seconds
        event["event_time"] = _iso(at)
        event["event_id"] = f"{int(at * 1000):012x}-{event['event_id'].split('-')[1]}"

    def _malformed(self, event: dict) -> tuple[dict | str, str]:
        kind = self.rng.choice(MALFORMED_KINDS)
        if kind == "malformed_json":
            text = json.dumps(event)
            return text[: self.rng.randint(1, len(text) - 2)], kind
        if kind == "missing_field":
            del event[self.rng.choice(["event_id", "event_type", "event_time", "user_id", "campaign_id"])]
        elif kind == "bad_type":
            field_name, value = self.rng.choice(
                [("event_time", 1763600000), ("price", "12,50"), ("user_id", {"id": 1}), ("event_type", "view")]
            )
            event[field_name] = value
        elif kind == "negative_price":
            event["event_type"], event["price"] = "purchase", f"-{self.rng.randint(1, 9999) / 100:.2f}"
        else:
            event["campaign_id"] = f"c9{self.rng.randint(0, 99):02d}"
        return event, kind

    def _duplicate(self) -> tuple[dict, str]:
        original = dict(self.rng.choice(self._recent))
        if self.rng.random() >= self.rates.duplicate_variant:
            return original, "duplicate"
        original["ad_id"] = self.rng.choice(ad_ids(original["campaign_id"]))
        if original["event_type"] == "purchase":
            original["price"] = f"{self.rng.randint(1, 50000) / 100:.2f}"
        original["retry"] = True
        return original, "duplicate_variant"

    def _remember(self, event: dict) -> None:
        if len(self._recent) < 20_000:
            self._recent.append(event)
        else:
            self._recent[self.rng.randrange(len(self._recent))] = event

    def messages(self) -> Iterator[Message]:
        r = self.rates
        for _ in range(self.total):
            roll = self.rng.random()
            if self._recent and roll < r.duplicate:
                payload, kind = self._duplicate()
            else:
                payload, kind = self._clean_event(), "event"
                roll = self.rng.random()
                if roll < r.very_late:
                    self._shift_back(payload, self.rng.uniform(86400, 3 * 86400))
                    kind = "very_late"
                elif roll < r.very_late + r.late:
                    self._shift_back(payload, self.rng.uniform(60, 3 * 3600))
                    kind = "late"
                elif roll < r.very_late + r.late + r.out_of_order:
                    self._shift_back(payload, self.rng.uniform(0.001, 60))
                    kind = "out_of_order"
                if self.rng.random() < r.malformed:
                    payload, kind = self._malformed(payload)
                else:
                    self._remember(payload)
            key = payload.get("event_id") if isinstance(payload, dict) else None
            key = key if isinstance(key, str) else f"k{self.rng.getrandbits(48):012x}"
            value = payload if isinstance(payload, str) else json.dumps(payload, separators=(",", ":"))
            yield Message(key.encode(), value.encode(), kind)
