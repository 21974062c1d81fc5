"""The bounds of a valid event's fields (conf/platform.toml [domains]): what the reading enforces
(eo/core/transforms/parse.py) and what the rebuild's coverage allows for clock skew
(eo/runtime/coverage.py). No Spark here: Airflow's tasks read it too."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Domains:
    """The bounds of the field domains; the values live in conf/platform.toml [domains]."""

    event_time_floor: str = "2000-01-01T00:00:00Z"
    max_future_skew_minutes: int = 15
    max_record_bytes: int = 65536

    @classmethod
    def from_conf(cls, values: dict) -> Domains:
        known = {k: values[k] for k in cls.__dataclass_fields__ if k in values}
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise ValueError(f"unknown [domains] keys {unknown}; known: {sorted(cls.__dataclass_fields__)}")
        return cls(**known)
