"""The query's checkpoint as the job sees it before Spark starts the query.

The checkpoint's stream id (Spark's `metadata` file) names the checkpoint's generation: the
query's commits carry it in their app id, so a new checkpoint (after `python -m ops.reset`) starts
its positions afresh without being taken for a replay of the old one's batches.
"""

from __future__ import annotations

import json
import uuid

from eo.runtime.config import Settings
from eo.runtime.environment import environment
from eo.runtime.live_tables import metadata_uri, read_generation
from eo.runtime.storage import files_under


def ensure_id(settings: Settings, query: str) -> str:
    """The checkpoint's stream id (8 characters), written first if the checkpoint is new: Spark
    then adopts it as the query's id."""
    uri = metadata_uri(settings, query)
    if not environment(settings).lake_files.exists(uri):
        environment(settings).lake_files.write_text(uri, json.dumps({"id": str(uuid.uuid4())}) + "\n")
    return read_generation(settings, uri)


def has_offsets(settings: Settings, query: str) -> bool:
    """Has the query ever planned a micro-batch from this checkpoint?

    Any batch's offset file says so. Not offsets/0: Spark keeps only the newest ~100, and a
    checkpoint taken for new past its 100th batch made every restart scan all of bronze for where
    to start and read the seed again (docs/hot-path.md, "Recovery")."""
    folder = f"{settings.checkpoint_path(query)}/offsets"
    return any(uri.rsplit("/", 1)[-1].isdigit() for uri in files_under(environment(settings).lake_files, folder, ""))


def kafka_offsets(settings: Settings, query: str, batch_id: int) -> str | None:
    """The Kafka offsets (JSON) a planned micro-batch reads up to, from the checkpoint's offset log."""
    uri = f"{settings.checkpoint_path(query)}/offsets/{batch_id}"
    if not environment(settings).lake_files.exists(uri):
        return None
    # offsets/<n>: a version line, the batch's metadata, then one line per source ("-" for none).
    for line in environment(settings).lake_files.read_text(uri).splitlines()[2:]:
        if line.strip() not in ("", "-") and settings.topic in json.loads(line):
            return json.dumps({settings.topic: json.loads(line)[settings.topic]})
    return None


def initial_kafka_offsets(settings: Settings, query: str) -> str | None:
    """Where the checkpoint started reading Kafka: Spark's Kafka source keeps it in sources/0/0."""
    uri = f"{settings.checkpoint_path(query)}/sources/0/0"
    if not environment(settings).lake_files.exists(uri):
        return None
    # A version line ("v1", after a NUL byte), then the offsets.
    offsets = json.loads(environment(settings).lake_files.read_text(uri).splitlines()[-1])
    return json.dumps({settings.topic: offsets[settings.topic]}) if settings.topic in offsets else None


def kafka_range(settings: Settings, query: str, batch_id: int) -> tuple[str, str]:
    """(start, end) offsets of a planned micro-batch; the first batch starts where the query did."""
    end = kafka_offsets(settings, query, batch_id)
    start = kafka_offsets(settings, query, batch_id - 1) if batch_id > 0 else initial_kafka_offsets(settings, query)
    if start is None or end is None:
        raise FileNotFoundError(f"no offsets for batch {batch_id} in {settings.checkpoint_path(query)}")
    return start, end
