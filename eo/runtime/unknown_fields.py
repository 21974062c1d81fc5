"""Keys that records carried and their source's declaration lacks: each, with how many records
carried it, kept (silver's `unknown_fields`) or quarantined (quarantine's). What `make
stream-status`, verify's report and `make quarantine` show, so that no field is ever dropped
unseen (docs/sources.md). Read with delta-rs, skipping row groups with no such key: no Spark."""

from __future__ import annotations

import pyarrow.compute as pc

from eo.core.sources import UNKNOWN_FIELDS
from eo.core.tables import QUARANTINE, SILVER
from eo.runtime.config import Settings
from eo.runtime.environment import environment

WHERE = {"kept": SILVER, "quarantined": QUARANTINE}


def counted(settings: Settings, namespace: str = "main") -> dict[str, dict[str, int]]:
    """Each unknown key -> {"kept": records, "quarantined": records}, most carried first; {} when
    none (or no table yet)."""
    from eo.runtime.lake import table_exists

    env = environment(settings)
    found: dict[str, dict[str, int]] = {}
    for fate, definition in WHERE.items():
        if not table_exists(settings, settings.table_path(definition.name, namespace)):
            continue
        table = env.table(definition.name, namespace)
        table.refresh()
        if UNKNOWN_FIELDS not in table.schema().names:  # a lake from before the column: none counted
            continue
        carried = env.rows(table, [UNKNOWN_FIELDS], where=~pc.field(UNKNOWN_FIELDS).is_null())[UNKNOWN_FIELDS]
        for entry in pc.value_counts(pc.list_flatten(carried)).to_pylist():
            found.setdefault(entry["values"], {"kept": 0, "quarantined": 0})[fate] += entry["counts"]
    return dict(sorted(found.items(), key=lambda item: (-sum(item[1].values()), item[0])))
