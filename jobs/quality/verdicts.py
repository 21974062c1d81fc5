"""Where verdicts are kept: reports/verify/latest.json, a timestamped copy, and one per
Airflow run. Plain files, no Spark, so light tasks can read them."""

from __future__ import annotations

import json
from pathlib import Path

from jobs.config import Settings


def write_verdict(settings: Settings, verdict: dict, extra_copy: Path | None = None) -> Path:
    folder = Path(settings.reports_root) / "verify"
    folder.mkdir(parents=True, exist_ok=True)
    stamp = verdict["checked_at"].replace(":", "").replace("+0000", "Z")
    text = json.dumps(verdict, indent=2, default=str)
    (folder / f"{stamp}.json").write_text(text)
    latest = folder / "latest.json"
    latest.write_text(text)
    if extra_copy:
        extra_copy.parent.mkdir(parents=True, exist_ok=True)
        extra_copy.write_text(text)
    return latest


def run_verdict_path(settings: Settings, name: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    return Path(settings.reports_root) / "verify" / "runs" / f"{safe}.json"
