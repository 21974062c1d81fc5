"""One engine writes each live table, from its creation: delta-rs creates them, adds their columns
and makes every commit; their protocol and properties are pinned here, so a release whose defaults
would turn on what delta-rs cannot write (deletion vectors, v2 checkpoints) fails this test."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from deltalake import DeltaTable, Schema

from eo.core.tables import ALL, BRONZE, DELTA_RS_WRITES, INGEST_BATCH, LIVE, NOT_RETAINED, SEED
from eo.runtime import lake as lake_io
from eo.runtime.cli import NotReady
from eo.runtime.live_tables import restore_properties
from streaming.microbatch import WRITES
from tests.helpers import event, prepare_lake, records, stream

PROTOCOL = (1, 2)  # appendOnly needs writer 2; no table feature at all


def spark_commits(path: str) -> list[str]:
    """The commits of the table at `path` that no delta-rs made, as `operation@version`."""
    history = DeltaTable(path).history()
    by_others = [e for e in history if not e.get("clientVersion", "").startswith("delta-rs")]
    return [f"{e['operation']}@{e['version']}" for e in by_others]


@pytest.mark.unit
def test_every_live_table_is_delta_rs_s_from_its_creation(spark, lake):
    assert {t.name for t in WRITES} <= {t.name for t in LIVE}  # every table the stream commits to
    prepare_lake(spark, lake)
    stream(spark, lake, [records([event("e1", 1), event("e2", 2, user="u2", kind="purchase", price="3.50")])])

    for table in LIVE:
        path = lake.table_path(table.name)
        current = DeltaTable(path)
        protocol = current.protocol()
        assert (protocol.min_reader_version, protocol.min_writer_version) == PROTOCOL, table.name
        assert not protocol.reader_features and not protocol.writer_features, table.name
        configuration = current.metadata().configuration
        assert configuration == table.properties, table.name
        assert DELTA_RS_WRITES.items() <= configuration.items() and NOT_RETAINED not in configuration
        assert spark_commits(path) == [], f"Spark committed to {table.name}"
    # Spark still makes what delta-rs never writes: the seed and the reference tables.
    assert spark_commits(lake.table_path(SEED.name)) != []


@pytest.mark.unit
def test_a_column_added_to_a_live_table_is_added_by_delta_rs(spark, lake):
    """Bronze made by a release before its ingest batch column: the column comes by delta-rs."""
    old = pa.schema([f for f in lake_schema(spark, BRONZE) if f.name != INGEST_BATCH])
    DeltaTable.create(lake.table_path(BRONZE.name), old, configuration=dict(BRONZE.properties))

    assert lake_io.add_new_columns(spark, lake, BRONZE) == [INGEST_BATCH]
    assert INGEST_BATCH in DeltaTable(lake.table_path(BRONZE.name)).schema().to_arrow().names
    assert spark_commits(lake.table_path(BRONZE.name)) == []


def lake_schema(spark, table) -> pa.Schema:
    from pyspark.sql.types import StructType

    return pa.schema(Schema.from_json(json.dumps(StructType.fromDDL(table.ddl).jsonValue())).to_arrow())


@pytest.mark.unit
def test_a_lake_spark_made_gets_the_pinned_properties_and_a_short_retention_is_refused(spark, lake):
    silver = ALL["silver"]
    lake_io.ensure_table(spark, lake, ALL["campaigns"])  # any Spark-made table stands for an old lake
    path = lake.table_path(silver.name)
    spark.sql(f"CREATE TABLE delta.`{path}` ({silver.ddl}) USING delta TBLPROPERTIES ('delta.appendOnly'='true')")

    assert restore_properties(lake, [silver]) == [silver.name]
    assert DeltaTable(path).metadata().configuration == silver.properties
    assert restore_properties(lake, [silver]) == []  # nothing differs now: no commit

    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('{NOT_RETAINED}' = 'interval 1 days')")
    with pytest.raises(NotReady, match=f"silver has {NOT_RETAINED}"):
        restore_properties(lake, [silver])
