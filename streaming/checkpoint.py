"""The query's checkpoint as the job sees it before Spark starts the query.

The checkpoint's stream id (Spark's `metadata` file) names the checkpoint's generation: the
query's commits carry it in their app id, so a new checkpoint (after `streaming reset`) starts
its positions afresh without being taken for a replay of the old one's batches.
"""

from __future__ import annotations

import json
import uuid

from jobs import storage
from jobs.config import Settings


def _metadata(settings: Settings, query: str) -> str:
    return f"{settings.checkpoint_path(query)}/metadata"


def ensure_id(settings: Settings, query: str) -> str:
    """The checkpoint's stream id (8 characters), written first if the checkpoint is new: Spark
    then adopts it as the query's id."""
    uri = _metadata(settings, query)
    if not storage.exists(settings, uri):
        storage.write_text(settings, uri, json.dumps({"id": str(uuid.uuid4())}) + "\n")
    return json.loads(storage.read_text(settings, uri).splitlines()[0])["id"][:8]


def has_offsets(settings: Settings, query: str) -> bool:
    """Has the query ever planned a micro-batch from this checkpoint?"""
    return storage.exists(settings, f"{settings.checkpoint_path(query)}/offsets/0")
