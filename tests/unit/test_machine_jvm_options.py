"""EO_JVM_OPTIONS (eo/runtime/config.py): options this machine adds to every JVM the project
starts. spark-submit's drivers, a session's own JVM and the Kafka broker end with them; the
deployed conf (BASE_CONF) never carries them; unset, nothing is added."""

from __future__ import annotations

import pytest

from eo.runtime.config import SHORT_LIVED_JVM_OPTIONS, load_settings
from eo.runtime.spark import BASE_CONF, JAVA, session_conf
from eo.runtime.submit import submit_conf
from infra.kafka import Broker

pytestmark = pytest.mark.unit

OPTIONS = SHORT_LIVED_JVM_OPTIONS


def test_a_submitted_driver_ends_with_the_machine_s_options(monkeypatch):
    monkeypatch.setenv("EO_JVM_OPTIONS", f"  {OPTIONS} ")
    conf = submit_conf(load_settings("local"))
    assert conf[JAVA] == f"{BASE_CONF[JAVA]} {OPTIONS}"  # after the log's configuration and the archive
    assert OPTIONS not in BASE_CONF[JAVA]


def test_a_session_s_own_jvm_ends_with_them_and_a_driver_spark_submit_started_leaves_them_to_it(monkeypatch):
    monkeypatch.setenv("EO_JVM_OPTIONS", OPTIONS)
    monkeypatch.delenv("EO_JOB_LOG", raising=False)
    assert session_conf(load_settings("local"))[JAVA] == f"{BASE_CONF[JAVA]} {OPTIONS}"
    assert session_conf(load_settings("local"), submitted=True)[JAVA] == BASE_CONF[JAVA]  # the launcher's
    own = session_conf(load_settings("local"), {JAVA: BASE_CONF[JAVA]})  # the tests' session: as deployed
    assert own[JAVA] == BASE_CONF[JAVA]


def test_unset_or_empty_the_driver_runs_as_deployed(monkeypatch):
    for value in (None, "", "   "):
        if value is None:
            monkeypatch.delenv("EO_JVM_OPTIONS", raising=False)
        else:
            monkeypatch.setenv("EO_JVM_OPTIONS", value)
        assert submit_conf(load_settings("local"))[JAVA] == BASE_CONF[JAVA]
        assert session_conf(load_settings("local"))[JAVA] == BASE_CONF[JAVA]


def test_a_job_s_own_driver_options_replace_them(monkeypatch):
    monkeypatch.setenv("EO_JVM_OPTIONS", OPTIONS)  # the class archive's build passes its own
    conf = submit_conf(load_settings("local"), {JAVA: "-XX:ArchiveClassesAtExit=x.jsa"})
    assert conf[JAVA] == "-XX:ArchiveClassesAtExit=x.jsa"


def test_the_broker_s_java_carries_them_before_its_class(monkeypatch, tmp_path):
    monkeypatch.setenv("EO_JVM_OPTIONS", OPTIONS)
    command = Broker(19999, tmp_path)._java("kafka.Kafka", "server.properties")
    options = command[1 : command.index("-cp")]  # the JVM's options: before its classpath and class
    assert options[:2] == ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]
    monkeypatch.setenv("EO_JVM_OPTIONS", "")
    assert not any(part.startswith("-XX:") for part in Broker(19999, tmp_path)._java("kafka.Kafka"))


def test_a_cluster_s_executors_and_daemons_carry_them_and_unset_nothing_is_added(monkeypatch, tmp_path):
    from eo.runtime.spark import EXECUTOR_JAVA
    from infra.spark_cluster import SparkCluster

    monkeypatch.setenv("EO_JVM_OPTIONS", OPTIONS)
    assert submit_conf(load_settings("local"))[EXECUTOR_JAVA] == OPTIONS
    assert session_conf(load_settings("local"))[EXECUTOR_JAVA] == OPTIONS
    assert SparkCluster(home=tmp_path)._env()["SPARK_DAEMON_JAVA_OPTS"] == OPTIONS
    assert EXECUTOR_JAVA not in BASE_CONF
    monkeypatch.setenv("EO_JVM_OPTIONS", "")
    assert EXECUTOR_JAVA not in submit_conf(load_settings("local"))
    assert EXECUTOR_JAVA not in session_conf(load_settings("local"))
    assert SparkCluster(home=tmp_path)._env()["SPARK_DAEMON_JAVA_OPTS"] == ""
