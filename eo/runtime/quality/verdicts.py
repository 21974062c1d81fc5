"""Where verdicts are kept: reports/verify/latest.json, a timestamped copy, and one per
Airflow run, on the local disk or the lake bucket. Plain files, no Spark, so light tasks can
read them."""

from __future__ import annotations

import datetime as dt
import json

from eo.core.intervals import Interval, human
from eo.runtime.config import Settings
from eo.runtime.environment import environment

NOT_REBUILT = "not rebuilt"  # a verdict's status when nothing asked for was rebuilt
FIRST_KEYS = 2


def verify_folder(settings: Settings) -> str:
    return f"{settings.source_reports}/verify"


def write_verdict(settings: Settings, verdict: dict, extra_copy: str | None = None) -> str:
    stamp = verdict["checked_at"].replace(":", "").replace("+0000", "Z")
    text = json.dumps(verdict, indent=2, default=str)
    latest = f"{verify_folder(settings)}/latest.json"
    for uri in (f"{verify_folder(settings)}/{stamp}.json", latest, extra_copy):
        if uri:
            environment(settings).report_files.write_text(str(uri), text)
    return latest


def safe_name(name: str) -> str:
    """A run id (Airflow's hold colons and plus signs) as a file or folder name."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def run_verdict_path(settings: Settings, name: str) -> str:
    return f"{verify_folder(settings)}/runs/{safe_name(name)}.json"


def read_verdict(settings: Settings, uri: str) -> dict | None:
    return (
        json.loads(environment(settings).report_files.read_text(uri))
        if environment(settings).report_files.exists(uri)
        else None
    )


def docs_link(verdict: dict) -> str:
    """Where a browser opens the Data Docs: Airflow's served copy when there is one, else the files."""
    return verdict.get("data_docs_url") or verdict.get("data_docs") or "none (nothing was validated)"


def _stamped(settings: Settings, intervals: list[Interval] | None) -> dict:
    return {
        "checked_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "env": settings.env,
        "intervals": None if intervals is None else [[i.start.isoformat(), i.end.isoformat()] for i in intervals],
        "tables": {},
        "expectations": [],
    }


def not_rebuilt_verdict(settings: Settings, intervals: list[Interval] | None, rebuilt: list[Interval]) -> dict:
    """The verdict on event time nobody rebuilt: no comparison, so neither passed nor failed."""
    return {
        "passed": None,
        "status": NOT_REBUILT,
        "not_rebuilt": human(intervals),
        "rebuilt": human(rebuilt) if rebuilt else "nothing",
        "scope": human(intervals),
        **_stamped(settings, intervals),
    }


def no_rows_verdict(settings: Settings, intervals: list[Interval], compared: list[Interval], not_rebuilt) -> dict:
    """The verdict on rebuilt event time where no table holds a row: both sides agree, empty."""
    return {
        "passed": True,
        "status": "passed",
        "empty": True,
        "not_rebuilt": human(not_rebuilt) if not_rebuilt else None,
        "scope": human(compared),
        "note": f"no rows over {human(compared)} on either side (stream gold and silver, rebuilt gold): nothing "
        "to compare, answered from the tables' logs without Spark (refused records of it, if any, are counted "
        "by a verification of all event time)",
        **_stamped(settings, intervals),
    }


def answered_line(verdict: dict) -> str:
    """One line for a verdict given without Spark: not rebuilt, or rebuilt with no rows."""
    if verdict.get("status") == NOT_REBUILT:
        return not_rebuilt_line(verdict)
    return f"verification PASSED over {verdict['scope']}: {verdict['note']}"


def answer_without_spark(
    settings: Settings,
    intervals: list[Interval] | None,
    verdict_file: str | None = None,
    rebuilt: list[Interval] | None = None,
) -> dict | None:
    """The verdict on `intervals` (None: all event time) when it needs no Spark, written; else None.

    Nothing of them rebuilt: "not rebuilt" (eo/runtime/coverage.py; `rebuilt`: the coverage, when
    the caller has read it). Rebuilt, but no table holds a row of them
    (eo/runtime/quality/presence.py): passed, empty. Reads only Delta logs and coverage files."""
    from eo.core.intervals import covered
    from eo.runtime.coverage import rebuilt_intervals
    from eo.runtime.quality.presence import holding_rows

    rebuilt = rebuilt_intervals(settings) if rebuilt is None else rebuilt
    compared, not_rebuilt = covered(intervals, rebuilt)
    if not compared:
        verdict = not_rebuilt_verdict(settings, intervals, rebuilt)
    elif intervals is not None and not holding_rows(settings, compared):
        verdict = no_rows_verdict(settings, intervals, compared, not_rebuilt)
    else:
        return None
    write_verdict(settings, verdict, verdict_file)
    return verdict


def not_rebuilt_line(verdict: dict) -> str:
    """One line for a verification of event time nobody rebuilt: a skip, not a failure."""
    return (
        f"not rebuilt: {verdict['not_rebuilt']}, nothing to compare (rebuilt so far: {verdict['rebuilt']}); "
        "rebuild it first (rebuild_derived, or python -m batch.rebuild)"
    )


ONE_SIDE = {"missing": "only in the rebuild, not in the stream", "extra": "only in the stream, not in the rebuild"}


def first_key(key: dict) -> str:
    """A differing key of a verdict's sample for one line: its columns, then each differing value
    on both sides ("events stream 3, batch 2"), or which side alone holds it."""
    named = " ".join(f"{k}={v}" for k, v in key.items() if k not in ("status", "values"))
    if key.get("values"):
        return f"{named}: " + ", ".join(
            f"{column} stream {both['stream']}, batch {both['batch']}" for column, both in key["values"].items()
        )
    side = ONE_SIDE.get(key.get("status"))
    return f"{named}: {side}" if side else named


def headline(verdict: dict) -> str:
    """The first line of a failed verification's error, short enough for a narrow log panel: the first
    failing table's first differing key and both its values, before any count or interval."""
    for name, table in verdict["tables"].items():
        if not table["passed"]:
            sample = table.get("sample", [])[:1]
            return f"{name}: {first_key(sample[0])}" if sample else f"{name}: domain checks failed"
    reconciliation = verdict.get("reconciliation") or {}
    if reconciliation and not reconciliation.get("passed", True):
        return (
            f"reconciliation: {reconciliation['lost']:,} accepted records lost"
            if reconciliation.get("lost")
            else ("reconciliation failed")
        )
    return "verification failed"


def failure_line(verdict: dict) -> str:
    """One line for a failed verification: each failing table's counts and first differing keys, with
    both sides' values of each."""
    parts = []
    for name, table in verdict["tables"].items():
        if table["passed"]:
            continue
        counts = ", ".join(f"{k} {table[k]:,}" for k in ("missing", "extra", "different") if table.get(k))
        keys = "; ".join(first_key(key) for key in table.get("sample", [])[:FIRST_KEYS])
        parts.append(f"{name} {counts or 'domain checks failed'}" + (f" (first: {keys})" if keys else ""))
    reconciliation = verdict.get("reconciliation") or {}
    if reconciliation and not reconciliation.get("passed", True):
        r = reconciliation
        relation = "=" if r["accepted"] == r["accounted"] else "!="
        unplaced = f" ({r['lost_not_in_bronze']:,} not in bronze)" if r.get("lost_not_in_bronze") else ""
        parts.append(
            f"reconciliation: accepted {r['accepted']:,} {relation} accounted {r['accounted']:,}"
            + (f", lost {r['lost']:,}{unplaced}" if r.get("lost") else "")
        )
    return f"stream and batch disagree over {verdict['scope']}: " + " | ".join(parts or ["see the verdict"])
