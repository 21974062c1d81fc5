"""python -m ops.quarantine: selection, listing, export and republish --dry-run, without Kafka."""

from __future__ import annotations

import datetime as dt
import hashlib
import json

import pytest

from eo.core.tables import QUARANTINE
from ops.quarantine import main, republish
from ops.quarantine.escape import printable
from ops.quarantine.export import export_problem, write_lines
from ops.quarantine.filters import ReasonPattern, parse_coordinates, parse_timestamp
from ops.quarantine.republish import message_key
from tests.conftest import lake_settings
from tests.helpers import BASE, event, prepare_lake, records

pytestmark = pytest.mark.unit

HOSTILE = '{"event_id":"q3","user_id":"\x1b[31mred\x1b]0;title\x07 [bold]x[/bold] \u202eevil\x9b2J"}'
LONG = json.dumps(event("q10", 10, price="x" * 300))
# (payload, reason or None when valid, event_id in quarantine)
RECORDS = [
    (event("e1", 0), None, None),
    ('{"event_id":"q1","user_id":"u1"} trailing', "malformed_json:trailing_data", "q1"),
    ('{"event_id": "q2", ', "malformed_json:syntax", None),
    (HOSTILE, "malformed_json:syntax", None),
    (b'{"event_id":"q4",\n"user_id":"u1"}', "malformed_json:syntax", None),
    (event("q5", 5, user=None), "missing_field:user_id", "q5"),
    (event("q6", 6, event_time="yesterday"), "bad_value:event_time", "q6"),
    (event("q7", 7, event_time="tomorrow"), "bad_value:event_time", "q7"),
    (event("q8", 8, campaign_id="c999"), "bad_value:campaign_id", "q8"),
    (b'\xff\xfe{"event_id":"q9"}\r', "malformed_json:syntax", None),
    (LONG, "bad_type:price", "q10"),
    (b'{"event_id":"q11"}', "poison:SparkRuntimeException", "q11"),
    (event("e2", 12), None, None),
]


def minute(i: int) -> dt.datetime:
    return BASE + dt.timedelta(minutes=i)


def build_lake(spark, settings, spec=RECORDS) -> list[tuple]:
    """Bronze holds every record (the i-th at BASE + i minutes); quarantine the bad ones.

    Returns the quarantine rows: (topic, partition, offset, timestamp, key, raw_value, reason, event_id, value).
    """
    rows = [(*row[:5], minute(i)) for i, row in enumerate(records(p for p, _, _ in spec))]
    prepare_lake(spark, settings, rows)
    bad = [
        (topic, partition, offset, ts, key, value.decode("utf-8", "replace"), reason, event_id, value)
        for (key, value, topic, partition, offset, ts), (_, reason, event_id) in zip(rows, spec, strict=True)
        if reason
    ]
    # The first bad record also carried a key the declaration lacks (quarantine's unknown_fields).
    carried = [["zone"]] + [None] * (len(bad) - 1)
    frame = spark.createDataFrame([(*row[:8], keys) for row, keys in zip(bad, carried, strict=True)], QUARANTINE.ddl)
    frame.write.format("delta").mode("append").save(settings.table_path(QUARANTINE.name))
    return bad


@pytest.fixture(scope="module")
def lake_with_quarantine(spark, tmp_path_factory):
    settings = lake_settings(tmp_path_factory.mktemp("quarantine-cli"))
    return settings, build_lake(spark, settings)


def run(capsys, spark, settings, *argv) -> tuple[int, str, str]:
    code = main(list(argv), settings=settings, spark=spark)
    out, err = capsys.readouterr()
    return code, out, err


def test_list_names_each_unknown_field_with_its_records(capsys, spark, lake_with_quarantine):
    settings, _ = lake_with_quarantine
    code, out, _ = run(capsys, spark, settings, "list")
    assert code == 0
    assert "unknown field 'zone' in 1 clicks records (0 kept, 1 quarantined)" in out
    code, out, _ = run(capsys, spark, settings, "list", "--json")
    assert json.loads(out)["unknown_fields"] == {"zone": {"kept": 0, "quarantined": 1}}


def coordinates(row) -> str:
    return f"{row[0]}:{row[1]}:{row[2]}"


# -- pure selection logic -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value", "family"),
    [
        ("bad_value:event_time", "bad_value:event_time", False),
        ("malformed_json", "malformed_json", False),
        ("bad_value:*", "bad_value", True),
        ("bad_value*", "bad_value", True),
        (" bad_value:* ", "bad_value", True),
        ("*", None, True),
    ],
)
def test_reason_patterns(text, value, family):
    assert ReasonPattern.parse(text) == ReasonPattern(value, family)


@pytest.mark.parametrize("text", ["", ":*", "bad*value", "bad_value:event*", "*:x", "a:b*"])
def test_bad_reason_patterns(text):
    with pytest.raises(ValueError, match="bad reason pattern"):
        ReasonPattern.parse(text)


def test_reason_pattern_as_a_spark_filter(spark):
    reasons = spark.createDataFrame(
        [("bad_value:event_time",), ("bad_value:campaign_id",), ("bad_value",), ("bad_values:x",), ("bad_type:price",)],
        "reason STRING",
    )

    def kept(pattern: str) -> set[str]:
        return {r.reason for r in reasons.where(ReasonPattern.parse(pattern).column()).collect()}

    assert kept("bad_value:*") == kept("bad_value*") == {"bad_value:event_time", "bad_value:campaign_id", "bad_value"}
    assert kept("bad_value:event_time") == {"bad_value:event_time"}
    assert kept("bad_value") == {"bad_value"}
    assert len(kept("*")) == 5


def test_timestamps_are_utc_unless_they_say_otherwise():
    utc = dt.datetime(2026, 11, 5, 10, tzinfo=dt.UTC)
    assert parse_timestamp("2026-11-05T10:00:00Z") == utc
    assert parse_timestamp("2026-11-05T10:00:00") == utc
    assert parse_timestamp("2026-11-05 11:00+01:00") == utc
    assert parse_timestamp("2026-11-05") == utc.replace(hour=0)
    with pytest.raises(ValueError, match="ISO 8601"):
        parse_timestamp("yesterday")


def test_coordinates():
    assert parse_coordinates("clickstream:2:1041, my.topic-1:0:0,clickstream:2:1041,") == [
        ("clickstream", 2, 1041),
        ("my.topic-1", 0, 0),
    ]


@pytest.mark.parametrize(
    "text", ["t:1", "t:x:1", "t:1:-3", ":1:2", "a b:1:2", "t:1:2:3", ",", "t:1.5:2", "t:1_0:2", "t:+1:2"]
)
def test_bad_coordinates(text):
    with pytest.raises(ValueError, match="coordinate"):
        parse_coordinates(text)


def test_printable_escapes_what_could_drive_a_terminal():
    assert printable('{"a": 1}') == '{"a": 1}'
    assert printable("a\x1b[2Jb\n\r\t\x00\x7f\x9b") == "a\\x1b[2Jb\\n\\r\\t\\x00\\x7f\\x9b"
    assert printable("rtl\u202eltr\u200b \u2028") == "rtl\\u202eltr\\u200b \\u2028"
    assert printable("café ✓ 日本") == "café ✓ 日本"


def test_printable_cuts_after_escaping_never_inside_an_escape():
    assert printable("x" * 10, 10) == "x" * 10
    assert printable("x" * 11, 10) == "x" * 10 + "…"
    assert printable("xxxxxxxx\x1b", 10) == "xxxxxxxx…"


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (b'{"a":1}', None),
        (b'{"a":"x\ry"}', None),  # replay splits on \n only
        (b'{"a":\n1}', "contains a newline"),
        (b'{"a":1}\r', "ends with a carriage return"),
        (b" \t", "is blank"),
        (b"", "is blank"),
        (None, "has no value"),
    ],
)
def test_export_guard(value, problem):
    assert export_problem(value) == problem


def test_write_lines_keeps_bytes_and_leaves_out_what_is_not_a_line(tmp_path):
    out = tmp_path / "sub" / "fix.jsonl"
    values = [("t:0:1", b'{"a":1}'), ("t:0:2", b"x\ny"), ("t:1:0", b"\xff{}"), ("t:1:1", b"\r")]
    written, skipped = write_lines(values, out)
    assert (written, skipped) == (2, {"contains a newline": ["t:0:2"], "ends with a carriage return": ["t:1:1"]})
    assert out.read_bytes() == b'{"a":1}\n\xff{}\n'
    assert not (tmp_path / "sub" / "fix.jsonl.part").exists()


def test_keys_follow_the_producer():
    assert message_key(b'{"event_id":"e1"}', None, "k1") == b"e1"
    assert message_key(b"{broken", "e2", "k2") == b"e2"
    assert message_key(b"{broken", None, "k3") == b"k3"
    assert (
        message_key(b"[1]", None, "")
        == message_key(b"[1]", None, None)
        == hashlib.sha1(b"[1]").hexdigest()[:16].encode()
    )


# -- list -----------------------------------------------------------------------------------------


def test_list_groups_by_reason_and_family(spark, capsys, lake_with_quarantine):
    settings, bad = lake_with_quarantine
    code, out, _ = run(capsys, spark, settings, "list", "--json", "--samples", "1")
    assert code == 0
    report = json.loads(out)
    assert report["total"] == len(bad) == 11
    assert {f["family"]: f["count"] for f in report["families"]} == {
        "malformed_json": 5,
        "bad_value": 3,
        "missing_field": 1,
        "bad_type": 1,
        "poison": 1,
    }
    assert report["families"][0] == {"family": "malformed_json", "count": 5}
    reasons = {r["reason"]: r for r in report["reasons"]}
    assert reasons["malformed_json:syntax"]["count"] == 4
    assert reasons["malformed_json:syntax"]["family"] == "malformed_json"
    times = reasons["bad_value:event_time"]
    assert (times["count"], times["first_kafka_timestamp"], times["last_kafka_timestamp"]) == (
        2,
        "2026-11-05T00:06:00.000Z",
        "2026-11-05T00:07:00.000Z",
    )
    assert all(len(r["samples"]) == 1 for r in report["reasons"])
    q7 = next(row for row in bad if row[7] == "q7")
    assert times["samples"] == [
        {
            "coordinates": coordinates(q7),
            "kafka_timestamp": "2026-11-05T00:07:00.000Z",
            "raw_value": q7[5][:120],
            "truncated": len(q7[5]) > 120,
        }
    ]
    long = reasons["bad_type:price"]["samples"][0]
    assert long["truncated"] and long["raw_value"] == LONG[:120]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--reason", "bad_value:*"], {"bad_value:event_time": 2, "bad_value:campaign_id": 1}),
        (["--reason", "bad_value*"], {"bad_value:event_time": 2, "bad_value:campaign_id": 1}),
        (["--reason", "bad_value:event_time"], {"bad_value:event_time": 2}),
        (["--reason", "bad_value"], {}),
        (["--since", "2026-11-05T00:06:00Z", "--until", "2026-11-05T00:08:00Z"], {"bad_value:event_time": 2}),
        (["--since", "2026-11-05T01:06:00+01:00", "--until", "2026-11-05T00:07:00"], {"bad_value:event_time": 1}),
        (["--reason", "malformed_json:*", "--since", "2026-11-05T00:09"], {"malformed_json:syntax": 1}),
    ],
)
def test_list_filters(spark, capsys, lake_with_quarantine, argv, expected):
    code, out, _ = run(capsys, spark, lake_with_quarantine[0], "list", "--json", "--samples", "0", *argv)
    assert code == 0
    report = json.loads(out)
    assert {r["reason"]: r["count"] for r in report["reasons"]} == expected
    assert report["total"] == sum(expected.values())


def test_list_table_never_passes_hostile_bytes_to_the_terminal(spark, capsys, lake_with_quarantine):
    code, out, _ = run(capsys, spark, lake_with_quarantine[0], "list", "--reason", "malformed_json:syntax")
    assert code == 0
    assert "4 quarantined records (reason malformed_json:syntax)" in out
    assert "\x1b" not in out and "\x9b" not in out and "\u202e" not in out and "\x07" not in out
    assert "\\x1b[31mred\\x1b]0;title\\x07 [bold]x[/bold] \\u202eevil\\x9b2J" in out  # markup shown, not applied
    assert '{"event_id":"q4",\\n"user_id":"u1"}' in out
    assert "latest malformed_json:syntax:" in out and out.count("  t:") == 3  # three samples by default


def test_list_nothing_matched_is_success(spark, capsys, lake_with_quarantine):
    code, out, err = run(capsys, spark, lake_with_quarantine[0], "list", "--reason", "no_such:reason")
    assert (code, err) == (0, "")
    assert "no quarantined records match (reason no_such:reason)" in out


def test_no_quarantine_table_means_run_the_stream_first(spark, capsys, tmp_path):
    code, out, err = run(capsys, spark, lake_settings(tmp_path), "list")
    assert code == 3 and out == ""
    assert err.count("\n") == 1 and "no quarantine table at" in err and "run the stream first" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["republish", "--coordinates", "t:one:2"],
        ["republish", "--coordinates", "t:0:5", "--reason", "bad_value:*"],
        ["republish"],
        ["list", "--since", "2026-11-05T25:00"],
        ["list", "--since", "2026-11-06", "--until", "2026-11-05"],
        ["list", "--reason", "bad*value"],
        ["export", "--reason", "bad_value:*"],
        ["export", "--reason", "bad_value:*", "--out", "x.jsonl", "--limit", "0"],
        ["list", "--samples", "many"],
    ],
)
def test_bad_arguments_exit_2_in_one_line(capsys, argv):
    with pytest.raises(SystemExit) as exit_:
        main(argv)  # before any settings or Spark
    _, err = capsys.readouterr()
    assert exit_.value.code == 2
    assert err.count("\n") == 1 and "error:" in err and "(see --help)" in err


# -- export ---------------------------------------------------------------------------------------


def test_export_writes_the_exact_bronze_bytes(spark, capsys, lake_with_quarantine, tmp_path):
    settings, bad = lake_with_quarantine
    out_file = tmp_path / "fix.jsonl"
    code, out, err = run(capsys, spark, settings, "export", "--reason", "malformed_json:*", "--out", str(out_file))
    assert code == 0
    chosen = sorted((row for row in bad if row[6].startswith("malformed_json")), key=lambda r: r[:3])
    lines = [row[8] for row in chosen if b"\n" not in row[8] and not row[8].endswith(b"\r")]
    assert out_file.read_bytes() == b"".join(line + b"\n" for line in lines)
    assert HOSTILE.encode() in out_file.read_bytes()  # as sent: the export is a file, not the terminal
    assert "wrote 3 records" in out and f"python -m producer replay --file {out_file}" in out
    newline = next(row for row in bad if row[8].startswith(b'{"event_id":"q4"'))
    q9 = next(row for row in bad if row[8].startswith(b"\xff"))
    assert "skipped 2 records that cannot be one line (1 contains a newline, 1 ends with a carriage return)" in err
    assert f"republish --coordinates {coordinates(newline)},{coordinates(q9)}\n" in err


def test_export_with_limit_takes_the_first_in_coordinate_order(spark, capsys, lake_with_quarantine, tmp_path):
    settings, bad = lake_with_quarantine
    out_file = tmp_path / "two.jsonl"
    code, _, _ = run(capsys, spark, settings, "export", "--reason", "*", "--limit", "2", "--out", str(out_file))
    first = sorted(bad, key=lambda r: r[:3])[:2]
    assert code == 0
    assert out_file.read_bytes() == b"".join(row[8] + b"\n" for row in first if export_problem(row[8]) is None)


def test_export_never_overwrites_a_file_unless_told(spark, capsys, lake_with_quarantine, tmp_path):
    settings = lake_with_quarantine[0]
    out_file = tmp_path / "edited.jsonl"
    out_file.write_text("my edits\n")
    with pytest.raises(SystemExit) as exit_:
        main(["export", "--reason", "bad_value:*", "--out", str(out_file)])  # refused before Spark starts
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "exists" in err and "--force" in err and out_file.read_text() == "my edits\n"
    code, _, _ = run(capsys, spark, settings, "export", "--reason", "bad_value:*", "--out", str(out_file), "--force")
    assert code == 0 and out_file.read_bytes().count(b"\n") == 3


def test_export_nothing_matched_writes_no_file(spark, capsys, lake_with_quarantine, tmp_path):
    out_file = tmp_path / "none.jsonl"
    code, out, _ = run(capsys, spark, lake_with_quarantine[0], "export", "--reason", "nope:*", "--out", str(out_file))
    assert code == 0 and "nothing written" in out and not out_file.exists()


# -- republish (no Kafka here: dry runs and refusals) --------------------------------------------------


def test_republish_dry_run_lists_the_selection(spark, capsys, lake_with_quarantine):
    settings, bad = lake_with_quarantine
    code, out, err = run(capsys, spark, settings, "republish", "--reason", "bad_value:*", "--dry-run")
    assert code == 0 and err == ""
    chosen = sorted((row for row in bad if row[6].startswith("bad_value:")), key=lambda r: r[:3])
    listed = [line.split("  ")[0] for line in out.splitlines() if not line.startswith("[quarantine]")]
    assert listed == [coordinates(row) for row in chosen]
    assert f"key={chosen[0][7]}" in out  # keyed by event_id
    assert "would re-send 3 of 3 chosen records" in out and "nothing sent" in out


def test_republish_dry_run_by_coordinates(spark, capsys, lake_with_quarantine):
    settings, bad = lake_with_quarantine
    hostile = next(row for row in bad if row[8] == HOSTILE.encode())
    wanted = f"{coordinates(hostile)},t:1:999"
    code, out, err = run(capsys, spark, settings, "republish", "--coordinates", wanted, "--dry-run")
    assert code == 0
    assert out.startswith(f"{coordinates(hostile)}  malformed_json:syntax  key=")
    assert "\x1b" not in out and "\\x1b[31m" in out
    assert "would re-send 1 of 1" in out
    assert "1 coordinates match no quarantined record: t:1:999" in err


def test_republish_refuses_many_records_without_yes(spark, capsys, lake_with_quarantine, monkeypatch):
    monkeypatch.setattr(republish, "CONFIRM_ABOVE", 3)
    code, out, err = run(capsys, spark, lake_with_quarantine[0], "republish", "--reason", "malformed_json:*")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "5 records chosen, more than 3: add --yes" in err


def test_republish_nothing_matched_needs_no_kafka(spark, capsys, lake_with_quarantine):
    settings = lake_with_quarantine[0].with_overrides(kafka_bootstrap="127.0.0.1:9")
    code, out, _ = run(capsys, spark, settings, "republish", "--reason", "nope:*", "--yes")
    assert code == 0 and "nothing to re-send" in out


def test_republish_without_a_broker_names_it(spark, capsys, lake_with_quarantine, monkeypatch):
    monkeypatch.setattr(republish, "KAFKA_TIMEOUT", 1.0)
    settings = lake_with_quarantine[0].with_overrides(kafka_bootstrap="127.0.0.1:9")
    code, _, err = run(capsys, spark, settings, "republish", "--reason", "bad_value:*")
    assert code == 3
    assert err == (
        "quarantine: Kafka is not reachable at 127.0.0.1:9: start it with `make kafka-start`, "
        "or point EO_KAFKA_BOOTSTRAP at your broker\n"
    )
