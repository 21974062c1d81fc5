"""The owner hash is named and pinned: every user_sessions file records its name, its known
answers hold under the installed pandas, a changed hash refuses the stream's start in one line,
and a file noted with another hash is read as anyone's, never as its old owner's alone."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from eo.runtime.cli import NotReady
from eo.runtime.data_files import BUCKET_KEY, write_files
from streaming import session_merge
from streaming.session_merge import KNOWN_HASHES, OWNER_HASH, check_owner_hash, user_buckets, user_partition

pytestmark = pytest.mark.unit


def test_the_known_answers_hold_under_the_installed_pandas():
    check_owner_hash()
    assert session_merge.owner_hash_values(list(KNOWN_HASHES)) == list(KNOWN_HASHES.values())
    # user_partition is that hash modulo the owners, nulls and repeated users alike
    users = pa.array([*KNOWN_HASHES, None, "u1"])
    expected = [value % 7 for value in KNOWN_HASHES.values()]
    assert user_partition(users, 7).tolist()[:4] == expected
    assert user_partition(users, 7)[-1] == expected[0]
    assert user_partition(pa.array(list(KNOWN_HASHES)), 7).tolist() == expected  # the distinct-values path


def test_a_hash_that_computes_otherwise_refuses_the_start(monkeypatch):
    monkeypatch.setattr(session_merge, "_owner_hash", lambda values: np.arange(len(values), dtype=np.uint64))
    with pytest.raises(NotReady, match=r"the owner hash .* computes other values under pandas"):
        check_owner_hash()


def test_every_file_names_its_hash_and_another_hash_is_read_as_anyones(tmp_path):
    from pyarrow import fs

    rows = pa.table({"user_id": list(KNOWN_HASHES), "session_date": ["2026-11-05"] * 4})
    buckets = user_buckets(3)
    actions = write_files(
        fs.SubTreeFileSystem(str(tmp_path), fs.LocalFileSystem()), rows, ["session_date"], "t", buckets
    )
    for action in actions:
        metadata = pq.read_metadata(tmp_path / action["path"]).metadata
        noted = json.loads(metadata[BUCKET_KEY])
        assert noted["hash"] == OWNER_HASH and buckets.bucket_of(metadata) == noted["bucket"]
        other = {BUCKET_KEY: json.dumps({**noted, "hash": "another-hash"}).encode()}
        assert buckets.bucket_of(other) is None  # may hold any owner's users
        unnamed = {BUCKET_KEY: json.dumps({k: v for k, v in noted.items() if k != "hash"}).encode()}
        assert buckets.bucket_of(unnamed) == noted["bucket"]  # written before names: by this hash
