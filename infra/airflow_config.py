"""airflow.cfg from the settings this project's Airflow runs with, and where its metadata lives
in words (infra/airflow.py)."""

from __future__ import annotations

import urllib.parse


def config_file(env: dict[str, str]) -> str:
    """airflow.cfg holding every `AIRFLOW__<SECTION>__<KEY>` of `env` (what this project's Airflow
    runs with), section by section: Airflow's defaults for the rest."""
    sections: dict[str, dict[str, str]] = {}
    for name, value in sorted(env.items()):
        parts = name.split("__")
        if len(parts) == 3 and parts[0] == "AIRFLOW" and parts[1] and parts[2]:
            sections.setdefault(parts[1].lower(), {})[parts[2].lower()] = value.replace("%", "%%")
    lines = ["# Written by infra/airflow.py from the settings every Airflow process of this project gets;", ""]
    for section, values in sections.items():
        lines += [f"[{section}]", *(f"{key} = {value}" for key, value in values.items()), ""]
    return "\n".join(lines)


def where(db_url: str) -> str:
    """A metadata database's place in words, without its password."""
    if db_url.startswith("sqlite"):
        return f"SQLite at {db_url.split(':///', 1)[-1]} (testing only)"
    parsed = urllib.parse.urlsplit(db_url)
    kind = "PostgreSQL" if parsed.scheme.startswith("postgresql") else parsed.scheme
    return f"{kind} at {parsed.hostname}:{parsed.port or 5432}{parsed.path}"
