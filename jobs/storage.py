"""Small file operations on local paths and s3a:// URIs alike (reports, demo clean-up).

Tables and checkpoints go through Spark; this is for the few plain files around them.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from jobs.config import Settings


def _s3(settings: Settings):
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


def delta_table(settings: Settings, name: str, namespace: str = "main"):
    """A Delta table of the lake as delta-rs reaches it (jobs/commits.py): local paths as they are,
    s3a:// as s3:// with the same endpoint and keys as Spark's s3a (or the default AWS chain)."""
    from jobs.commits import Table

    path = settings.table_path(name, namespace)
    if "://" not in path:
        return Table(path)
    conf = settings.spark_conf
    endpoint = conf.get("spark.hadoop.fs.s3a.endpoint")
    options = {
        "AWS_REGION": conf.get("spark.hadoop.fs.s3a.endpoint.region") or os.environ.get("AWS_REGION", ""),
        # Commits are written with S3's conditional put (If-None-Match): two writers can never both
        # create the same log entry, which is what fencing relies on (docs/cloud.md).
        "AWS_CONDITIONAL_PUT": "etag",
    }
    if endpoint:
        options.update(AWS_ENDPOINT_URL=endpoint, AWS_ALLOW_HTTP=str(endpoint.startswith("http://")).lower())
    for key, option in (("access.key", "AWS_ACCESS_KEY_ID"), ("secret.key", "AWS_SECRET_ACCESS_KEY")):
        if conf.get(f"spark.hadoop.fs.s3a.{key}"):
            options[option] = conf[f"spark.hadoop.fs.s3a.{key}"]
    return Table("s3://" + path.split("://", 1)[1], {k: v for k, v in options.items() if v})


def _split(uri: str) -> tuple[str, str]:
    bucket, _, key = uri.split("://", 1)[1].partition("/")
    return bucket, key


def delete_tree(settings: Settings, uri: str) -> None:
    if "://" not in uri:
        shutil.rmtree(uri, ignore_errors=True)
        return
    s3 = _s3(settings)
    bucket, prefix = _split(uri.rstrip("/") + "/")
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket, Prefix=prefix):
        doomed = [{"Key": v["Key"], "VersionId": v["VersionId"]} for v in page.get("Versions", [])]
        doomed += [{"Key": m["Key"], "VersionId": m["VersionId"]} for m in page.get("DeleteMarkers", [])]
        if doomed:
            s3.delete_objects(Bucket=bucket, Delete={"Objects": doomed})


def write_text(settings: Settings, uri: str, text: str) -> None:
    if "://" not in uri:
        Path(uri).parent.mkdir(parents=True, exist_ok=True)
        Path(uri).write_text(text)
        return
    bucket, key = _split(uri)
    _s3(settings).put_object(Bucket=bucket, Key=key, Body=text.encode())


def upload_tree(settings: Settings, folder: Path, uri: str) -> None:
    """Copy a local folder (the Data Docs site) to an object store prefix."""
    s3 = _s3(settings)
    bucket, prefix = _split(uri.rstrip("/") + "/")
    for path in folder.rglob("*"):
        if path.is_file():
            s3.upload_file(str(path), bucket, prefix + str(path.relative_to(folder)))


def read_text(settings: Settings, uri: str) -> str:
    if "://" not in uri:
        return Path(uri).read_text()
    bucket, key = _split(uri)
    return _s3(settings).get_object(Bucket=bucket, Key=key)["Body"].read().decode()


def exists(settings: Settings, uri: str) -> bool:
    if "://" not in uri:
        return Path(uri).exists()
    bucket, key = _split(uri)
    return "Contents" in _s3(settings).list_objects_v2(Bucket=bucket, Prefix=key, MaxKeys=1)
