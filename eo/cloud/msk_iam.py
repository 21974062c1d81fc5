"""Amazon MSK's IAM authentication for the Python Kafka clients (confluent-kafka): OAUTHBEARER with a
token signed by the default AWS credentials (aws-msk-iam-sasl-signer-python)."""

from __future__ import annotations

import re
from functools import partial

from eo.runtime.config import ConfigError, Settings

# Amazon MSK's IAM SASL mechanism as the Java clients (Spark's Kafka connector) name it.
MSK_IAM = "AWS_MSK_IAM"
# MSK broker names carry their region: b-1.x.y.c2.kafka.eu-west-1.amazonaws.com, boot-x.c2.kafka-serverless.eu-west-1...
MSK_HOST_REGION = re.compile(r"\.kafka(?:-serverless)?\.([a-z]{2}(?:-[a-z]+)+-\d+)\.amazonaws\.com")


def authentication(settings: Settings) -> dict:
    """The librdkafka equivalent of the Spark options' SASL mechanism: none locally; for MSK's IAM, OAUTHBEARER
    with a token signed by the default AWS credentials (aws-msk-iam-sasl-signer-python)."""
    mechanism = settings.kafka_options.get("kafka.sasl.mechanism")
    if mechanism is None:
        return {}
    if mechanism != MSK_IAM:
        raise ConfigError(f"kafka.sasl.mechanism {mechanism!r}: the Python clients only know {MSK_IAM}")
    if "kafka.security.protocol" not in settings.kafka_options:
        raise ConfigError(f"kafka.sasl.mechanism {MSK_IAM} needs kafka.security.protocol (SASL_SSL) next to it")
    return {
        "security.protocol": settings.kafka_options["kafka.security.protocol"],
        "sasl.mechanism": "OAUTHBEARER",
        "oauth_cb": partial(msk_iam_token, msk_region(settings.kafka_bootstrap)),
    }


def msk_region(bootstrap: str) -> str:
    """The region MSK tokens are signed for: the brokers', else the default AWS region."""
    found = MSK_HOST_REGION.search(bootstrap)
    if found:
        return found.group(1)
    import boto3

    region = boto3.session.Session().region_name
    if not region:
        raise ConfigError(f"no AWS region in the Kafka address {bootstrap!r} nor in the AWS configuration")
    return region


def msk_iam_token(region: str, _oauthbearer_config: str | None = None) -> tuple[str, float]:
    """confluent-kafka's oauth_cb: a signed MSK IAM token and its expiry in seconds since the epoch."""
    from aws_msk_iam_sasl_signer import MSKAuthTokenProvider

    token, expiry_ms = MSKAuthTokenProvider.generate_auth_token(region)
    return token, expiry_ms / 1000
