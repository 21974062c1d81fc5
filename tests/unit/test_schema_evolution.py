"""How a declared table's stored schema follows its declaration (eo/core/evolution.py): what a
schema registry calls backward compatible is added, the rest refused in one line that names the
table, the field and what to do."""

import re

import pytest

from eo.core.evolution import SchemaRefused, delta_type, new_columns

pytestmark = pytest.mark.unit

STORED = [("event_id", "string"), ("event_time", "timestamp"), ("price", "decimal(10,2)"), ("n", "bigint")]
DECLARED = [("event_id", "STRING"), ("event_time", "TIMESTAMP"), ("price", "DECIMAL(10,2)"), ("n", "BIGINT")]


def test_the_same_declaration_adds_nothing():
    assert new_columns("silver", DECLARED, STORED, ["event_id"], ["event_id"]) == []


def test_new_optional_fields_are_added_in_declaration_order():
    declared = [*DECLARED[:2], ("country", "STRING"), *DECLARED[2:], ("tags", "ARRAY<STRING>")]
    assert new_columns("silver", declared, STORED, ["event_id"], ["event_id"]) == ["country", "tags"]


@pytest.mark.parametrize(
    ("declared", "required", "before", "named"),
    [
        ([*DECLARED[:2], ("price", "DECIMAL(12,2)"), DECLARED[3]], [], [], "field price is declared DECIMAL(12,2)"),
        ([*DECLARED[:3], ("n", "STRING")], [], [], "field n is declared STRING but stored as BIGINT"),
        ([*DECLARED, ("country", "STRING")], ["country"], [], "required field country is new"),
        (DECLARED, ["event_id", "n"], ["event_id"], "field n is now required"),
        (DECLARED[:3], [], [], "column n is stored but no longer declared"),
    ],
)
def test_what_stored_rows_cannot_follow_is_refused_in_one_line(declared, required, before, named):
    with pytest.raises(SchemaRefused, match=re.escape(named)) as refused:
        new_columns("silver", declared, STORED, required, before)
    text = str(refused.value)
    assert text.startswith("silver: ") and "\n" not in text and "docs/sources.md" in text
    assert "python -m ops.reset" in text and "a new path" in text


def test_a_lake_that_never_recorded_its_required_fields_refuses_only_new_ones():
    assert new_columns("silver", DECLARED, STORED, ["event_id", "n"], None) == []


@pytest.mark.parametrize(
    ("stored", "sql"),
    [
        ("long", "bigint"),
        ("integer", "int"),
        ("decimal(10,2)", "decimal(10,2)"),
        ({"type": "array", "elementType": "string", "containsNull": True}, "array<string>"),
        ({"type": "map", "keyType": "string", "valueType": "long"}, "map<string,bigint>"),
    ],
)
def test_delta_s_type_names_read_as_spark_writes_them(stored, sql):
    assert delta_type(stored) == sql
