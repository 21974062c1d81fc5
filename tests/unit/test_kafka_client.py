"""Kafka client settings come from the environment: plaintext locally; in aws, MSK's IAM authentication
for Spark's Kafka source and sink, and OAUTHBEARER tokens signed the same way for the Python clients."""

import dataclasses
import json
import time

import pytest

from eo.cloud import msk_iam
from eo.runtime import kafka_admin
from eo.runtime.config import ConfigError, load_settings
from infra.s3 import local_outputs, tfvars

pytestmark = pytest.mark.unit

TOKEN_LIFE_MS = 900_000  # MSK tokens live 15 minutes
MSK = "boot-ab12cd34.c2.kafka-serverless.eu-west-1.amazonaws.com:9098"
IAM_OPTIONS = {
    "kafka.security.protocol": "SASL_SSL",
    "kafka.sasl.mechanism": "AWS_MSK_IAM",
    "kafka.sasl.jaas.config": "software.amazon.msk.auth.iam.IAMLoginModule required;",
    "kafka.sasl.client.callback.handler.class": "software.amazon.msk.auth.iam.IAMClientCallbackHandler",
}


@pytest.fixture(autouse=True)
def no_overrides(monkeypatch):
    monkeypatch.delenv("EO_KAFKA_BOOTSTRAP", raising=False)


@pytest.fixture
def aws(monkeypatch, tmp_path):
    """The aws environment with Terraform outputs naming an MSK Serverless cluster."""
    outputs = {name: output["value"] for name, output in local_outputs(tfvars()).items()} | {"kafka_bootstrap": MSK}
    path = tmp_path / "aws.json"
    path.write_text(json.dumps(outputs))
    monkeypatch.setenv("EO_TF_OUTPUTS", str(path))
    return load_settings("aws")


@pytest.fixture
def signer(monkeypatch):
    """MSKAuthTokenProvider without AWS: records the region it signs for."""
    from aws_msk_iam_sasl_signer import MSKAuthTokenProvider

    regions = []

    def generate_auth_token(region, aws_debug_creds=False):
        # the expiry is counted from the call: librdkafka refuses a token that has expired
        regions.append(region)
        return "signed-url", int(time.time() * 1000) + TOKEN_LIFE_MS

    monkeypatch.setattr(MSKAuthTokenProvider, "generate_auth_token", generate_auth_token)
    return regions


def test_local_clients_talk_plaintext_to_the_configured_broker():
    settings = load_settings("local")
    assert settings.kafka_options == {}
    assert kafka_admin.spark_kafka_options(settings) == {"kafka.bootstrap.servers": settings.kafka_bootstrap}
    config = kafka_admin.client_config(settings, **{"group.id": "g"})
    assert set(config) == {"bootstrap.servers", "logger", "group.id"}
    assert config["bootstrap.servers"] == settings.kafka_bootstrap == "127.0.0.1:9092"


def test_aws_reads_msk_from_terraform_outputs_and_spark_authenticates_with_iam(aws):
    assert aws.kafka_bootstrap == MSK
    assert kafka_admin.spark_kafka_options(aws) == {"kafka.bootstrap.servers": MSK, **IAM_OPTIONS}


def test_python_clients_sign_oauthbearer_tokens_for_the_brokers_region(aws, signer):
    config = kafka_admin.client_config(aws, **{"group.id": kafka_admin.OFFSETS_GROUP})
    assert config["security.protocol"] == "SASL_SSL" and config["sasl.mechanism"] == "OAUTHBEARER"
    assert config["group.id"] == "eo-offsets" and config["bootstrap.servers"] == MSK
    # librdkafka calls it with sasl.oauthbearer.config and wants the expiry in seconds since the epoch
    token, expiry = config["oauth_cb"]("")
    assert token == "signed-url" and time.time() < expiry <= time.time() + TOKEN_LIFE_MS / 1000
    assert signer == ["eu-west-1"]


def test_librdkafka_accepts_the_iam_settings_and_takes_the_token(aws, signer):
    from confluent_kafka import Producer

    producer = Producer({**kafka_admin.client_config(aws), "bootstrap.servers": ""})  # no broker: no connection
    # librdkafka queues the token refresh from its own thread; poll serves it once queued
    deadline = time.monotonic() + 30
    while not signer and time.monotonic() < deadline:
        producer.poll(0.1)
    assert producer.flush(0) == 0
    assert signer == ["eu-west-1"]  # asked for a token as it started


def test_the_real_signer_signs_offline_with_static_credentials(monkeypatch):
    for key, value in {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    token, expiry = msk_iam.msk_iam_token("eu-west-1")
    import base64

    url = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
    assert url.startswith("https://kafka.eu-west-1.amazonaws.com/?Action=kafka-cluster%3AConnect")
    assert time.time() < expiry < time.time() + 3600


@pytest.mark.parametrize(
    "bootstrap, region",
    [
        (MSK, "eu-west-1"),
        (
            "b-1.eo.x1y2z3.c4.kafka.us-east-2.amazonaws.com:9098,b-2.eo.x1y2z3.c4.kafka.us-east-2.amazonaws.com:9098",
            "us-east-2",
        ),
        ("b-1.eo.x1y2z3.c4.kafka.ap-southeast-1.amazonaws.com:9098", "ap-southeast-1"),
    ],
)
def test_the_signing_region_is_the_brokers(bootstrap, region):
    assert msk_iam.msk_region(bootstrap) == region


def test_without_a_region_in_the_address_the_default_aws_region_signs(monkeypatch, tmp_path):
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "sa-east-1")
    assert msk_iam.msk_region("kafka.internal:9098") == "sa-east-1"
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    with pytest.raises(ConfigError, match="no AWS region"):
        msk_iam.msk_region("kafka.internal:9098")


def test_a_mechanism_the_python_clients_cannot_speak_is_refused(aws):
    scram = dataclasses.replace(aws, kafka_options={**IAM_OPTIONS, "kafka.sasl.mechanism": "SCRAM-SHA-512"})
    with pytest.raises(ConfigError, match="only know AWS_MSK_IAM"):
        kafka_admin.client_config(scram)
    no_protocol = dataclasses.replace(aws, kafka_options={"kafka.sasl.mechanism": "AWS_MSK_IAM"})
    with pytest.raises(ConfigError, match=r"needs kafka\.security\.protocol"):
        kafka_admin.client_config(no_protocol)


def _topic(*leaders: int, error=None):
    from confluent_kafka.admin import PartitionMetadata, TopicMetadata

    topic = TopicMetadata()
    topic.topic, topic.error = "events", error
    for number, leader in enumerate(leaders):
        partition = PartitionMetadata()
        partition.id, partition.leader = number, leader
        topic.partitions[number] = partition
    return topic


def test_a_topic_is_ready_once_each_partition_has_a_leader():
    """ensure_topic returns only then (its offsets may still answer NOT_LEADER_FOR_PARTITION for a
    moment: end_offsets asks again, tests/integration/test_topics.py)."""
    from confluent_kafka import KafkaError

    assert kafka_admin.led(_topic(1, 1, 1, 1))
    assert not kafka_admin.led(_topic(1, -1, 1, 1)), "one partition without a leader yet"
    assert not kafka_admin.led(_topic()), "listed, no partitions yet"
    assert not kafka_admin.led(None), "not listed"
    assert not kafka_admin.led(_topic(1, error=KafkaError(KafkaError.LEADER_NOT_AVAILABLE)))
    refused = _topic(1, 1)
    refused.partitions[1].error = KafkaError(KafkaError.LEADER_NOT_AVAILABLE)
    assert not kafka_admin.led(refused), "a partition whose metadata says it has no leader"
