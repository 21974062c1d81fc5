"""Where a producer's ack log goes (Environment.ack_log / keep_ack_log): beside the lake when acks
live on object storage, since verification runs elsewhere (a job run) and reads them there."""

from __future__ import annotations

import pytest

from eo.runtime.config import REPO_ROOT, load_settings
from eo.runtime.environment import environment

pytestmark = pytest.mark.unit


class Files:
    def __init__(self):
        self.written: dict[str, str] = {}

    def write_text(self, uri: str, text: str) -> None:
        self.written[uri] = text


def test_a_local_ack_log_stays_where_the_producer_wrote_it(tmp_path):
    settings = load_settings("local").with_overrides(acks_root=str(tmp_path / "acks"))
    path = environment(settings).ack_log("run.csv")
    assert path == tmp_path / "acks" / "run.csv"
    path.parent.mkdir()
    path.write_text("topic,partition,offset,kind\n")
    assert environment(settings).keep_ack_log(path) == str(path)


def test_an_ack_log_is_spooled_here_and_kept_on_object_storage(tmp_path, monkeypatch):
    settings = load_settings("local").with_overrides(acks_root="s3a://the-lake/acks/")
    env = environment(settings)
    files = Files()
    monkeypatch.setattr(type(env), "ack_files", files)
    path = env.ack_log("run.csv")
    assert path == REPO_ROOT / "data" / "acks-spool" / "run.csv"  # never a mangled "s3a:/..." path
    spooled = tmp_path / "run.csv"
    spooled.write_text("topic,partition,offset,kind\nt,0,0,event\n")
    assert env.keep_ack_log(spooled) == "s3a://the-lake/acks/run.csv"
    assert files.written == {"s3a://the-lake/acks/run.csv": spooled.read_text()}
