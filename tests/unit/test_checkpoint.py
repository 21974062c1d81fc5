"""What the job reads from its checkpoint before Spark starts the query (streaming/checkpoint.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from eo.runtime.config import load_settings
from streaming import checkpoint

pytestmark = pytest.mark.unit


@pytest.fixture
def settings(tmp_path):
    return load_settings("local").with_overrides(checkpoint_root=str(tmp_path))


def _offsets(settings, *names: str) -> None:
    folder = Path(settings.checkpoint_path("events")) / "offsets"
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_text("v1\n{}\n")


def test_a_checkpoint_without_offset_files_is_new(settings):
    assert not checkpoint.has_offsets(settings, "events")
    _offsets(settings, ".0.crc", "0.tmp")  # what a crash while writing the first one can leave
    assert not checkpoint.has_offsets(settings, "events")


def test_the_first_batch_offsets_say_the_checkpoint_is_not_new(settings):
    _offsets(settings, "0")
    assert checkpoint.has_offsets(settings, "events")


def test_a_checkpoint_past_spark_s_offset_cleanup_is_not_new(settings):
    # Spark keeps only its newest ~100 offset files: offsets/0 is gone after batch ~100.
    _offsets(settings, "152", ".152.crc", "153", ".153.crc")
    assert checkpoint.has_offsets(settings, "events")
