"""Storage behind the environment switch: delta-rs tables and the plain files around them
(checkpoints read by monitoring, Delta logs read by the VACUUM guard, reports), on the local disk
or an object store, chosen once from the settings (`Settings.remote`)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Protocol

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
    if not settings.remote:
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


OBJECT_STORE_SCHEMES = ("s3a://", "s3://")


def _split(uri: str) -> tuple[str, str]:
    bucket, _, key = uri.split("://", 1)[1].partition("/")
    return bucket, key


class Files(Protocol):
    """The plain files around tables and checkpoints, wherever the environment keeps them."""

    def names(self, folder: str) -> list[str]: ...  # entries directly under `folder`, files and folders

    def read_text(self, uri: str) -> str: ...

    def write_text(self, uri: str, text: str) -> None: ...

    def modified(self, uri: str) -> float: ...  # epoch seconds

    def exists(self, uri: str) -> bool: ...

    def delete_tree(self, uri: str) -> None: ...

    def delete_file(self, uri: str) -> None: ...

    def put_tree(self, folder: Path, uri: str) -> None: ...  # a local folder's files, replacing `uri`'s


class LocalFiles:
    def names(self, folder: str) -> list[str]:
        return sorted(p.name for p in Path(folder).iterdir()) if Path(folder).is_dir() else []

    def read_text(self, uri: str) -> str:
        return Path(uri).read_text()

    def write_text(self, uri: str, text: str) -> None:
        Path(uri).parent.mkdir(parents=True, exist_ok=True)
        Path(uri).write_text(text)

    def modified(self, uri: str) -> float:
        return Path(uri).stat().st_mtime

    def exists(self, uri: str) -> bool:
        return Path(uri).exists()

    def delete_tree(self, uri: str) -> None:
        shutil.rmtree(uri, ignore_errors=True)

    def delete_file(self, uri: str) -> None:
        Path(uri).unlink(missing_ok=True)

    def put_tree(self, folder: Path, uri: str) -> None:
        self.delete_tree(uri)
        shutil.copytree(folder, uri)


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
        bucket, key = _split(uri)
        return self.client.get_object(Bucket=bucket, Key=key)["Body"].read().decode()

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
        bucket, prefix = _split(uri.rstrip("/") + "/")
        for page in self.client.get_paginator("list_object_versions").paginate(Bucket=bucket, Prefix=prefix):
            doomed = [{"Key": v["Key"], "VersionId": v["VersionId"]} for v in page.get("Versions", [])]
            doomed += [{"Key": m["Key"], "VersionId": m["VersionId"]} for m in page.get("DeleteMarkers", [])]
            if doomed:
                self.client.delete_objects(Bucket=bucket, Delete={"Objects": doomed})

    def delete_file(self, uri: str) -> None:
        bucket, key = _split(uri)
        self.client.delete_object(Bucket=bucket, Key=key)

    def put_tree(self, folder: Path, uri: str) -> None:
        self.delete_tree(uri)
        bucket, prefix = _split(uri.rstrip("/") + "/")
        for path in folder.rglob("*"):
            if path.is_file():
                self.client.upload_file(str(path), bucket, prefix + path.relative_to(folder).as_posix())


def files(settings: Settings) -> Files:
    """Where the environment keeps the lake and checkpoints, chosen once: local disk or object store."""
    return ObjectStoreFiles(_s3(settings)) if settings.remote else LocalFiles()


def _files_of(settings: Settings, uri: str) -> Files:
    """Reports may stay local while the lake is remote (local-s3): their root decides for them."""
    return ObjectStoreFiles(_s3(settings)) if uri.startswith(OBJECT_STORE_SCHEMES) else LocalFiles()


def delete_tree(settings: Settings, uri: str) -> None:
    _files_of(settings, uri).delete_tree(uri)


def write_text(settings: Settings, uri: str, text: str) -> None:
    _files_of(settings, uri).write_text(uri, text)


def read_text(settings: Settings, uri: str) -> str:
    return _files_of(settings, uri).read_text(uri)


def exists(settings: Settings, uri: str) -> bool:
    return _files_of(settings, uri).exists(uri)


def modified(settings: Settings, uri: str) -> float:
    return _files_of(settings, uri).modified(uri)


def delete_file(settings: Settings, uri: str) -> None:
    _files_of(settings, uri).delete_file(uri)


def files_under(settings: Settings, folder: str, suffix: str) -> list[str]:
    """The URIs of the files directly under `folder` whose names end with `suffix`, sorted."""
    return [
        f"{folder.rstrip('/')}/{name}" for name in _files_of(settings, folder).names(folder) if name.endswith(suffix)
    ]


def publish_site(settings: Settings, site: Path, uri: str) -> str:
    """Copy a locally built static site (the Data Docs) to `uri`, a folder or an object store
    prefix, replacing what was there; return its index page."""
    _files_of(settings, uri).put_tree(site, uri)
    return f"{uri.rstrip('/')}/index.html"
