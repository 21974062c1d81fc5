"""The one environment switch: every difference between the local disk and object storage, a local
lease and a shared one, spark-submit and a managed runtime, is handed out here, decided once from
the settings. No other module asks which environment it is in.

`environment(settings)` returns the local implementation, or the object-store one
(eo/cloud/environment.py) when the lake lives in a bucket. The cloud class is named here, not
imported: the cloud package builds on this layer, not the other way round.
"""

from __future__ import annotations

import importlib
import os
import weakref
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import TypeVar

from eo.runtime.config import REPO_ROOT, Settings
from eo.runtime.fencing import FileLease, Lease, PostgresLease
from eo.runtime.jars import jar_paths
from eo.runtime.storage import Files, LocalFiles

OBJECT_STORE_SCHEMES = ("s3a://", "s3://")
# The cloud implementations, named (not imported): the cloud package builds on this layer.
CLOUD_ENVIRONMENT = "eo.cloud.environment:ObjectStoreEnvironment"
SHARED_LEASE = "eo.cloud.dynamodb_lease:DynamoLease"
MSK_AUTHENTICATION = "eo.cloud.msk_iam:authentication"
# The PostgreSQL sinks' database: a secret, so an environment variable, never conf/platform.toml.
SINK_DSN_VARIABLE = "EO_PG_DSN"

T = TypeVar("T")


def on_object_store(uri: str) -> bool:
    return uri.startswith(OBJECT_STORE_SCHEMES)


class Environment:
    """The local disk: tables, checkpoints and reports in folders, leases as files."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    # -- files -------------------------------------------------------------------------------
    @cached_property
    def lake_files(self) -> Files:
        """Tables, checkpoints and the scratch beside them."""
        return LocalFiles()

    @cached_property
    def report_files(self) -> Files:
        """Verdicts, the verify ledger and the Data Docs."""
        return LocalFiles()

    @cached_property
    def ack_files(self) -> Files:
        """The producers' ack logs (the no-loss check)."""
        return LocalFiles()

    def ack_log(self, name: str) -> Path:
        """Where a producer writes an ack log as it goes: the acks folder, or a local spool when
        the acks live on object storage (`keep_ack_log` then puts it there)."""
        root = self.settings.acks_root
        return (REPO_ROOT / "data" / "acks-spool" if on_object_store(root) else Path(root)) / name

    def keep_ack_log(self, path: Path) -> str:
        """The finished ack log where verification reads it (a job run elsewhere: on object storage)."""
        root = self.settings.acks_root
        if not on_object_store(root):
            return str(path)
        uri = f"{root.rstrip('/')}/{path.name}"
        self.ack_files.write_text(uri, path.read_text())
        return uri

    @property
    def local_reports(self) -> Path | None:
        """The reports' folder when they are on this disk (Airflow then serves the Data Docs)."""
        return Path(self.settings.reports_root)

    @property
    def gx_project(self) -> Path:
        """GX keeps its project on a local disk: under the reports when they are local, else beside
        the repository (verify copies the Data Docs up)."""
        local = self.local_reports
        return local / "gx" if local is not None else REPO_ROOT / "data" / "gx"

    def sandbox(self, name: str, folder: Path) -> tuple[str, str]:
        """A private lake and checkpoint root for one run (the demo's): under `folder` here."""
        return str(folder / "lake"), str(folder / "checkpoints")

    def table(self, name: str, namespace: str = "main"):
        """A Delta table of the lake as delta-rs reaches it (eo/runtime/commits.py)."""
        from eo.runtime.commits import Table

        return Table(self.settings.table_path(name, namespace))

    def arrow_filesystem(self, uri: str):
        """A pyarrow filesystem rooted at a table, for delta-rs datasets: delta-rs's own filesystem
        handler crashes the interpreter at exit (terminate called without an active exception)."""
        from pyarrow import fs

        return fs.SubTreeFileSystem(uri.removeprefix("file://"), fs.LocalFileSystem())

    def rows(self, table, columns: list[str] | None = None, where=None):
        """A Delta table's rows (`commits.Table`, as last refreshed) in Arrow, read through
        `arrow_filesystem`: never `to_pyarrow_table`, whose Python file system leaves Arrow threads
        that abort the interpreter at exit (134, after a command printed everything). `where`: a
        pyarrow.compute expression the rows must meet (row groups its statistics rule out are skipped)."""
        dataset = table.current.to_pyarrow_dataset(filesystem=self.arrow_filesystem(table.uri))
        return dataset.to_table(columns=columns, filter=where)

    # -- leases and locks --------------------------------------------------------------------
    @property
    def lock_root(self) -> str:
        """A folder on this machine for file leases and the active lock: beside the checkpoints."""
        return self.settings.checkpoint_root

    @property
    def sink_dsn(self) -> str | None:
        return os.environ.get(SINK_DSN_VARIABLE) or None

    def lease(self) -> Lease:
        """PostgreSQL when the external sinks use one (they check the epoch inside their own
        transactions), else what `lease` in conf/platform.toml says."""
        if self.sink_dsn:
            return PostgresLease(self.sink_dsn)
        if self.settings.lease == "dynamodb":
            return _named(SHARED_LEASE).for_settings(self.settings)
        return FileLease(self.lock_root)

    # -- Spark and Kafka ---------------------------------------------------------------------
    def jars(self) -> list[str]:
        return jar_paths(object_store=False)

    def spark_kafka_options(self) -> dict[str, str]:
        """Options of every Spark Kafka source and sink: the address and the environment's own."""
        return {"kafka.bootstrap.servers": self.settings.kafka_bootstrap, **self.settings.kafka_options}

    def kafka_authentication(self) -> dict:
        """librdkafka settings that authenticate the Python clients: none on a plain broker, MSK IAM
        (eo/cloud/msk_iam.py) when the settings' Kafka options ask for SASL."""
        if "kafka.sasl.mechanism" not in self.settings.kafka_options:
            return {}
        return _named(MSK_AUTHENTICATION)(self.settings)

    # -- roles implemented above this layer --------------------------------------------------
    def job_runner(self, runners: Mapping[str, T]) -> T:
        """Of the implementations a caller offers per runner (the Airflow operator's launchers, the
        stream service), the one this environment runs Spark jobs with."""
        return runners[self.settings.job_runner]


def _named(implementation: str):
    module, _, name = implementation.partition(":")
    return getattr(importlib.import_module(module), name)


def environment(settings: Settings) -> Environment:
    """The environment of these settings, built once per settings object (its clients with it): local,
    or the object-store one when the lake is in a bucket."""
    built = _BUILT.get(id(settings))
    if built is None or built.settings is not settings:  # an id is reused only after its object died
        kind = _named(CLOUD_ENVIRONMENT) if on_object_store(settings.lake_root) else Environment
        built = _BUILT[id(settings)] = kind(settings)
        weakref.finalize(settings, _BUILT.pop, id(settings), None)
    return built


# Settings hold dicts, so they cannot key a cache themselves; their ids can, for as long as they live.
_BUILT: dict[int, Environment] = {}
