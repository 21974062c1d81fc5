"""The epoch lease on DynamoDB: instances on different machines (EMR Serverless job runs) share it."""

from __future__ import annotations

import time

from eo.cloud.outputs import LOG_STORE_KEYS


class DynamoLease:
    """The epoch of each job as one item of a DynamoDB table, for instances on different machines.

    Why DynamoDB: every EMR Serverless job run has a disk of its own (file leases cannot see each
    other), and Terraform already creates the table Delta's S3DynamoDBLogStore uses, with the IAM
    actions this needs; no database to run. Items live beside the log store's under a `tablePath`
    no S3 path can have (`lease://<job>`), so the log store never reads them. Taking an epoch is
    one atomic `ADD` (an update is serialised per item), and reads are strongly consistent, so
    `current` sees every epoch taken before it.
    """

    HASH, RANGE = LOG_STORE_KEYS["hash"], LOG_STORE_KEYS["range"]

    def __init__(self, table: str, client) -> None:
        self.table, self.client = table, client

    @classmethod
    def for_settings(cls, settings) -> DynamoLease:
        import boto3

        options = {"region_name": settings.aws_region or None}
        if settings.aws_endpoint:  # the local S3-compatible server (local-s3) serves DynamoDB too
            options.update(endpoint_url=settings.aws_endpoint, aws_access_key_id="local", aws_secret_access_key="local")
        return cls(settings.lease_table, boto3.client("dynamodb", **options))

    def _key(self, job: str) -> dict:
        return {self.HASH: {"S": f"lease://{job}"}, self.RANGE: {"S": "epoch"}}

    def acquire(self, job: str) -> int:
        answer = self.client.update_item(
            TableName=self.table,
            Key=self._key(job),
            UpdateExpression="ADD epoch :one SET started_at = :now",
            ExpressionAttributeValues={":one": {"N": "1"}, ":now": {"N": str(int(time.time()))}},
            ReturnValues="UPDATED_NEW",
        )
        return int(answer["Attributes"]["epoch"]["N"])

    def current(self, job: str) -> int:
        item = self.client.get_item(TableName=self.table, Key=self._key(job), ConsistentRead=True).get("Item")
        return int(item["epoch"]["N"]) if item else 0
