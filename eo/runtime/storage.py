"""The plain files around tables and checkpoints (checkpoints read by monitoring, Delta logs read by
the VACUUM guard, reports): the interface, and its local-disk implementation. The object-store one is
eo/cloud/s3.py; eo/runtime/environment.py picks one per root."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Protocol


class Files(Protocol):
    """The plain files around tables and checkpoints, wherever the environment keeps them."""

    def names(self, folder: str) -> list[str]: ...  # entries directly under `folder`, files and folders

    def read_text(self, uri: str) -> str: ...

    def read_bytes(self, uri: str) -> bytes: ...

    def write_text(self, uri: str, text: str) -> None: ...

    def modified(self, uri: str) -> float: ...  # epoch seconds

    def exists(self, uri: str) -> bool: ...

    def delete_tree(self, uri: str) -> None: ...

    def delete_file(self, uri: str) -> None: ...

    def put_tree(self, folder: Path, uri: str) -> None: ...  # a local folder's files, replacing `uri`'s

    def make_folder(self, uri: str) -> None: ...  # a folder files can be written into (object stores: none needed)


class LocalFiles:
    def names(self, folder: str) -> list[str]:
        return sorted(p.name for p in Path(folder).iterdir()) if Path(folder).is_dir() else []

    def read_text(self, uri: str) -> str:
        return Path(uri).read_text()

    def read_bytes(self, uri: str) -> bytes:
        return Path(uri).read_bytes()

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

    def make_folder(self, uri: str) -> None:
        Path(uri).mkdir(parents=True, exist_ok=True)


def files_under(files: Files, folder: str, suffix: str) -> list[str]:
    """The URIs of the files directly under `folder` whose names end with `suffix`, sorted."""
    return [f"{folder.rstrip('/')}/{name}" for name in files.names(folder) if name.endswith(suffix)]
