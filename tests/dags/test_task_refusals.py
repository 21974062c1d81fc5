"""A job's one line reaches the Airflow task first, and a refusal that retrying cannot change
is not retried: a rebuild into `main` while the stream holds the live tables (its normal state)
fails at once, its reason first, instead of after two retries behind spark-submit's command."""

from __future__ import annotations

import json

import pytest

from eo.runtime.cli import NotReady, Refused, guarded, read_one_line
from eo.runtime.config import REPO_ROOT
from eo.runtime.environment import environment
from eo.runtime.fencing import HOLD_SECONDS, Fence
from eo.runtime.live_tables import QUERY, holder
from tests.conftest import settings_env


@pytest.fixture
def platform(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO_ROOT / "dags"))  # as the DAG processor sees it
    from eo_common import platform

    return platform


@pytest.mark.unit
@pytest.mark.parametrize(
    ("raised", "code", "retry"),
    [(Refused("the stream on h holds the stream's live tables"), 3, False), (NotReady("Kafka is down"), 3, True)],
)
def test_a_known_failure_writes_its_line_where_the_caller_asked(tmp_path, monkeypatch, raised, code, retry):
    monkeypatch.setenv("EO_ONE_LINE_FILE", str(tmp_path / "line.json"))

    def main(argv):
        raise raised

    assert guarded(main) == code
    assert read_one_line(str(tmp_path / "line.json")) == {"code": code, "line": str(raised), "retry": retry}


@pytest.mark.unit
def test_nothing_is_written_without_the_variable_or_for_a_bug(tmp_path, monkeypatch):
    monkeypatch.delenv("EO_ONE_LINE_FILE", raising=False)
    assert guarded(lambda argv: (_ for _ in ()).throw(NotReady("x"))) == 3
    monkeypatch.setenv("EO_ONE_LINE_FILE", str(tmp_path / "line.json"))
    with pytest.raises(ZeroDivisionError):  # a bug keeps its traceback, and no line
        guarded(lambda argv: 1 / 0)
    assert read_one_line(str(tmp_path / "line.json")) is None


@pytest.mark.unit
def test_the_task_fails_with_the_line_first_without_retry_for_a_refusal(tmp_path, platform):
    from eo_common.airflow_api import AirflowException, AirflowFailException

    path = tmp_path / "line.json"
    failure = RuntimeError("Cannot execute: spark-submit --master local[2] ... Error code is: 3.")
    path.write_text(json.dumps({"code": 3, "line": "the stream on h holds the live tables", "retry": False}))
    with pytest.raises(AirflowFailException, match=r"^the stream on h holds the live tables \(exit code 3\); not retr"):
        platform.raise_one_line(str(path), failure)
    path.write_text(json.dumps({"code": 3, "line": "Kafka is not reachable", "retry": True}))
    with pytest.raises(AirflowException, match=r"^Kafka is not reachable \(exit code 3\)$") as raised:
        platform.raise_one_line(str(path), failure)
    assert not isinstance(raised.value, AirflowFailException) and raised.value.__cause__ is failure
    platform.raise_one_line(str(tmp_path / "none.json"), failure)  # nothing recorded: the caller raises its own


@pytest.mark.integration
def test_a_rebuild_into_main_while_the_stream_holds_the_tables_fails_once_naming_the_stream(
    lake, platform, monkeypatch
):
    """The operator's real spark-submit of jobs/rebuild.py (the job refuses before its Spark session)."""
    from eo_common.airflow_api import AirflowFailException

    for key, value in settings_env(lake).items():
        monkeypatch.setenv(key, value)
    stream = Fence.start(environment(lake).lease(), QUERY, holder(), HOLD_SECONDS)  # as a running stream holds it
    task = platform.PlatformSparkSubmitOperator(
        task_id="rebuild_interval", script="jobs/rebuild.py", application_args=["--interval=all", "--target=main"]
    )
    with pytest.raises(AirflowFailException) as failed:
        platform.SparkSubmitLauncher().execute(task, lake, {})
    line = str(failed.value)
    assert line.startswith("the stream on "), line
    assert "holds the stream's live tables: stop it (make stream-stop) before rebuilding --target main" in line
    assert line.endswith("(exit code 3); not retried: trying again will not change it") and "spark-submit" not in line
    assert environment(lake).lease().release(QUERY, stream.epoch)
