"""make cloud-smoke runs the EMR release's engine and says which versions it ran: the job venv
takes the matrix's PySpark, not the lock's; the report's versions are checked against
infra/cloud-versions.json, a difference named; its hadoop-aws must match that PySpark's Hadoop."""

from pathlib import Path

import pytest

from eo.cloud.versions import cloud_versions
from eo.runtime.jars import MissingJarsError
from lab.cloud_smoke import job_venv, runtime, versions

pytestmark = pytest.mark.unit


def matrix_versions() -> dict:
    m = cloud_versions()
    return {"spark": m.spark, "delta": m.delta, "airflow": m.airflow, "python": m.job_python, "deltalake": m.deltalake}


def test_the_job_venv_constraints_leave_the_release_s_pyspark_to_the_matrix():
    pins = {line.split("==")[0].lower() for line in job_venv.constraints_text().splitlines() if "==" in line}
    assert not pins & {"pyspark", "py4j", "pyspark-client"}
    assert "deltalake" in pins  # the rest of the lock still holds


def test_versions_equal_to_the_matrix_pass_and_a_difference_is_named():
    assert versions.differences(matrix_versions()) == []
    ran = {**matrix_versions(), "spark": "4.2.0"}
    assert versions.differences(ran) == [f"spark 4.2.0 (matrix {cloud_versions().spark})"]
    assert len(versions.differences({})) == len(versions.MATRIX_KEYS)


def test_delta_is_read_from_the_delta_spark_jar_and_spark_from_the_driver_log(tmp_path, monkeypatch):
    monkeypatch.setattr(versions, "_venv_answer", lambda venv, code: "4.1.3 3.11 1.6.6")
    log = tmp_path / "stream.log"
    log.write_text("26/12/02 INFO SparkContext: Running Spark version 4.2.0\n")
    jars = ["/x/kafka-clients-3.9.1.jar", "/x/delta-spark_4.1_2.13-4.2.0.jar", "/x/delta-storage-4.2.0.jar"]
    ran, sources = versions.ran(tmp_path, jars, [log], mwaa_venv=tmp_path / "none")
    assert ran["delta"] == "4.2.0" and ran["python"] == "3.11" and ran["deltalake"] == "1.6.6"
    assert ran["spark"] == "4.2.0"  # the driver ran another Spark than the venv's pyspark: that one counts
    assert ran["airflow"] == cloud_versions().airflow and "matrix" in sources["airflow"]


def test_an_s3a_stand_in_for_another_hadoop_is_refused(tmp_path):
    bundled = tmp_path / "venv" / "lib" / "python3.11" / "site-packages" / "pyspark" / "jars"
    bundled.mkdir(parents=True)
    (bundled / "hadoop-client-api-3.4.2.jar").touch()
    s3a = tmp_path / "s3a"
    s3a.mkdir()
    (s3a / "hadoop-aws-3.5.0.jar").touch()
    with pytest.raises(MissingJarsError, match=r"hadoop-aws 3\.5\.0 where the job venv.s pyspark has Hadoop 3\.4\.2"):
        runtime.release_jars(tmp_path / "venv", s3a_dir=s3a)
    (s3a / "hadoop-aws-3.5.0.jar").rename(s3a / "hadoop-aws-3.4.2.jar")
    jars = runtime.release_jars(tmp_path / "venv", s3a_dir=s3a)
    assert str(s3a / "hadoop-aws-3.4.2.jar") in jars and any("delta-spark_4.1_2.13" in j for j in jars)
    assert not any(Path(j).name.startswith(runtime.SHIPPED_JARS) for j in jars)  # fetched from the bucket
