"""Explain a number: the events behind one row, where they sat in Kafka, and whether they add up.

    python -m batch.explain <gold table> --key <column>=<value> ... [--version N | --as-of TS]
        [--namespace rebuild] [--json]
    python -m batch.explain silver --key event_id=e-123

Every declared gold table (eo/core/gold/) is explainable: `--help` lists each with its key columns.

For the row as stored: the silver events of its key with their Kafka coordinates (each looked up in
bronze), ingest batch and lateness (Kafka timestamp against event time); every copy of each event
in first-copy order, kept, dropped (and why the kept one came first) or refused by the reading
(counted once, as refused); the refused records in its range, and apart those whose event time
cannot be read; the row recomputed from exactly those events with the transforms stream and batch
share ("adds up" or the columns that differ), and every micro-batch that changed it (Delta time
travel: the hot path pays nothing). Reads go through delta-rs, pruned by partitions and file
statistics; no Spark job. `--help` lists each table with its key columns.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time

from batch.explain_text import render
from eo.core.declaration import Sessions
from eo.core.lineage import (
    EXPLAINED,
    FIRST_COPY_RULE,
    ExplainError,
    declared,
    differing,
    event_range,
    first_copy_key,
    lateness_seconds,
    parse_key,
    recompute,
    why_first,
)
from eo.core.tables import BRONZE, EVENT_ID, EVENT_TIME, QUARANTINE, SILVER, TableDef
from eo.runtime import lineage
from eo.runtime.cli import EXIT_CODES, USAGE, guarded
from eo.runtime.config import Settings, load_settings

HISTORY_LIMIT = 20


def _dates(table: TableDef, key: dict) -> list[dt.date] | None:
    first = key.get(table.range_column) if table.range_column else None
    return [first.date()] if first is not None else None


def stored_row(delta, table: TableDef, key: dict) -> dict | None:
    found = lineage.rows(delta, table, key, _dates(table, key)).to_pylist()
    return found[0] if found else None


def _copies_of(bronze, quarantine, events: list[dict]) -> tuple[list[dict], int, int]:
    """Each event with its coordinates, whether bronze holds them, its lateness, and every copy of it
    in bronze in first-copy order: kept (silver's), dropped as a duplicate (with why the kept one
    came first), or refused by the reading (counted once, as refused). Returns (events, copies
    dropped, copies refused)."""
    coordinates = [(e["kafka_topic"], e["kafka_partition"], e["kafka_offset"]) for e in events]
    present = lineage.in_bronze(bronze, coordinates)
    found = lineage.copies(bronze, [e[EVENT_ID] for e in events])
    others = [tuple(c["coordinates"].values()) for copies in found.values() for c in copies]
    refused = lineage.quarantined(quarantine, [c for c in others if c not in set(coordinates)])
    explained, dropped, refused_copies = [], 0, 0
    for event, at in zip(events, coordinates, strict=True):
        kept = {"topic": at[0], "partition": at[1], "offset": at[2]}
        copies = sorted(found.get(event[EVENT_ID], []), key=first_copy_key)
        for copy in copies:
            copy["lateness_seconds"] = lateness_seconds(_time_of(copy["payload"]), copy["kafka_timestamp"])
            if copy["coordinates"] == kept:
                copy["fate"] = "kept"
            elif (reason := refused.get(tuple(copy["coordinates"].values()))) is not None:
                copy.update(fate="refused", reason=reason)
            else:
                copy["fate"] = "dropped"
        winner = next((c for c in copies if c["fate"] == "kept"), None)
        for copy in copies:
            if copy["fate"] == "dropped" and winner is not None:
                copy["why"] = f"kept {_at(winner)} first: {why_first(winner, copy)}"
        valid = [c for c in copies if c["fate"] != "refused"]
        first = valid[0] if valid else None
        duplicates = [c for c in copies if c["fate"] == "dropped"]
        dropped += len(duplicates)
        refused_copies += sum(c["fate"] == "refused" for c in copies)
        explained.append(
            {
                **{k: v for k, v in event.items() if not k.startswith("kafka_")},
                "coordinates": kept,
                "in_bronze": at in present,
                "kafka_timestamp": event.get("kafka_timestamp"),
                "lateness_seconds": lateness_seconds(event.get(EVENT_TIME), event.get("kafka_timestamp")),
                "ingest_batch": winner["ingest_batch"] if winner else None,
                "copies": copies,
                # The rule's winner among the copies the reading accepted must be the one silver kept.
                "first_by_rule": first is not None and first is winner,
                "won_by": _won_by(winner, valid),
                "duplicates_dropped": duplicates,
            }
        )
    return explained, dropped, refused_copies


def _won_by(winner: dict | None, valid: list[dict]) -> str:
    if winner is None:
        return "the kept copy is not in bronze"
    if len(valid) == 1:
        return "the only copy the reading accepted"
    if valid[0] is not winner:
        return f"NOT the first copy by the rule: {_at(valid[0])} comes first ({why_first(valid[0], winner)})"
    return f"first copy: {why_first(winner, valid[1])} (the next, {_at(valid[1])})"


def _at(copy: dict) -> str:
    at = copy["coordinates"]
    return f"{at['topic']}:{at['partition']}:{at['offset']}"


def _time_of(payload: object) -> dt.datetime | None:
    """A copy's event time as its payload states it (None when it has none that reads)."""
    text = payload.get(EVENT_TIME) if isinstance(payload, dict) else None
    if not isinstance(text, str):
        return None
    try:
        value = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value.replace(tzinfo=value.tzinfo or dt.UTC)


def _names(table: TableDef, key: dict) -> dict:
    """The values a refused record of the row's range names in its raw text."""
    gold = declared(table)
    return {c: key[c] for c in (gold.explain.equal if gold else SILVER.key)}


def _gap(table: TableDef):
    """The session gap of a table merged as sessions; None for any other."""
    gold = declared(table)
    return gold.merge.gap if gold and isinstance(gold.merge, Sessions) else None


def explain(
    settings: Settings,
    table_name: str,
    pairs: list[str],
    version: int | None = None,
    as_of: dt.datetime | None = None,
    namespace: str = "main",
    history_limit: int = HISTORY_LIMIT,
) -> dict:
    began = time.monotonic()
    table, key = parse_key(table_name, pairs)
    target = lineage.open_table(settings, table.name, namespace)
    if as_of is not None:
        version = lineage.version_as_of(target, as_of)
    target = lineage.open_table(settings, table.name, namespace, version)
    row = stored_row(target, table, key)
    batch = lineage.batch_of(target, target.version())
    # Without a micro-batch to align on, an older version is read beside the others as of its commit.
    when = None if version is None else lineage.committed_at(target, target.version())

    def aligned(other: TableDef):
        """`other` as it stood after the same micro-batch; bronze, the one log, is only in main."""
        space = "main" if other is BRONZE else namespace
        latest = lineage.open_table(settings, other.name, space)
        return lineage.open_table(settings, other.name, space, lineage.aligned_version(latest, batch, when))

    silver = target if table is SILVER else aligned(SILVER)
    span = event_range(table, key, row)
    events = lineage.events(silver, SILVER, span)
    events_from = "silver" if namespace == "main" else "the rebuild's silver"
    if namespace == "rebuild" and table is not SILVER and row is not None and events.num_rows == 0:
        # A rebuild of an interval writes gold only: the events it counted are bronze's first copies,
        # which the stream's silver holds (where it holds them: the diagnosis compares both sides).
        events = lineage.events(lineage.open_table(settings, SILVER.name, "main"), SILVER, span)
        events_from = "the stream's silver: a rebuild of an interval keeps no silver of its own"
    recomputed = recompute(table, key, events)
    columns = [c for c in table.columns if c not in table.key]
    differ = differing(row, recomputed, columns)
    quarantine = aligned(QUARANTINE)
    explained, dropped, refused_copies = _copies_of(aligned(BRONZE), quarantine, events.to_pylist())
    if table is SILVER and explained and not explained[0]["in_bronze"]:
        differ = [*differ, "coordinates"]
    refused = lineage.refused(quarantine, _names(table, key), span)
    return {
        "table": table.name,
        "namespace": namespace,
        "key": key,
        "version": target.version(),
        "micro_batch": batch,
        "row": row,
        "events": explained,
        "events_from": events_from,
        "rule": FIRST_COPY_RULE,
        "duplicates_dropped": dropped,
        "copies_refused": refused_copies,
        "refused": refused["in_range"],
        "refused_unreadable": refused["unreadable"],
        "recomputed": recomputed,
        "adds_up": row is not None and not differ,
        "note": None if row is not None else f"no {table.name} row with this key at version {target.version()}",
        "differing_columns": differ,
        "history": row_history(settings, table, key, row, namespace, target.version(), history_limit),
        "seconds": round(time.monotonic() - began, 2),
    }


def _neighbours(delta, table: TableDef, key: dict, since: dt.datetime, until: dt.datetime) -> list[dict]:
    """The user's sessions that overlap [since, until]: the explained session and what it merged."""
    spec = declared(table).explain
    equal = {c: key[c] for c in spec.equal}
    found = lineage.rows(delta, table, equal, _span_days(since, until)).to_pylist()
    return [r for r in found if r[spec.until] >= since and r[table.range_column] <= until]


def _span_days(since: dt.datetime, until: dt.datetime) -> list[dt.date]:
    return [since.date() + dt.timedelta(days=n) for n in range((until.date() - since.date()).days + 1)]


def row_history(
    settings: Settings, table: TableDef, key: dict, row: dict | None, namespace: str, upto: int, limit: int
) -> dict:
    """Each commit that changed the row, newest `limit` of them: its version, the micro-batch it came
    from and the values before and after (by time travel, reading only the row's partition)."""
    if limit == 0:
        return {"source": "Delta time travel", "versions_read": 0, "changes": []}
    latest = lineage.open_table(settings, table.name, namespace)
    commits = [c for c in lineage.history(latest) if c["version"] <= upto]
    dates = _dates(table, key)
    column = table.partition_by[0] if table.partition_by and dates else None
    wanted = dates[0].isoformat() if dates else None
    candidates = []
    for commit in commits:
        touched = lineage.touched_partitions(settings, latest, commit["version"], column) if column else None
        if touched is None or wanted in touched:
            candidates.append(commit)
    candidates = candidates[-limit:]
    first = candidates[0]["version"] if candidates else 0
    gap = _gap(table)
    start = key.get(table.range_column) if gap else None
    until = declared(table).explain.until if gap else None
    span = (start - gap, ((row or {}).get(until) or start) + gap) if gap else None
    try:
        before = (
            _state(settings, table, key, span, namespace, first - 1) if first > 0 else _state(None, table, key, span)
        )
    except (ExplainError, OSError):
        before = _state(None, table, key, span)
    changes, unreadable = [], None
    for commit in candidates:
        try:
            after = _state(settings, table, key, span, namespace, commit["version"])
        except (ExplainError, OSError) as exc:  # cleaned up by log retention or VACUUM: older is gone
            unreadable, changes, before = f"version {commit['version']}: {exc}", [], None
            continue
        if after != before:
            changes.append(_change(commit, before, after, table))
        before = after
    found = {"source": "Delta time travel", "versions_read": len(candidates) + (first > 0), "changes": changes}
    if unreadable:
        found["unreadable"] = f"history starts after the newest version no longer readable ({unreadable})"
    return found


def _state(
    settings: Settings | None, table: TableDef, key: dict, span: tuple | None, namespace: str = "main", version: int = 0
) -> dict:
    """The row at `version`, and for a session the user's sessions within the gap of the explained
    one's span (without settings: the state before any commit)."""
    if settings is None:
        return {"row": None, **({"sessions_nearby": []} if span else {})}
    delta = lineage.open_table(settings, table.name, namespace, version)
    found = {"row": stored_row(delta, table, key)}
    if span:
        found["sessions_nearby"] = _neighbours(delta, table, key, *span)
    return found


def _change(commit: dict, before: dict, after: dict, table: TableDef) -> dict:
    change = {
        "version": commit["version"],
        "committed_at": dt.datetime.fromtimestamp(commit["timestamp"] / 1000, dt.UTC).isoformat(),
        "operation": commit.get("operation"),
        "app_id": commit.get("app_id"),
        "epoch": int(commit["epoch"]) if commit.get("epoch") else None,
        "position": int(commit["position"]) if commit.get("position") else None,
        "before": before["row"],
        "after": after["row"],
    }
    if _gap(table):
        was, now = before["sessions_nearby"], after["sessions_nearby"]
        if len(now) < len(was):
            change["merged"] = [{table.range_column: s[table.range_column], "events": s["events"]} for s in was]
    return change


def _as_of(text: str) -> dt.datetime:
    value = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return value.replace(tzinfo=value.tzinfo or dt.UTC)


def tables_help() -> str:
    """Every explainable table with its key columns, each given once with --key (for --help)."""
    width = max(len(name) for name in EXPLAINED)
    lines = [
        f"  {name:<{width}}  " + " ".join(f"--key {column}=..." for column in table.key)
        for name, table in EXPLAINED.items()
    ]
    return "tables and their key columns (every one, once each):\n" + "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m batch.explain",
        description=__doc__.split("\n")[0],
        epilog=f"{tables_help()}\n\n{EXIT_CODES}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("table", help=f"{', '.join(EXPLAINED)}: their key columns below")
    parser.add_argument("--key", action="append", default=[], metavar="COL=VALUE", help="every key column, once each")
    when = parser.add_mutually_exclusive_group()
    when.add_argument("--version", type=int, help="the table's Delta version (default: the latest)")
    when.add_argument("--as-of", type=_as_of, help="the newest version committed by this time (ISO 8601)")
    parser.add_argument(
        "--namespace", choices=["main", "rebuild"], default="main", help="the stream's or the rebuild's"
    )
    parser.add_argument("--history", type=int, default=HISTORY_LIMIT, help="at most this many changes (0: none)")
    parser.add_argument("--json", action="store_true", help="JSON instead of tables")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        found = explain(
            load_settings(), args.table, args.key, args.version, args.as_of, args.namespace, max(args.history, 0)
        )
    except ExplainError as exc:
        print(f"explain: {exc}", file=sys.stderr)
        return USAGE
    print(json.dumps(found, indent=2, default=str) if args.json else render(found))
    return 0 if found["adds_up"] else 1


def cli(argv: list[str] | None = None) -> int:
    """The process's entry point (`python -m batch.explain`, `spark-submit jobs/explain.py`)."""
    return guarded(main, argv)


if __name__ == "__main__":
    raise SystemExit(cli())
