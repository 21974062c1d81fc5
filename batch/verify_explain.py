"""Verify explains its own findings: for each differing key (up to a limit), the explanation of
both sides (batch/explain.py), the stream's row from its events and the batch's from the rebuild,
and what their events say about the difference."""

from __future__ import annotations

import json

from batch.explain import explain
from eo.core.lineage import ExplainError
from eo.core.tables import EVENT_ID, SOURCE, TableDef
from eo.runtime.config import Settings
from eo.runtime.environment import environment
from eo.runtime.quality.verdicts import safe_name, verify_folder

EXPLAIN_KEYS = 5  # differing keys explained per table: each costs a few delta-rs reads


def _side(found: dict) -> dict:
    return {
        "adds_up": found["adds_up"],
        "differing_columns": found["differing_columns"],
        "row": found["row"],
        "recomputed": found["recomputed"],
        "events": {e[EVENT_ID]: {k: e.get(k) for k in SOURCE.field_names if k != EVENT_ID} for e in found["events"]},
        "coordinates": {e[EVENT_ID]: e["coordinates"] for e in found["events"]},
        "duplicates_dropped": found["duplicates_dropped"],
        "version": found["version"],
    }


def diagnosis(stream: dict, batch: dict) -> str:
    """What the two sides' events tell: a row that does not add up on its own side, events only one
    side holds (lost or extra), or the same events with other values (a different copy kept)."""
    if not stream["adds_up"] and stream["row"] is not None:
        return f"the stream's row does not add up from its own events ({', '.join(stream['differing_columns'])})"
    if not batch["adds_up"] and batch["row"] is not None:
        return f"the rebuild's row does not add up from its own events ({', '.join(batch['differing_columns'])})"
    only_stream = sorted(set(stream["events"]) - set(batch["events"]))
    only_batch = sorted(set(batch["events"]) - set(stream["events"]))
    if only_stream or only_batch:
        return f"events only the stream holds {only_stream[:5]}, only the rebuild {only_batch[:5]}"
    other_copy = sorted(i for i in stream["events"] if stream["events"][i] != batch["events"][i])
    if other_copy:
        return f"the same events, but another copy kept of {other_copy[:5]} (a copy-choice difference)"
    return "both sides hold the same events and each adds up"


def command(table: TableDef, key: dict, namespace: str) -> str:
    keys = " ".join(f"--key '{k}={v}'" for k, v in key.items())
    extra = " --namespace rebuild" if namespace == "rebuild" else ""
    return f"python -m batch.explain {table.name} {keys}{extra}"


def explain_differences(settings: Settings, table: TableDef, sample: list[dict], run_name: str) -> list[dict]:
    """The explanation of each differing key of `sample` (at most EXPLAIN_KEYS), kept as JSON under
    reports/verify/explanations/<run>/ and summarised for the verdict."""
    found = []
    for n, differing in enumerate(sample[:EXPLAIN_KEYS]):
        key = {k: differing[k] for k in table.key}
        pairs = [f"{k}={v}" for k, v in key.items()]
        entry = {"key": key, "status": differing["status"]}
        try:
            stream = _side(explain(settings, table.name, pairs, history_limit=0))
            batch = _side(explain(settings, table.name, pairs, namespace="rebuild", history_limit=0))
        except Exception as exc:  # noqa: BLE001 (a diagnostic must never cost the verdict)
            entry["error"] = f"{type(exc).__name__}: {exc}" if not isinstance(exc, ExplainError) else str(exc)
            found.append(entry)
            continue
        entry.update(
            stream=stream, batch=batch, diagnosis=diagnosis(stream, batch), command=command(table, key, "main")
        )
        uri = f"{verify_folder(settings)}/explanations/{safe_name(run_name)}/{table.name}-{n}.json"
        environment(settings).report_files.write_text(uri, json.dumps(entry, indent=2, default=str))
        entry["file"] = uri
        found.append(entry)
    return found


def lines(explained: list[dict]) -> list[str]:
    """For the verify log: one line per explained key, with where its explanation is."""
    out = []
    for e in explained:
        if "error" in e:
            out.append(f"    {e['key']}: cannot explain: {e['error']}")
            continue
        side = {True: "adds up", False: "does NOT add up"}
        out.append(
            f"    {e['status']} {e['key']}: stream {side[e['stream']['adds_up']]}, rebuild "
            f"{side[e['batch']['adds_up']]}: {e['diagnosis']}"
        )
        out.append(f"      explanation: {e['file']}  (again: {e['command']})")
    return out
