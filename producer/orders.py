"""A realistic, seeded stream of shop orders, the `orders` source (eo/core/sources/orders.schema.json).

Users place orders over the span, each an amount in one of the declared currencies (a user mostly
pays in their own); amounts are decimal strings, sometimes JSON numbers, whole yen for JPY, now and
then a free order at 0.00. On top of that the generator does what real sources do, each at its own
rate (the clickstream's `Rates`): sends orders again (sometimes with a changed payload: a re-stamped
event_time or a re-priced amount; the platform keeps the first copy by the log), sends them out of
order, late, very late, or broken, each broken kind breaking exactly one rule of the declaration:

    malformed_json     the text is cut short: not JSON
    missing_field      one required field is absent
    bad_type           one field has a JSON type the declaration does not allow
    negative_amount    amount < 0 (its `minimum`)
    unknown_currency   currency outside its `enum`
    unknown_field      one key the declaration lacks (`additionalProperties: false`: quarantined as
                       unknown_field:<key>)

Messages are keyed by order_id, so every copy of an order shares a partition; `Message.kind` says
what each one is, as the clickstream's kinds do, for the summary and the ack log.

Order ids are `o<10 digits>-<8 hex>`, which no clickstream event id (`<12 hex>-<16 hex>`) can equal
by accident. On purpose, a few orders (`shared_ids`, 20 by default, at most one in 20 orders, spread
evenly over the stream; kind "shared_id", never shifted nor broken) carry an order_id EQUAL to an
event id the clickstream sends under the same options: the first clean events (kind "event") of
`ClickstreamGenerator` with the same seed, rates, start, span_hours and total_events, i.e.
`python -m producer generate` with the same options and EO_SOURCE=clicks. Each source keeps its own
events, so those orders must reach orders' silver beside the clicks of the same id: equal ids in two
sources are not copies.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import random
from collections.abc import Iterator
from decimal import Decimal

from producer.generator import DEFAULT_START, ClickstreamGenerator, Message, Rates, _iso

CURRENCIES = ("EUR", "USD", "GBP", "JPY", "CHF")  # the declaration's enum
CURRENCY_WEIGHTS = (45, 30, 12, 8, 5)
WHOLE_UNITS = frozenset({"JPY"})  # no minor unit: whole yen
SHARED_IDS = 20
DEFAULT_RATES = Rates()

MALFORMED_KINDS = (
    "malformed_json",
    "missing_field",
    "bad_type",
    "negative_amount",
    "unknown_currency",
    "unknown_field",
)
QUARANTINE_KINDS = frozenset(MALFORMED_KINDS)
# Every kind a message can have: those read into silver (copies included), then the quarantined.
ACCEPTED_KINDS = ("event", "shared_id", "out_of_order", "late", "very_late", "duplicate", "duplicate_variant")
KINDS = (*ACCEPTED_KINDS, *MALFORMED_KINDS)

REQUIRED = ("order_id", "user_id", "amount", "currency", "event_time")
# One JSON type each field may not have: a numeric id, an object, a boolean amount, ISO 4217's
# numeric code for the euro, epoch seconds.
BAD_TYPES = (
    ("order_id", 48213),
    ("user_id", {"id": 1}),
    ("amount", True),
    ("currency", 978),
    ("event_time", 1763600000),
)
UNKNOWN_CURRENCIES = ("BTC", "eur", "EURO", "XXX", "SEK")
UNDECLARED_KEYS = (("coupon", "XMAS10"), ("shipping_country", "FR"), ("note", "gift wrap"), ("retry", True))


def covered_days(span_hours: float, start: dt.datetime = DEFAULT_START) -> str:
    """The UTC days a generated order stream's event times fall on, in words: the span from `start`
    and how far the very late orders (up to 3 days, Rates.very_late) reach back."""
    end = start + dt.timedelta(hours=span_hours)
    last = (end - dt.timedelta(microseconds=1)).date()
    earliest = (start - dt.timedelta(days=3)).date()
    return (
        f"order times run from {start:%Y-%m-%d %H:%M} UTC for --span-hours ({span_hours:g}: {start.date()} to "
        f"{last}); very late orders reach back to {earliest}"
    )


def shared_event_ids(
    count: int,
    seed: int = 7,
    rates: Rates = DEFAULT_RATES,
    start: dt.datetime = DEFAULT_START,
    span_hours: float = 48.0,
    total_events: int = 1_000_000,
) -> list[str]:
    """The first `count` clean event ids (kind "event") the clickstream sends with these options."""
    clicks = ClickstreamGenerator(seed, rates, start=start, span_hours=span_hours, total_events=total_events)
    ids = (m.key.decode() for m in clicks.messages() if m.kind == "event")
    return list(itertools.islice(ids, count))


class OrdersGenerator:
    def __init__(
        self,
        seed: int = 7,
        rates: Rates = DEFAULT_RATES,
        start: dt.datetime = DEFAULT_START,
        span_hours: float = 48.0,
        total_events: int = 1_000_000,
        users: int | None = None,
        extra_fields: dict[str, str] | None = None,
        shared_ids: int = SHARED_IDS,
    ) -> None:
        """`extra_fields`: added to every order as they are, as a producer that starts sending a
        field before the declaration has it; the orders' declaration quarantines such records
        (unknown_field:<key>) until it declares the field. `shared_ids`: how many orders carry a
        clickstream event id (module docstring), at most one in 20 orders."""
        self.extra_fields = dict(extra_fields or {})
        self.rng = random.Random(seed)
        self.rates = rates
        self.start = start.timestamp()
        self.rate = total_events / (span_hours * 3600)  # orders per event-time second
        self.total = total_events
        self.users = users or max(50, total_events // 10)
        self._clock = self.start
        self._seq = 0
        self._currency: dict[str, str] = {}
        self._recent: list[dict] = []  # reservoir of sent orders, for duplicates
        count = min(shared_ids, total_events // 20)
        self.shared = shared_event_ids(count, seed, rates, start, span_hours, total_events) if count else []
        # The messages that carry them: the middle one of each of `count` equal stretches.
        stride = total_events // count if count else 0
        self._shared_at = {j * stride + stride // 2: event_id for j, event_id in enumerate(self.shared)}

    # -- the clean stream -------------------------------------------------------------------
    def _amount(self, currency: str) -> str | int | float:
        """A decimal string mostly, a JSON number sometimes; 0.00 for the odd free order."""
        if self.rng.random() < 0.005:
            return "0.00"
        value = round(self.rng.lognormvariate(3.5, 1.0), 2)
        if currency in WHOLE_UNITS:
            whole = max(1, round(value * 150))
            return whole if self.rng.random() < 0.2 else str(whole)
        value = max(0.01, min(value, 99999.99))
        return float(f"{value:.2f}") if self.rng.random() < 0.2 else f"{value:.2f}"

    def _clean_order(self, shared_id: str | None = None) -> dict:
        """The next order in event-time order; `shared_id` for its order_id, else one of its own."""
        self._clock += self.rng.expovariate(self.rate)
        user = f"u{int(self.users * self.rng.random() ** 2):06d}"  # skewed: low ids are the heavy buyers
        home = self._currency.setdefault(user, self.rng.choices(CURRENCIES, CURRENCY_WEIGHTS)[0])
        currency = home if self.rng.random() < 0.95 else self.rng.choice(CURRENCIES)
        order_id = f"o{self._seq:010d}-{self.rng.getrandbits(32):08x}"
        self._seq += 1
        order = {
            "order_id": shared_id or order_id,
            "user_id": user,
            "amount": self._amount(currency),
            "currency": currency,
            "event_time": _iso(self._clock),
        }
        order.update(self.extra_fields)
        return order

    # -- what real sources add --------------------------------------------------------------
    def _shift_back(self, order: dict, seconds: float) -> None:
        at = dt.datetime.fromisoformat(order["event_time"].replace("Z", "+00:00")).timestamp() - seconds
        order["event_time"] = _iso(at)

    def _malformed(self, order: dict) -> tuple[dict | str, str]:
        kind = self.rng.choice(MALFORMED_KINDS)
        if kind == "malformed_json":
            text = json.dumps(order)
            return text[: self.rng.randint(1, len(text) - 2)], kind
        if kind == "missing_field":
            del order[self.rng.choice(REQUIRED)]
        elif kind == "bad_type":
            field_name, value = self.rng.choice(BAD_TYPES)
            order[field_name] = value
        elif kind == "negative_amount":
            amount = f"-{self.rng.randint(1, 99999) / 100:.2f}"
            order["amount"] = amount if self.rng.random() < 0.8 else float(amount)
        elif kind == "unknown_currency":
            order["currency"] = self.rng.choice(UNKNOWN_CURRENCIES)
        else:
            key, value = self.rng.choice(UNDECLARED_KEYS)
            order[key] = value
        return order, kind

    def _duplicate(self) -> tuple[dict, str]:
        original = dict(self.rng.choice(self._recent))
        if self.rng.random() >= self.rates.duplicate_variant:
            return original, "duplicate"
        if self.rng.random() < 0.5:  # a retry stamped when it was sent again
            at = dt.datetime.fromisoformat(original["event_time"].replace("Z", "+00:00")).timestamp()
            original["event_time"] = _iso(at + self.rng.uniform(1, 600))
        else:  # re-priced
            before = Decimal(str(original["amount"]))
            while Decimal(str(original["amount"])) == before:
                original["amount"] = self._amount(original["currency"])
        return original, "duplicate_variant"

    def _remember(self, order: dict) -> None:
        if len(self._recent) < 20_000:
            self._recent.append(order)
        else:
            self._recent[self.rng.randrange(len(self._recent))] = order

    def messages(self) -> Iterator[Message]:
        r = self.rates
        for n in range(self.total):
            roll = self.rng.random()
            if n in self._shared_at:  # as it is: an id both sources send, nothing else about it
                payload, kind = self._clean_order(self._shared_at[n]), "shared_id"
                self._remember(payload)
            elif self._recent and roll < r.duplicate:
                payload, kind = self._duplicate()
            else:
                payload, kind = self._clean_order(), "event"
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
            key = payload.get("order_id") if isinstance(payload, dict) else None
            key = key if isinstance(key, str) else f"k{self.rng.getrandbits(48):012x}"
            value = payload if isinstance(payload, str) else json.dumps(payload, separators=(",", ":"))
            yield Message(key.encode(), value.encode(), kind)
