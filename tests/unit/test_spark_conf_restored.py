"""The tests' shared Spark session keeps the conf its fixture set: a job run in-process calls
eo.runtime.spark.build_session, whose getOrCreate applies BASE_CONF to the shared session, and
tests/conftest.py puts the conf back after the test (and after the module)."""

import pytest

from eo.runtime.config import load_settings
from eo.runtime.spark import BASE_CONF, build_session
from tests.conftest import restore_conf

pytestmark = pytest.mark.unit

PARTITIONS = "spark.sql.shuffle.partitions"
ADDED = "spark.sql.files.maxRecordsPerFile"  # set by no one: a key a job could add
# Registered by no conf entry (RocksDB's keys are read by prefix): not "modifiable" to Spark, yet a
# test that turns it off changes every later state store of the session.
CHANGELOG = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"


def modifiable(spark, conf: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in conf.items() if spark.conf.isModifiable(k)}


def test_what_a_jobs_session_changes_on_the_shared_one_is_set_back(spark):
    before = dict(spark.conf.getAll)
    assert before[PARTITIONS] == "2" != BASE_CONF[PARTITIONS], "the fixture's value, not the jobs'"
    assert ADDED not in before
    assert build_session("eo-streaming", load_settings("local")) is spark  # as streaming.run.run does
    spark.conf.set(ADDED, "1000")
    assert spark.conf.get(PARTITIONS) == BASE_CONF[PARTITIONS]  # the leak, as it happens

    restored = restore_conf(spark, before)

    assert restored[PARTITIONS] == "2" and restored[ADDED] is None, restored
    assert spark.conf.get(PARTITIONS) == "2"
    assert ADDED not in spark.conf.getAll
    assert modifiable(spark, dict(spark.conf.getAll)) == modifiable(spark, before)
    assert restore_conf(spark, before) == {}, "a second restore has nothing left to do"


def test_a_key_no_conf_entry_registers_is_set_back_too(spark):
    before = dict(spark.conf.getAll)
    assert before[CHANGELOG] == BASE_CONF[CHANGELOG] == "true" and not spark.conf.isModifiable(CHANGELOG)
    spark.conf.set(CHANGELOG, "false")
    assert restore_conf(spark, before) == {CHANGELOG: "true"}
    assert spark.conf.get(CHANGELOG) == "true"


def test_every_test_and_module_using_spark_has_its_conf_restored(request, spark):
    assert {"_spark_conf_restored", "_spark_conf_restored_after_module"} <= set(request.fixturenames)
