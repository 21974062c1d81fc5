"""The gold tables as declarations give, on one fixed input, what the hand-wired code gave.

`golden/gold_outputs.json` was captured from the code before the declarations (issue 71): both gold
tables as the stream wrote them and as the rebuild wrote them (rows by key), verify's verdict as
text, explain's answer for a row of each table, and the demo's summary of that verdict as text
(`lab.demo.print_summary`, at ba3f78f, with the same fixed producer and timing figures). The
same input must give them again, row for row. `EO_WRITE_GOLDEN=1` writes the file anew (only when
the outputs are meant to change).

A table declared later (ad_hour_revenue) is not in the file, which holds only what the code before
could give; on the same run it must be streamed, rebuilt and verified (its line in the verdict
passed) and a row of it explained, adding up.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import os
import re
import types
from pathlib import Path

import pytest

from batch.explain import explain
from batch.rebuild import rebuild
from batch.verify import describe, verify
from eo.runtime.config import REPO_ROOT
from lab.demo import print_summary
from producer.generator import ClickstreamGenerator
from tests.conftest import lake_settings
from tests.helpers import BASE, prepare_lake, records, sorted_rows, stream

pytestmark = [pytest.mark.unit, pytest.mark.slow]  # about a minute: two micro-batches, a rebuild, a verify

GOLDEN = Path(__file__).parent / "golden" / "gold_outputs.json"
CAPTURED = ("campaign_minute_metrics", "user_sessions")
# What differs from run to run: clocks, durations, the lake's place, run ids.
TABLE_LINE = re.compile(r"^  (\w+) +stream ")  # a table's line in verify's text
VOLATILE = {"seconds", "committed_at", "app_id", "checked_at", "data_docs", "data_docs_url", "run_name"}


# Silver's column of keys the declaration lacked came after the capture (issue 72): an event that
# carried none shows it null, which the capture could not hold.
LATER_NULL_COLUMNS = ("unknown_fields",)


def _plain(value):
    """A value as JSON holds it, the volatile fields dropped."""
    if isinstance(value, dict):
        return {
            k: _plain(v) for k, v in value.items() if k not in VOLATILE and not (k in LATER_NULL_COLUMNS and v is None)
        }
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def _table_rows(spark, settings, name: str, namespace: str) -> list[dict]:
    from eo.core.tables import ALL

    return [_plain(row.asDict(recursive=True)) for row in sorted_rows(spark, settings, ALL[name], namespace)]


def normalized(text: str, tmp_path: Path) -> str:
    """Verify's text without what changes from run to run: the rebuild's start, the lake's folder."""
    text = re.sub(r"before \d{4}-\d\d-\d\dT[\d:.+]+", "before <the rebuild's start>", text)
    text = text.replace(str(tmp_path), "<lake>")
    kept = (*CAPTURED, "silver", "quarantine")
    lines = [line for line in text.splitlines() if not (m := TABLE_LINE.match(line)) or m.group(1) in kept]
    return "\n".join(lines)


def demo_summary(settings, verdict: dict, tmp_path: Path) -> str:
    """The demo's summary of this verdict, as `make demo` prints it; the producer's and the clock's
    figures fixed (they are not the tables'), the lake's folder and the checkout named, and only
    the captured tables' lines kept (a later table adds its own line)."""
    stats = types.SimpleNamespace(sent=800, acked=800, rate=400.0)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        print_summary(settings, verdict, stats, {"records": 800, "seconds": 2.0}, {"stream": 1.0, "total": 2.0})
    # The verdict's place: the settings' reports root, the checkout's reports/ for `make demo`.
    text = printed.getvalue().replace(f"{settings.reports_root}/verify", str(REPO_ROOT / "reports" / "verify"))
    text = text.replace(str(tmp_path), "<lake>").replace(str(REPO_ROOT), "<repo>")
    table_line = re.compile(r"^  (\w+) +[\d,]+  \(batch ")
    later = [n for n in verdict["tables"] if n not in CAPTURED]
    added = ("  source ", "  unknown fields ")  # the source's lines came after the capture (issue 72)
    return "".join(
        line
        for line in text.splitlines(keepends=True)
        if not ((m := table_line.match(line)) and m.group(1) in later) and not line.startswith(added)
    )


def _key_pairs(row: dict, key: tuple[str, ...]) -> list[str]:
    return [f"{column}={row[column]}" for column in key]


def outputs(spark, tmp_path) -> dict:
    """The outputs the golden file holds, from the code as it is."""
    from eo.core.gold import DECLARED
    from eo.core.tables import ALL

    settings = lake_settings(tmp_path)
    generator = ClickstreamGenerator(seed=71, start=BASE, span_hours=30, total_events=800, users=25)
    rows = records(m.value for m in generator.messages())
    prepare_lake(spark, settings)
    stream(spark, settings, [rows[:500], rows[500:]])
    rebuild(spark, settings)
    verdict = verify(spark, settings, run_name="golden")
    # The lake's lines (issue 69: its position against the checkpoint, how it began) came after the capture.
    skipped = ("data docs:", "  live tables:", "  lake ")
    text = "\n".join(
        line for line in describe(verdict).splitlines() if not line.startswith(skipped) and "data docs:" not in line
    )
    found: dict = {"verdict": normalized(text, tmp_path), "tables": {}, "explain": {}, "declared": {}}
    found["summary"] = demo_summary(settings, verdict, tmp_path)
    for name in CAPTURED:
        stream_rows = _table_rows(spark, settings, name, "main")
        found["tables"][name] = {"stream": stream_rows, "rebuild": _table_rows(spark, settings, name, "rebuild")}
        key = ALL[name].key
        chosen = [stream_rows[0], max(stream_rows, key=lambda r: (r["events"], str([r[k] for k in key])))]
        found["explain"][name] = [_plain(explain(settings, name, _key_pairs(row, key))) for row in chosen]
    # Every other declared table: streamed, rebuilt and verified above; a row of it explained.
    for name in (n for n in DECLARED if n not in CAPTURED):
        rows = _table_rows(spark, settings, name, "main")
        row = max(rows, key=lambda r: str(sorted(r.items())))
        found["declared"][name] = {
            "rows": len(rows),
            "verified": verdict["tables"][name]["passed"],
            "explained": explain(settings, name, _key_pairs(row, ALL[name].key)),
        }
    return found


def test_declared_tables_give_what_the_hand_wired_code_gave(spark, tmp_path):
    found = json.loads(json.dumps(outputs(spark, tmp_path), default=str))
    if os.environ.get("EO_WRITE_GOLDEN") == "1":  # what the code before the declarations could give
        captured = {k: v for k, v in found.items() if k != "declared"}
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(captured, indent=1, sort_keys=True) + "\n")
    golden = json.loads(GOLDEN.read_text())
    assert found["verdict"] == golden["verdict"]
    assert found["summary"] == golden["summary"]
    for name in CAPTURED:
        for side in ("stream", "rebuild"):
            assert found["tables"][name][side] == golden["tables"][name][side], (name, side)
        assert found["explain"][name] == golden["explain"][name], name
    assert "verification PASSED" in found["verdict"]
    for name, declared in found["declared"].items():  # in the verdict's tables, and explained
        assert declared["rows"] > 0 and declared["verified"] and declared["explained"]["adds_up"], (name, declared)
