"""The environment on object storage (local-s3 and aws): the same roles as the local one
(eo/runtime/environment.py), each implemented for buckets, a shared lease and MSK."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

from eo.cloud.s3 import ObjectStoreFiles, arrow_s3, delta_rs_location, s3_client
from eo.runtime.config import REPO_ROOT
from eo.runtime.environment import Environment, on_object_store
from eo.runtime.jars import jar_paths
from eo.runtime.storage import Files, LocalFiles


class ObjectStoreEnvironment(Environment):
    """Tables and checkpoints in a bucket; reports in one too, or on this disk (local-s3, where
    Airflow serves the Data Docs)."""

    @cached_property
    def lake_files(self) -> Files:
        return ObjectStoreFiles(s3_client(self.settings))

    @cached_property
    def report_files(self) -> Files:
        return self._files_of(self.settings.reports_root)

    @cached_property
    def ack_files(self) -> Files:
        return self._files_of(self.settings.acks_root)

    def _files_of(self, root: str) -> Files:
        return self.lake_files if on_object_store(root) else LocalFiles()

    @property
    def local_reports(self) -> Path | None:
        return None if on_object_store(self.settings.reports_root) else Path(self.settings.reports_root)

    def sandbox(self, name: str, folder: Path) -> tuple[str, str]:
        """Under a `_<name>` prefix of the environment's buckets."""
        return f"{self.settings.lake_root}/_{name}", f"{self.settings.checkpoint_root}/_{name}"

    def table(self, name: str, namespace: str = "main"):
        from eo.runtime.commits import Table

        uri, options = delta_rs_location(self.settings, self.settings.table_path(name, namespace))
        return Table(uri, options)

    def arrow_filesystem(self, uri: str):
        from pyarrow import fs

        return fs.SubTreeFileSystem(uri.split("://", 1)[1], arrow_s3(self.settings))

    @property
    def lock_root(self) -> str:
        """The checkpoints are in a bucket: local locks live under data/ (they guard one machine)."""
        return str(REPO_ROOT / "data")

    def jars(self) -> list[str]:
        return jar_paths(object_store=True)
