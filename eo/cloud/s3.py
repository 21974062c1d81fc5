"""Object storage (S3, or the local S3-compatible server of local-s3) through boto3 and delta-rs:
the same objects and endpoint Spark's s3a reaches."""

from __future__ import annotations

import os
from pathlib import Path

from eo.runtime.config import Settings


def s3_client(settings: Settings):
    import boto3

    # The same endpoint and keys as Spark's s3a; without keys, the default credential chain.
    conf = settings.spark_conf
    return boto3.client(
        "s3",
        endpoint_url=conf.get("spark.hadoop.fs.s3a.endpoint"),
        region_name=conf.get("spark.hadoop.fs.s3a.endpoint.region"),
        aws_access_key_id=conf.get("spark.hadoop.fs.s3a.access.key"),
        aws_secret_access_key=conf.get("spark.hadoop.fs.s3a.secret.key"),
    )


def delta_rs_location(settings: Settings, path: str) -> tuple[str, dict[str, str]]:
    """An s3a:// table path as delta-rs reaches it: s3:// with the same endpoint and keys as Spark's s3a
    (or the default AWS chain)."""
    conf = settings.spark_conf
    endpoint = conf.get("spark.hadoop.fs.s3a.endpoint")
    options = {
        "AWS_REGION": conf.get("spark.hadoop.fs.s3a.endpoint.region")
        or settings.aws_region
        or os.environ.get("AWS_REGION", ""),
        # Commits are written with S3's conditional put (If-None-Match): two writers can never both
        # create the same log entry, which is what fencing relies on. It is the one commit protocol
        # of every writer of a live table (the stream, OPTIMIZE, VACUUM; docs/cloud.md).
        "AWS_CONDITIONAL_PUT": "etag",
    }
    if endpoint:
        options.update(AWS_ENDPOINT_URL=endpoint, AWS_ALLOW_HTTP=str(endpoint.startswith("http://")).lower())
    for key, option in (("access.key", "AWS_ACCESS_KEY_ID"), ("secret.key", "AWS_SECRET_ACCESS_KEY")):
        if conf.get(f"spark.hadoop.fs.s3a.{key}"):
            options[option] = conf[f"spark.hadoop.fs.s3a.{key}"]
    return "s3://" + path.split("://", 1)[1], {k: v for k, v in options.items() if v}


def arrow_s3(settings: Settings):
    """pyarrow's S3 filesystem at s3a's endpoint, with its keys (else the default credential chain)."""
    from pyarrow import fs

    conf = settings.spark_conf
    endpoint = conf.get("spark.hadoop.fs.s3a.endpoint")
    return fs.S3FileSystem(
        access_key=conf.get("spark.hadoop.fs.s3a.access.key"),
        secret_key=conf.get("spark.hadoop.fs.s3a.secret.key"),
        region=conf.get("spark.hadoop.fs.s3a.endpoint.region") or settings.aws_region or os.environ.get("AWS_REGION"),
        endpoint_override=endpoint.split("://", 1)[-1] if endpoint else None,
        scheme="http" if endpoint and endpoint.startswith("http://") else "https",
    )


def _split(uri: str) -> tuple[str, str]:
    bucket, _, key = uri.split("://", 1)[1].partition("/")
    return bucket, key


class ObjectStoreFiles:
    """s3a:// (or s3://) URIs through boto3: the same objects Spark's s3a reads."""

    def __init__(self, client) -> None:
        self.client = client

    def names(self, folder: str) -> list[str]:
        bucket, prefix = _split(folder.rstrip("/") + "/")
        found: set[str] = set()
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix, Delimiter="/"):
            found.update(c["Prefix"][len(prefix) :].rstrip("/") for c in page.get("CommonPrefixes", []))
            found.update(o["Key"][len(prefix) :] for o in page.get("Contents", []))
        return sorted(name for name in found if name)

    def read_text(self, uri: str) -> str:
        return self.read_bytes(uri).decode()

    def read_bytes(self, uri: str) -> bytes:
        bucket, key = _split(uri)
        return self.client.get_object(Bucket=bucket, Key=key)["Body"].read()

    def write_text(self, uri: str, text: str) -> None:
        bucket, key = _split(uri)
        self.client.put_object(Bucket=bucket, Key=key, Body=text.encode())

    def modified(self, uri: str) -> float:
        bucket, key = _split(uri)
        return self.client.head_object(Bucket=bucket, Key=key)["LastModified"].timestamp()

    def exists(self, uri: str) -> bool:
        bucket, key = _split(uri)
        return "Contents" in self.client.list_objects_v2(Bucket=bucket, Prefix=key, MaxKeys=1)

    def delete_tree(self, uri: str) -> None:
        """Every current object under `uri` deleted. On the platform's versioned buckets that
        leaves a delete marker: the data stays recoverable until the buckets' lifecycle expires
        noncurrent versions, and the jobs need no s3:ListBucketVersions or s3:DeleteObjectVersion
        (the Spark role has neither: tests/unit/test_s3_actions.py)."""
        bucket, prefix = _split(uri.rstrip("/") + "/")
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            if doomed := [{"Key": o["Key"]} for o in page.get("Contents", [])]:
                done = self.client.delete_objects(Bucket=bucket, Delete={"Objects": doomed, "Quiet": True})
                if errors := done.get("Errors"):
                    first = errors[0]
                    raise OSError(
                        f"could not delete {len(errors)} object(s) under {uri}: {first['Key']}: "
                        f"{first['Code']} {first['Message']}"
                    )

    def delete_file(self, uri: str) -> None:
        bucket, key = _split(uri)
        self.client.delete_object(Bucket=bucket, Key=key)

    def put_tree(self, folder: Path, uri: str) -> None:
        self.delete_tree(uri)
        bucket, prefix = _split(uri.rstrip("/") + "/")
        for path in folder.rglob("*"):
            if path.is_file():
                self.client.upload_file(str(path), bucket, prefix + path.relative_to(folder).as_posix())

    def make_folder(self, uri: str) -> None:
        """Keys need no folder: nothing to make."""
