"""The workers' order (tests/file_order.py): files longest first by their last measured seconds,
each file's tests together and in their own order, a new file as the median one."""

from __future__ import annotations

import json

import pytest

from tests import file_order

pytestmark = pytest.mark.unit


def test_files_go_longest_first_and_keep_their_tests_in_order():
    paths = ["a.py", "a.py", "b.py", "c.py", "c.py", "c.py"]
    order = file_order.longest_first(paths, {"a.py": 5, "b.py": 50, "c.py": 20})
    assert order == [2, 3, 4, 5, 0, 1]


def test_a_file_without_an_estimate_counts_as_the_median_one():
    paths = ["short.py", "new.py", "long.py", "middle.py"]
    seconds = {"short.py": 1, "middle.py": 10, "long.py": 100}
    ordered = [paths[i] for i in file_order.longest_first(paths, seconds)]
    assert ordered == ["long.py", "new.py", "middle.py", "short.py"]


def test_equal_files_and_no_estimates_keep_the_collection_order():
    paths = ["x.py", "y.py", "x.py", "z.py"]
    assert file_order.longest_first(paths, {}) == [0, 2, 1, 3]
    assert file_order.longest_first(paths, {"x.py": 3, "y.py": 3, "z.py": 3}) == [0, 2, 1, 3]


def test_the_estimates_come_from_a_runs_durations_and_a_bad_file_reads_as_none(tmp_path):
    report = {"workers": {}, "files": [{"file": "t.py", "seconds": 12.5, "worker": "gw0"}], "tests": {}}
    assert file_order.from_durations(report) == {"t.py": 12.5}
    kept = tmp_path / "seconds.json"
    kept.write_text(json.dumps({"t.py": 12.5}))
    assert file_order.load_estimates(kept) == {"t.py": 12.5}
    kept.write_text("[1, 2")
    assert file_order.load_estimates(kept) == {}
    assert file_order.load_estimates(tmp_path / "missing.json") == {}


def test_the_kept_estimates_name_files_that_exist():
    from eo.runtime.config import REPO_ROOT

    seconds = file_order.load_estimates()
    assert seconds, "tests/file_seconds.json: run `make test`, then `make test-durations`"
    assert [f for f in seconds if not (REPO_ROOT / f).exists()] == []
