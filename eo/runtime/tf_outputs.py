"""Terraform's outputs as configuration values: conf/platform.toml names them as ${tf:name}, and
`terraform output -json` (or the local-s3 bootstrap) saves them as conf/terraform-outputs/<env>.json."""

from __future__ import annotations

import json
import os
from pathlib import Path


class MissingOutputs(FileNotFoundError):
    """The environment needs Terraform outputs that are not there."""


def outputs_path(env: str, root: Path) -> Path:
    return Path(os.environ.get("EO_TF_OUTPUTS", root / "conf" / "terraform-outputs" / f"{env}.json"))


def read_outputs(env: str, root: Path) -> dict[str, object]:
    """Values of `terraform output -json` ({"name": {"value": ...}}) or of a flat {name: value}."""
    path = outputs_path(env, root)
    if not path.exists():
        raise MissingOutputs(
            f"environment {env!r} needs Terraform outputs in {path}: for local-s3, run `python -m infra.s3 start` "
            f"(it bootstraps the buckets and writes them); for a cloud environment, save `terraform output -json` "
            "there (docs/cloud.md)"
        )
    raw = json.loads(path.read_text())
    return {k: v["value"] if isinstance(v, dict) and "value" in v else v for k, v in raw.items()}
