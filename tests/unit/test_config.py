import json

import pytest

from eo.runtime.config import ConfigError, load_settings
from eo.runtime.environment import environment
from eo.runtime.tf_outputs import MissingOutputs

pytestmark = pytest.mark.unit


def test_local_is_the_default_and_paths_are_absolute(monkeypatch):
    monkeypatch.delenv("EO_ENV", raising=False)
    settings = load_settings()
    assert settings.env == "local"
    assert settings.table_path("silver").endswith("/data/lake/silver/events")
    assert settings.table_path("silver", "rebuild").endswith("/data/lake/_rebuild/silver/events")
    assert settings.lake_root.startswith("/")


def test_one_switch_selects_the_environment_and_variables_override_keys(monkeypatch, tmp_path):
    outputs = tmp_path / "outputs.json"
    values = {
        "lake_bucket": "my-lake",
        "checkpoint_bucket": "my-cp",
        "region": "eu-west-1",
        "log_store_table": "my-log",
    }
    outputs.write_text(json.dumps({name: {"value": value} for name, value in values.items()}))
    monkeypatch.setenv("EO_TF_OUTPUTS", str(outputs))
    monkeypatch.setenv("EO_ENV", "local-s3")
    monkeypatch.setenv("EO_KAFKA_BOOTSTRAP", "127.0.0.1:29092")
    settings = load_settings()
    assert settings.table_path("bronze") == "s3a://my-lake/lake/bronze/events"
    assert settings.checkpoint_path("events") == "s3a://my-cp/checkpoints/events"
    assert settings.spark_conf["spark.hadoop.fs.s3a.endpoint.region"] == "eu-west-1"
    assert settings.kafka_bootstrap == "127.0.0.1:29092"
    assert (settings.lease, settings.lease_table) == ("dynamodb", "my-log")  # epochs as in the cloud
    assert type(environment(settings)).__name__ == "ObjectStoreEnvironment"  # buckets, not folders
    assert type(environment(load_settings("local"))).__name__ == "Environment"


def test_cloud_environments_need_terraform_outputs(monkeypatch, tmp_path):
    monkeypatch.setenv("EO_TF_OUTPUTS", str(tmp_path / "missing.json"))
    with pytest.raises(MissingOutputs, match="needs Terraform outputs"):
        load_settings("aws")


def test_unknown_names_fail_clearly(monkeypatch):
    monkeypatch.setenv("EO_ENV", "staging-typo")
    with pytest.raises(ConfigError, match="unknown environment 'staging-typo'"):
        load_settings()
    monkeypatch.delenv("EO_ENV")
    with pytest.raises(ConfigError, match="unknown table"):
        load_settings().table_path("golden")
    with pytest.raises(ConfigError, match="unknown namespace"):
        load_settings().table_path("silver", "scratch")


def test_an_unknown_implementation_is_refused_when_the_settings_load(tmp_path):
    from eo.runtime.config import config_file

    text = config_file().read_text().replace('spark_master = "local[2]"', 'spark_master = "local[2]"\nlease = "zk"', 1)
    (tmp_path / "platform.toml").write_text(text)
    with pytest.raises(ConfigError, match="lease = 'zk' in environment 'local'; one of"):
        load_settings("local", tmp_path / "platform.toml")


@pytest.mark.parametrize("topic", ["clicks,mirror", "clicks mirror", "", "clicks*"])
def test_the_topic_is_one_kafka_topic(monkeypatch, topic):
    """The stream's first copy within a micro-batch is the lowest (partition, offset): one topic."""
    monkeypatch.setenv("EO_TOPIC", topic)
    with pytest.raises(ConfigError, match="one Kafka topic name"):
        load_settings("local")
    monkeypatch.setenv("EO_TOPIC", "clickstream.v2-eu_1")
    assert load_settings("local").topic == "clickstream.v2-eu_1"
