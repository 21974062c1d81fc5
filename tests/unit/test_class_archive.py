"""The driver's class archive: named by what it was built from, mapped only once it exists, and
given to the tests' own Spark JVM when `make setup` has built it."""

import pytest

from eo.runtime import class_archive
from eo.runtime.class_archive import archive_key, archive_path, java_options
from eo.runtime.jars import MissingJarsError

pytestmark = pytest.mark.unit


def test_the_archive_is_named_by_the_jvm_and_every_jar(tmp_path):
    java, jar = tmp_path / "java", tmp_path / "a.jar"
    java.write_bytes(b"jvm")
    jar.write_bytes(b"classes")
    key = archive_key(java, [jar])
    assert archive_key(java, [jar]) == key  # stable
    jar.write_bytes(b"other classes")  # a jar built again
    assert archive_key(java, [jar]) != key
    assert archive_key(java, []) != archive_key(java, [jar])  # a jar added or gone
    assert archive_key(None, [jar]) != archive_key(java, [jar])


def test_a_jvm_maps_the_archive_only_once_it_is_built(tmp_path):
    assert java_options(tmp_path) == ""  # nothing built: every JVM starts as before
    path = archive_path(tmp_path)
    assert path is not None and path.parent == tmp_path and path.suffix == ".jsa"
    path.write_bytes(b"")
    assert java_options(tmp_path) == f"-XX:SharedArchiveFile={path}"


def test_a_stale_archive_is_not_named(tmp_path):
    stale = tmp_path / "spark-driver-0000000000000000.jsa"
    stale.write_bytes(b"")
    assert java_options(tmp_path) == ""


def test_no_jvm_means_no_archive(tmp_path, monkeypatch):
    monkeypatch.setattr(class_archive, "_java", lambda: None)
    assert archive_path(tmp_path) is None and java_options(tmp_path) == ""


def test_no_jars_means_no_archive(tmp_path, monkeypatch):
    def missing(**_):
        raise MissingJarsError("run `make jars` first")

    monkeypatch.setattr("eo.runtime.jars.jar_paths", missing)
    assert archive_path(tmp_path) is None and java_options(tmp_path) == ""


def test_the_tests_spark_jvm_is_started_with_the_archive_setup_built(spark):
    built = archive_path()
    if built is None or not built.is_file():
        pytest.skip("no class archive: `make setup` builds it")
    arguments = list(spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert f"-XX:SharedArchiveFile={built}" in arguments
