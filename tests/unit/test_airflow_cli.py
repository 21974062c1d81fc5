"""One metadata database: airflow.cfg says what the components run with, the docs' Airflow
commands go through `make airflow-cli`, and `cli` without a command says what to give."""

from __future__ import annotations

import configparser

import pytest

from infra import airflow
from tests.documented import airflow_commands, bare_commands, documented_files

pytestmark = pytest.mark.unit


def test_the_config_file_holds_every_airflow_setting_of_the_environment():
    env = {
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": "postgresql+psycopg://eo:p%40ss@127.0.0.1:5432/airflow",
        "AIRFLOW__CORE__DAGS_FOLDER": "/repo/dags",
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW_HOME": "/home",  # not a setting of a section
        "AIRFLOW_CTX_DAG_ID": "x",
        "PATH": "/bin",
    }
    parser = configparser.ConfigParser()  # Airflow's reading: % interpolation on
    parser.read_string(airflow.config_file(env))
    assert parser.get("database", "sql_alchemy_conn") == env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]
    assert dict(parser["core"]) == {"dags_folder": "/repo/dags", "load_examples": "False"}
    assert parser.sections() == ["core", "database"]


def test_the_service_writes_its_config_from_its_own_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("EO_AIRFLOW_DB", "sqlite")
    monkeypatch.delenv("EO_AIRFLOW_DB_URL", raising=False)
    service = airflow.AirflowService(tmp_path / "home", 18123)
    parser = configparser.ConfigParser()
    parser.read(service.write_config())
    assert parser.get("database", "sql_alchemy_conn") == f"sqlite:///{tmp_path / 'home' / 'airflow.db'}"
    assert parser.get("api", "port") == "18123"
    assert (tmp_path / "home" / "airflow.cfg").stat().st_mode & 0o077 == 0  # a password and a secret


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("postgresql+psycopg://eo:secret@127.0.0.1:5432/airflow", "PostgreSQL at 127.0.0.1:5432/airflow"),
        ("postgresql+psycopg://u:pw@db.internal/meta", "PostgreSQL at db.internal:5432/meta"),
        ("sqlite:////tmp/h/airflow.db", "SQLite at /tmp/h/airflow.db (testing only)"),
    ],
)
def test_where_the_metadata_lives_is_said_without_its_password(url, said):
    assert airflow.where(url) == said
    assert "secret" not in airflow.where(url) and "pw" not in airflow.where(url)


def test_metadata_names_the_projects_postgresql_by_default(monkeypatch, tmp_path):
    monkeypatch.delenv("EO_AIRFLOW_DB_URL", raising=False)
    monkeypatch.delenv("EO_AIRFLOW_DB", raising=False)
    assert airflow.AirflowService(tmp_path).metadata().startswith("PostgreSQL at 127.0.0.1:")


def test_cli_without_a_command_says_what_to_give(capsys):
    assert airflow.main(["cli"]) == 2
    assert 'make airflow-cli ARGS="dags list"' in capsys.readouterr().err


def test_the_docs_give_airflow_commands_only_through_the_wrapper():
    found, bare = [], []
    for path in documented_files():
        text = path.read_text()
        found += airflow_commands(text)
        bare += [f"{path.name}: {command}" for command in bare_commands(text)]
    assert not bare, f"run these with make airflow-cli ARGS=...: {bare}"
    assert ["backfill", "create", "--dag-id", "rebuild_derived"] in [c[:4] for c in found]


def test_the_docs_scanner_finds_bare_and_wrapped_commands():
    text = 'AIRFLOW_HOME=x .venv/bin/airflow backfill create --dag-id d\nmake airflow-cli ARGS="dags\n  list"'
    assert bare_commands(text) == [".venv/bin/airflow backfill"]
    assert airflow_commands(text) == [["dags", "list"]]
    assert bare_commands("make airflow-status; the airflow dags folder") == ["airflow dags"]
    assert airflow_commands('make airflow-cli ARGS="..." or make airflow-cli ARGS="<command>"') == []
