"""Where verdicts are kept: reports/verify/latest.json, a timestamped copy, and one per
Airflow run, on the local disk or the lake bucket. Plain files, no Spark, so light tasks can
read them."""

from __future__ import annotations

import json

from eo.runtime.config import Settings
from eo.runtime.environment import environment

NOT_REBUILT = "not rebuilt"  # a verdict's status when nothing asked for was rebuilt
FIRST_KEYS = 2


def verify_folder(settings: Settings) -> str:
    return f"{settings.reports_root.rstrip('/')}/verify"


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
    return verdict.get("data_docs_url") or verdict["data_docs"]


def not_rebuilt_line(verdict: dict) -> str:
    """One line for a verification of event time nobody rebuilt: a skip, not a failure."""
    return (
        f"not rebuilt: {verdict['not_rebuilt']}, nothing to compare (rebuilt so far: {verdict['rebuilt']}); "
        "rebuild it first (rebuild_derived, or python -m batch.rebuild)"
    )


def failure_line(verdict: dict) -> str:
    """One line for a failed verification: each failing table's counts and first differing keys."""
    parts = []
    for name, table in verdict["tables"].items():
        if table["passed"]:
            continue
        counts = ", ".join(f"{k} {table[k]:,}" for k in ("missing", "extra", "different") if table.get(k))
        keys = "; ".join(
            " ".join(f"{k}={v}" for k, v in key.items() if k != "status")
            for key in table.get("sample", [])[:FIRST_KEYS]
        )
        parts.append(f"{name} {counts or 'domain checks failed'}" + (f" (first: {keys})" if keys else ""))
    reconciliation = verdict.get("reconciliation") or {}
    if reconciliation and not reconciliation.get("passed", True):
        parts.append(
            f"reconciliation: accepted {reconciliation['accepted']:,} != accounted {reconciliation['accounted']:,}"
            + (f", lost {reconciliation['lost']:,}" if reconciliation.get("lost") else "")
        )
    return f"stream and batch disagree over {verdict['scope']}: " + " | ".join(parts or ["see the verdict"])
