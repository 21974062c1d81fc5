"""`make *-status` answers people with a table and scripts with JSON; a stopped service is an answer."""

from __future__ import annotations

import json
import re
import uuid

import pytest

from eo.runtime.config import REPO_ROOT
from infra import kafka
from infra.status import seconds, table

pytestmark = pytest.mark.unit


def test_every_make_target_says_what_it_does_in_make_help():
    makefile = (REPO_ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z][a-z-]*):", makefile, flags=re.M))
    described = set(re.findall(r"^([a-z][a-z-]*):.*## ", makefile, flags=re.M))
    assert targets and targets == described, f"targets without a ## description: {sorted(targets - described)}"


def test_a_stopped_broker_is_an_answer_and_check_makes_it_not_ready(tmp_path, capsys):
    where = ["--port", "1", "--home", str(tmp_path)]
    assert kafka.main(["status", *where]) == 0
    shown = capsys.readouterr().out
    assert re.search(r"^Kafka\s+stopped$", shown, flags=re.M) and "make kafka-start" in shown

    assert kafka.main(["status", "--json", *where]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "service": "kafka",
        "state": "stopped",
        "bootstrap": "127.0.0.1:1",
        "home": str(tmp_path),
    }
    assert kafka.main(["status", "--check", *where]) == 3


def test_tables_align_and_durations_read_like_durations():
    assert table([("a", 1), ("long name", "x")]) == "a          1\nlong name  x"
    assert [seconds(v) for v in (None, 3.04, 969.8, 9000)] == ["never", "3.0 s", "16 min", "2.5 h"]


def test_a_kafka_cluster_id_never_reads_as_an_option(monkeypatch):
    # 0xF8 encodes to a leading '-' in URL-safe base64: StorageTool took '-t -lc_…' for two options.
    ids = iter([uuid.UUID(bytes=b"\xf8" + bytes(15)), uuid.UUID(bytes=b"\x01" * 16)])
    monkeypatch.setattr(kafka.uuid, "uuid4", lambda: next(ids))
    assert kafka._cluster_id() == "AQEBAQEBAQEBAQEBAQEBAQ"


def test_the_running_instance_is_named_by_its_pid_host_and_epoch():
    """`make stream-status` (and --json) name the stream's pid and epoch, as the lease holds them."""
    from eo.runtime.fencing import HeldBy
    from infra import streaming

    held = HeldBy("the stream on box-1 pid 4242 since 2026-12-06 16:00:00 UTC", 17, 1_796_000_000.0)
    found = streaming.instance(held)
    assert (found["pid"], found["host"], found["epoch"]) == (4242, "box-1", 17)
    assert streaming._instance_line(found) == "pid 4242 on box-1, epoch 17"
    other = streaming.instance(HeldBy("an EMR Serverless job run 00abc", 3, 1_796_000_000.0))
    assert other["pid"] is None and streaming._instance_line(other) == "an EMR Serverless job run 00abc, epoch 3"
    assert streaming.instance(None) is None
