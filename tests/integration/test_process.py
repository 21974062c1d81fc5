"""Stopping a server stops what it started: its process group, and what its environment marks."""

import uuid

import pytest

from infra import process

pytestmark = pytest.mark.integration


def test_stop_takes_the_children_a_server_left_in_its_group(tmp_path):
    mark = uuid.uuid4().hex
    pid_file = tmp_path / "server.pid"
    # The shell dies of SIGTERM at once; its background sleep would live on, as a worker does.
    leader = process.spawn(["sh", "-c", "sleep 600 & wait"], tmp_path / "server.log", pid_file, env={"MARK": mark})
    process.wait_for(lambda: len(process.group(leader)) == 2, 10, "the shell and its child")
    marked = process.with_env("MARK", mark)
    assert leader in marked and len(marked) == 2
    assert process.stop(pid_file, timeout=5)
    assert process.group(leader) == [] and process.with_env("MARK", mark) == []
    assert not pid_file.exists() and not process.stop(pid_file)


def test_terminate_kills_what_ignores_sigterm(tmp_path):
    mark = uuid.uuid4().hex
    process.spawn(["sh", "-c", "trap '' TERM; sleep 600"], tmp_path / "log", tmp_path / "pid", env={"MARK": mark})
    process.wait_for(lambda: len(process.with_env("MARK", mark)) == 2, 10, "the shell and its sleep")
    process.terminate(process.with_env("MARK", mark), timeout=1)
    assert process.with_env("MARK", mark) == []
