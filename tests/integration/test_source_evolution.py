"""A source's declaration evolves, visibly (docs/sources.md): the declaration file is edited in a
copy of the code and the stream started again on the same lake and checkpoint, as an operator
would after a deploy. Each step runs in a process of its own, because a declaration is read once,
when the code is imported.

- a new optional field: silver gains a nullable column with no reset; older rows read null; new
  ones carry it; a rebuild gives the same rows;
- a key the declaration lacks is kept, counted and named (status, verify, quarantine read it);
- a type change is refused at the start, in one line naming the field and what to do, and doing
  it (a new path for silver, a reset) rebuilds silver from bronze by the new declaration."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from eo.runtime.config import REPO_ROOT

pytestmark = [pytest.mark.integration, pytest.mark.slow]

DECLARATION = Path("eo/core/sources/clicks.schema.json")
COPIED = (
    "eo",
    "streaming",
    "batch",
    "ops",
    "producer",
    "conf",
    *(f"tests/{p.name}" for p in (REPO_ROOT / "tests").glob("*.py")),  # the helpers, not the tests
)

PREAMBLE = """
import json, sys
from eo.runtime.spark import BASE_CONF, JAVA, build_session, close_state_stores
from eo.runtime.config import load_settings
from tests.conftest import lake_settings
from tests.helpers import event, records, prepare_lake, stream, sorted_rows
from eo.core.tables import SILVER
from pathlib import Path
settings = lake_settings(Path(sys.argv[1]), topic="t-evolution")
spark = build_session("eo-evolution", load_settings("local"), conf={
    "spark.master": "local[2]", "spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false",
    JAVA: BASE_CONF[JAVA]})
def silver():
    return {r.event_id: r.asDict() for r in sorted_rows(spark, settings, SILVER)}
"""


def code_copy(root: Path) -> Path:
    """The code the jobs import, copied under `root`, the jars and class archives shared."""
    for part in COPIED:
        source, target = REPO_ROOT / part, root / part
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, target)
    (root / ".cache").symlink_to(REPO_ROOT / ".cache")
    return root


def declare(code: Path, edit) -> None:
    body = json.loads((code / DECLARATION).read_text())
    edit(body)
    (code / DECLARATION).write_text(json.dumps(body, indent=2))


def run(code: Path, data: Path, script: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(code)}
    text = PREAMBLE + textwrap.dedent(script)
    done = subprocess.run(
        [sys.executable, "-c", text, str(data)], cwd=code, env=env, capture_output=True, text=True, timeout=600
    )
    return done


def last_json(done: subprocess.CompletedProcess):
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_declaration_evolves_visibly_and_what_stored_rows_cannot_follow_is_refused(tmp_path):
    code, data = code_copy(tmp_path / "code"), tmp_path / "data"
    first = run(
        code,
        data,
        """
        prepare_lake(spark, settings)
        stream(spark, settings, [records([event("e1", 1), event("e2", 2, zone="z9")])])
        from eo.runtime.unknown_fields import counted
        rows = silver()
        found = {"columns": sorted(rows["e1"]), "unknown": rows["e2"]["unknown_fields"], "counted": counted(settings)}
        print(json.dumps(found))
        """,
    )
    found = last_json(first)
    assert "country" not in found["columns"] and found["unknown"] == ["zone"]
    assert found["counted"] == {"zone": {"kept": 1, "quarantined": 0}}

    declare(code, lambda body: body["properties"].update(country={"type": "string", "pattern": "^[A-Z]{2}$"}))
    second = run(
        code,
        data,
        """
        from streaming.takeover import prepare
        prepare(spark, settings)  # what the stream's start runs first
        stream(spark, settings, [records([event("e3", 3, country="DE"), event("e4", 4, country="de")])])
        # The rebuild's silver (batch/rebuild.py, its gold left out: only silver is compared here).
        from batch.rebuild import classify_log
        from eo.core.transforms.dedup import first_copies
        from eo.core.transforms.parse import valid_events
        stream_rows = silver()
        rebuilt = {r.event_id: r.asDict() for r in first_copies(valid_events(classify_log(spark, settings))).collect()}
        same = all(stream_rows[k][c] == rebuilt[k][c] for k in stream_rows for c in SILVER.columns)
        print(json.dumps({"country": {k: v["country"] for k, v in stream_rows.items()}, "same": same,
                          "keys": sorted(rebuilt) == sorted(stream_rows)}))
        """,
    )
    found = last_json(second)
    assert "[lake] silver: added country string (older rows read them as null)" in second.stdout
    assert found["country"] == {"e1": None, "e2": None, "e3": "DE"}  # e4: bad_value:country, quarantined
    assert found["same"] and found["keys"]

    declare(code, lambda body: body["properties"]["price"].update({"x-sql-type": "DECIMAL(12,2)"}))
    # The stream's start refuses it; then what the line says to do, in the same process: a new path
    # for silver, and a reset that rebuilds it from bronze by the new declaration.
    third = run(
        code,
        data,
        """
        from dataclasses import replace
        from streaming.takeover import prepare
        from ops.reset import reset
        from eo.runtime.environment import environment
        try:
            prepare(spark, settings)
            refused = None
        except Exception as error:
            refused = {"kind": type(error).__name__, "line": str(error)}
        settings = replace(settings, tables={**settings.tables, "silver": "silver/events_v2"})
        done = reset(settings)
        price = environment(settings).table("silver").schema().field("price").type
        rows = silver()
        country = {k: v["country"] for k, v in rows.items()}
        print(json.dumps({"refused": refused, "done": done, "price": str(price), "country": country}))
        """,
    )
    found = last_json(third)
    refused = found.pop("refused")
    assert refused["kind"] == "Refused" and "\n" not in refused["line"]
    assert refused["line"].startswith("silver: field price is declared DECIMAL(12,2) but stored as DECIMAL(10,2)")
    assert "give silver a new path" in refused["line"] and "python -m ops.reset" in refused["line"]
    assert found == {"done": 0, "price": "decimal128(12, 2)", "country": {"e1": None, "e2": None, "e3": "DE"}}
