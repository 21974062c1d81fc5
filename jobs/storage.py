"""Small file operations on local paths and s3a:// URIs alike (reports, demo clean-up).

Tables and checkpoints go through Spark; this is for the few plain files around them.
"""

from __future__ import annotations

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
