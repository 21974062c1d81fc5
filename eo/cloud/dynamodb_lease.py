"""The epoch lease on DynamoDB: instances on different machines (EMR Serverless job runs) share it."""

from __future__ import annotations

import time
from collections.abc import Callable

from eo.cloud.outputs import LOG_STORE_KEYS
from eo.runtime.fencing import HeldBy, live


class DynamoLease:
    """The epoch of each job as one item of a DynamoDB table, for instances on different machines.

    Why DynamoDB: every EMR Serverless job run has a disk of its own (file leases cannot see each
    other), and Terraform already creates the table Delta's S3DynamoDBLogStore uses, with the IAM
    actions this needs; no database to run. Items live beside the log store's under a `tablePath`
    no S3 path can have (`lease://<job>@<lake root>`, `key`), so the log store never reads them.
    The lake's root is in it: every lake of an account (an environment, the demo's sandbox `_<name>`
    lakes) has leases of its own, and a reset of one never fences another's stream. Taking an
    epoch is one atomic `ADD` (an update is serialised per item), and reads are strongly
    consistent, so `current` sees every epoch taken before it. The hold (holder, expires_at) is set
    with the epoch in the same update, and renewed or released by updates conditional on the epoch.

    Before the key named the lake, it was `lease://<job>` for every lake (`LEGACY`). While a lake's
    own item does not exist yet, `current` and `held` read the old one, and the first `acquire`
    starts from its epoch (which the tables' claims may hold: epochs never go back); from then on
    the old item is not read. docs/cloud.md, "Fencing across job runs", says how to move.
    """

    HASH, RANGE = LOG_STORE_KEYS["hash"], LOG_STORE_KEYS["range"]

    LEGACY = "lease://{job}"

    def __init__(self, table: str, client, lake: str, clock: Callable[[], float] = time.time) -> None:
        if not lake:
            raise ValueError("a DynamoDB lease names its lake: the lake root is empty")
        # s3a:// (Spark's) and s3:// (boto3's) name the same objects: one lake, one lease
        lake = "s3://" + lake.removeprefix("s3a://") if lake.startswith("s3a://") else lake
        self.table, self.client, self.lake, self.clock = table, client, lake.rstrip("/"), clock

    @classmethod
    def for_settings(cls, settings) -> DynamoLease:
        import boto3

        options = {"region_name": settings.aws_region or None}
        if settings.aws_endpoint:  # the local S3-compatible server (local-s3) serves DynamoDB too
            options.update(endpoint_url=settings.aws_endpoint, aws_access_key_id="local", aws_secret_access_key="local")
        return cls(settings.lease_table, boto3.client("dynamodb", **options), settings.lake_root)

    def key(self, job: str) -> str:
        """The item's `tablePath`: the job and the lake's root."""
        return f"lease://{job}@{self.lake}"

    def _key(self, job: str, path: str | None = None) -> dict:
        return {self.HASH: {"S": path or self.key(job)}, self.RANGE: {"S": "epoch"}}

    def _migrate(self, job: str) -> None:
        """The lake's own item made from the old shared one (`LEGACY`), its epoch kept, if only
        the old one exists; nothing when the lake's exists (a put that only creates)."""
        from botocore.exceptions import ClientError

        if self._get(self.key(job)) is not None:
            return
        old = self._get(self.LEGACY.format(job=job))
        if old is None:
            return
        item = {**self._key(job), "epoch": old["epoch"], "holder": {"S": ""}, "expires_at": {"N": "0"}}
        try:
            self.client.put_item(
                TableName=self.table, Item=item, ConditionExpression=f"attribute_not_exists({self.HASH})"
            )
            print(f"[lease] {self.key(job)} starts from epoch {old['epoch']['N']} of {self.LEGACY.format(job=job)}")
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise  # else another instance made it first: the same epoch

    def acquire(self, job: str, holder: str = "", ttl: float = 0.0) -> int:
        self._migrate(job)
        now = self.clock()
        answer = self.client.update_item(
            TableName=self.table,
            Key=self._key(job),
            UpdateExpression="ADD epoch :one SET started_at = :now, holder = :holder, expires_at = :expires",
            ExpressionAttributeValues={
                ":one": {"N": "1"},
                ":now": {"N": str(int(now))},
                ":holder": {"S": holder},
                ":expires": {"N": repr(now + ttl if holder else 0.0)},
            },
            ReturnValues="UPDATED_NEW",
        )
        return int(answer["Attributes"]["epoch"]["N"])

    def current(self, job: str) -> int:
        item = self._item(job)
        return int(item["epoch"]["N"]) if item else 0

    def _get(self, path: str) -> dict | None:
        return self.client.get_item(TableName=self.table, Key=self._key("", path), ConsistentRead=True).get("Item")

    def _item(self, job: str) -> dict | None:
        """The lake's item, or the old shared one while the lake has none (a stream started by the
        release before the key named the lake: its hold is still seen)."""
        return self._get(self.key(job)) or self._get(self.LEGACY.format(job=job))

    def _update_if(self, job: str, epoch: int, update: str, condition: str, values: dict) -> bool:
        """One update of the item, applied only while `epoch` is the newest: False otherwise."""
        from botocore.exceptions import ClientError

        try:
            self.client.update_item(
                TableName=self.table,
                Key=self._key(job),
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeValues={":epoch": {"N": str(epoch)}, **values},
            )
            return True
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return False
            raise

    def renew(self, job: str, epoch: int, ttl: float) -> bool:
        expires = {":expires": {"N": repr(self.clock() + ttl)}, ":none": {"S": ""}}
        return self._update_if(job, epoch, "SET expires_at = :expires", "epoch = :epoch AND holder <> :none", expires)

    def release(self, job: str, epoch: int) -> bool:
        cleared = {":none": {"S": ""}, ":zero": {"N": "0"}}
        return self._update_if(job, epoch, "SET holder = :none, expires_at = :zero", "epoch = :epoch", cleared)

    def held(self, job: str) -> HeldBy | None:
        item = self._item(job)
        if not item:
            return None
        holder, expires_at = item.get("holder", {}).get("S", ""), float(item.get("expires_at", {}).get("N", "0"))
        return live(holder, int(item["epoch"]["N"]), expires_at, self.clock())
