"""Every local service answers one command line (infra/service.py): the same verbs and flags,
`--json` and `--check` before or after the verb, `--check` not ready (3) when the service is down.

No server and no subprocess: a fake service, or the real modules on a free port and an empty home.
"""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest

from infra import airflow, kafka, postgres, s3, service, spark_cluster, streaming
from infra.status import NOT_READY, Status

pytestmark = pytest.mark.unit

DOC = "A fake service.\n\n    python -m infra.fake start|stop|status|ping\n"


class Fake:
    def __init__(self, up: bool) -> None:
        self.up = up
        self.done: list[tuple[str, list[str]]] = []

    def verb(self, name: str, code: int | None = None):
        def run(fake: Fake, args) -> int | None:
            fake.done.append((name, args.extra))
            print(f"fake {name}")
            return code

        return run

    def status(self, fake: Fake, args) -> Status:
        state = "running" if fake.up else "stopped"
        return Status(fake.up, {"service": "fake", "state": state}, [("fake", state), ("port", args.port)])


def run(fake: Fake, argv: list[str], **kwargs) -> int:
    return service.main(
        "infra.fake",
        DOC,
        lambda args: fake,
        start=fake.verb("start"),
        stop=fake.verb("stop"),
        status=fake.status,
        verbs={"ping": fake.verb("ping", 7)},
        options=lambda parser: parser.add_argument("--port", type=int, default=1),
        argv=argv,
        **kwargs,
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["status", "--json", "--check"],
        ["--json", "status", "--check"],
        ["--json", "--check", "status"],
        ["--check", "--port", "2", "status", "--json"],
    ],
)
@pytest.mark.parametrize("up", [True, False])
def test_json_and_check_count_before_and_after_the_verb(argv, up, capsys):
    assert run(Fake(up), argv) == (0 if up else NOT_READY)
    assert json.loads(capsys.readouterr().out) == {"service": "fake", "state": "running" if up else "stopped"}


def test_a_stopped_service_is_an_answer_without_check(capsys):
    assert run(Fake(False), ["status", "--port", "5"]) == 0
    assert capsys.readouterr().out == "fake  stopped\nport  5\n"
    assert run(Fake(False), ["--check", "status"]) == NOT_READY
    assert capsys.readouterr().out == "fake  stopped\nport  1\n"


def test_verbs_run_on_the_service_and_give_their_exit_code(capsys):
    fake = Fake(True)
    assert run(fake, ["start"]) == 0
    assert run(fake, ["stop", "--json"]) == 0, "the status flags are accepted with every verb"
    assert run(fake, ["ping"]) == 7
    assert fake.done == [("start", []), ("stop", []), ("ping", [])]
    assert capsys.readouterr().out == "fake start\nfake stop\nfake ping\n"


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["stats"], "invalid choice: 'stats'"),
        ([], "the following arguments are required: verb"),
        (["status", "--jsn"], "unrecognized arguments: --jsn"),
        (["start", "--", "--until-caught-up"], "unrecognized arguments: --until-caught-up"),
    ],
)
def test_an_unknown_verb_or_option_is_a_usage_error(argv, error, capsys):
    fake = Fake(True)
    with pytest.raises(SystemExit) as exited:
        run(fake, argv)
    assert exited.value.code == 2
    shown = capsys.readouterr().err
    assert shown.startswith("usage: python -m infra.fake") and error in shown
    assert "{start,stop,status,ping}" in shown
    assert fake.done == [], "nothing runs after a usage error"


def test_passthrough_verbs_get_what_the_parser_does_not_know():
    fake = Fake(True)
    assert run(fake, ["start", "--", "--until-caught-up"], passthrough=["start"]) == 0
    assert run(fake, ["--json", "start", "--trigger-seconds", "5"], passthrough=["start"]) == 0
    assert fake.done == [("start", ["--until-caught-up"]), ("start", ["--trigger-seconds", "5"])]


def test_a_service_cannot_take_over_a_common_verb():
    with pytest.raises(ValueError, match="every service's own verbs"):
        service.main("infra.fake", DOC, lambda args: None, start=print, stop=print, status=print, verbs={"stop": print})


def test_help_shows_the_module_doc_and_the_exit_codes(capsys):
    with pytest.raises(SystemExit) as exited:
        run(Fake(True), ["--help"])
    assert exited.value.code == 0
    shown = capsys.readouterr().out
    assert "python -m infra.fake start|stop|status|ping" in shown and "3 with --check: not up" in shown


# The real services, stopped: each main is the shared one.


@pytest.fixture
def stopped(tmp_path, monkeypatch):
    monkeypatch.setattr(s3, "SERVICES_DIR", tmp_path)
    where = ["--port", "1", "--home", str(tmp_path)]
    return {
        kafka: ("kafka", where),
        postgres: ("postgres", where),
        airflow: ("airflow", where),
        s3: ("s3", ["--port", "1"]),
    }


@pytest.mark.parametrize("module", [kafka, postgres, airflow, s3], ids=lambda m: m.__name__)
def test_every_stopped_service_answers_json_and_check_alike(module, stopped, capsys):
    name, where = stopped[module]
    assert module.main(["status", "--json", "--check", *where]) == NOT_READY
    report = json.loads(capsys.readouterr().out)
    assert (report["service"], report["state"]) == (name, "stopped")
    assert module.main(["--json", "status", *where]) == 0
    assert json.loads(capsys.readouterr().out) == report
    assert module.main(["status", *where]) == 0
    assert re.search(r"^to start it\s+(make|python -m infra\.)", capsys.readouterr().out, flags=re.M)


def test_postgres_keeps_its_dsn_verb(tmp_path, capsys):
    (tmp_path / "password").write_text("secret\n")
    assert postgres.main(["dsn", "--port", "1", "--home", str(tmp_path)]) == 0
    assert capsys.readouterr().out == "postgresql://eo:secret@127.0.0.1:1/eo\n"


@pytest.mark.parametrize(
    ("workers", "up", "state"),
    [(2, True, "running"), (1, True, "running, 1 of 2 workers"), (0, False, "running, 0 of 2 workers")],
)
def test_a_spark_cluster_is_up_while_a_worker_is(workers, up, state, monkeypatch, capsys):
    found = {"alive": True, "workers": workers, "cores": workers, "applications": 0}
    monkeypatch.setattr(spark_cluster.SparkCluster, "status", lambda self: found)
    assert spark_cluster.main(["status", "--check", "--json"]) == (0 if up else NOT_READY)
    assert json.loads(capsys.readouterr().out) == {
        "service": "spark-cluster",
        "state": state,
        "master": "spark://127.0.0.1:7077",
        **found,
    }


def test_streaming_status_reads_json_and_check_after_the_verb(monkeypatch, capsys):
    # They were taken for arguments of `streaming run`: --check always exited 0.
    monkeypatch.setattr(streaming, "load_settings", lambda: SimpleNamespace(topic="t"))
    monkeypatch.setattr(streaming, "status", lambda settings, args: Status(False, {"running": False}, [("x", 1)]))
    assert streaming.main(["status", "--json", "--check"]) == NOT_READY
    assert json.loads(capsys.readouterr().out) == {"running": False}


def test_streaming_start_passes_the_rest_to_streaming_run(monkeypatch, capsys):
    started: list[list[str]] = []
    monkeypatch.setattr(streaming, "load_settings", lambda: SimpleNamespace(topic="t"))
    monkeypatch.setattr(streaming, "start", lambda settings, extra: started.append(extra))
    assert streaming.main(["start", "--", "--until-caught-up"]) == 0
    assert streaming.main(["start", "--max-offsets-per-trigger", "10"]) == 0
    assert started == [["--until-caught-up"], ["--max-offsets-per-trigger", "10"]]
    assert capsys.readouterr().out.startswith("streaming job already running\nlog: ")
