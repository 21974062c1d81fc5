"""Airflow 3 for this project on one machine: API server + UI, scheduler, DAG processor, triggerer.

    python -m infra.airflow start|stop|status|watch [--port 8080] [--home DIR]
    python -m infra.airflow status [--json] [--check]
    python -m infra.airflow cli -- backfill create --dag-id rebuild_derived ...   (make airflow-cli ARGS="...")

Metadata in PostgreSQL: the project's own server (infra/postgres.py, started if needed), in a
database `airflow`. EO_AIRFLOW_DB_URL chooses another (postgresql+psycopg://user:pw@host/db);
EO_AIRFLOW_DB=sqlite keeps it in SQLite under the home, a testing-only database (a backfill from
the UI crashed its scheduler: one writer for the scheduler and the API server). LocalExecutor with a
parallelism sized for 2 cores, no example DAGs, the `spark_default` connection created if
missing (local[*]; point it at a cluster master in the UI without touching code). The login
is `admin` with a password generated on first start and kept in <home>/passwords.json.
<home>/airflow.cfg is written from the same settings, so any `airflow` command run with that
AIRFLOW_HOME finds the PostgreSQL metadata, never a second, empty SQLite database; `cli` runs one
with this Airflow's whole environment (its DAGs folder, plugins and the project on the path).
A watchdog started with them starts again any component that dies, and `status` counts those
restarts (<home>/restarts.jsonl), naming the running tasks a scheduler that died took with it.

Every process Airflow starts carries a mark in its environment (MARK, its home), and `stop` stops
what still carries it after the components: a task's Spark job. What a task starts to outlive
Airflow (the stream the supervisor restarts, infra/streaming.py) runs without the mark or any of
Airflow's variables (`outside_airflow`), outside its process tree, and `stop` leaves it alone.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from eo.runtime.config import REPO_ROOT
from infra import process, service
from infra.airflow_config import config_file, where
from infra.airflow_tasks import describe_task, tasks_in
from infra.postgres import Postgres

DEFAULT_HOME = REPO_ROOT / "data" / "airflow"
DATABASE = "airflow"
COMPONENTS = ("api-server", "scheduler", "dag-processor", "triggerer")
WATCHDOG = "watchdog"  # restarts a component that died (`python -m infra.airflow watch`)
WATCH_EVERY_S = 5.0
USER = "admin"
# In the environment of every process this Airflow starts (and of what they start): its home.
MARK = "EO_AIRFLOW_INSTANCE"


def outside_airflow(environ: dict[str, str]) -> dict[str, str]:
    """`environ` without what Airflow puts in its processes' environment: its variables (AIRFLOW_*,
    a task's AIRFLOW_CTX_*, its private _AIRFLOW_* and __AIRFLOW_*) and MARK. A process started
    with it is none of Airflow's: `stop` leaves it running."""
    return {k: v for k, v in environ.items() if not k.lstrip("_").startswith("AIRFLOW") and k != MARK}


# What `start` was run with, recorded in <home>/started.json: every later command on that home
# (status, stop, cli) finds the same Airflow without the variables being typed again.
STARTED_WITH = ("EO_AIRFLOW_PORT", "EO_PG_PORT", "EO_AIRFLOW_DB", "EO_AIRFLOW_DB_URL")


def started_with(home: Path) -> dict[str, str]:
    """The knobs the last `start` on `home` ran with ({} before any start)."""
    path = home / "started.json"
    try:
        return json.loads(path.read_text()) if path.exists() else {}
    except ValueError:
        return {}


@dataclass(frozen=True)
class AirflowService:
    home: Path
    port: int = 8080
    # STARTED_WITH's values this instance uses: the environment's, else what the last start used.
    knobs: tuple[tuple[str, str], ...] = ()

    @classmethod
    def default(cls, port: int | None = None, home: Path | None = None) -> AirflowService:
        """The Airflow on `home`: a variable set now wins, else what `start` recorded, else defaults
        (port 8080, the project's PostgreSQL on 5432)."""
        home = home or Path(os.environ.get("EO_AIRFLOW_HOME", DEFAULT_HOME))
        recorded = started_with(home)
        knobs = {
            k: os.environ[k] if k in os.environ else recorded[k]
            for k in STARTED_WITH
            if k in os.environ or k in recorded
        }
        port = port or int(knobs.get("EO_AIRFLOW_PORT", "8080"))
        return cls(home, port, tuple(sorted({**knobs, "EO_AIRFLOW_PORT": str(port)}.items())))

    def knob(self, name: str, default: str | None = None) -> str | None:
        return dict(self.knobs).get(name, os.environ.get(name, default))

    def postgres(self) -> Postgres:
        """The project's PostgreSQL this Airflow keeps its metadata in (unless another is chosen)."""
        port = self.knob("EO_PG_PORT")
        return Postgres.default(int(port) if port else None)

    def record_start(self) -> None:
        """What this start ran with, for the commands after it (STARTED_WITH)."""
        path = self.home / "started.json"
        path.write_text(json.dumps({k: v for k, v in self.knobs if v is not None}, indent=1))
        path.chmod(0o600)  # a database URL may hold a password

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _secret(self, name: str, make) -> str:
        """Generated once per home, never in the repo."""
        path = self.home / "secrets.json"
        values = json.loads(path.read_text()) if path.exists() else {}
        if name not in values:
            values[name] = make()
            self.home.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values))
            path.chmod(0o600)
        return values[name]

    def password(self) -> str:
        password = self._secret("admin_password", lambda: secrets.token_urlsafe(12))
        passwords = self.home / "passwords.json"
        passwords.write_text(json.dumps({USER: password}))
        passwords.chmod(0o600)
        return password

    @property
    def on_sqlite(self) -> bool:
        return not self.knob("EO_AIRFLOW_DB_URL") and self.knob("EO_AIRFLOW_DB", "postgres") == "sqlite"

    def db_url(self) -> str:
        if url := self.knob("EO_AIRFLOW_DB_URL"):
            return url
        if self.on_sqlite:
            return f"sqlite:///{self.home / 'airflow.db'}"
        server = self.postgres().dsn().rsplit("/", 1)[0]
        return f"{server.replace('postgresql://', 'postgresql+psycopg://', 1)}/{DATABASE}"

    def metadata(self) -> str:
        """Where this Airflow's metadata lives, in words (no password: read before any server runs)."""
        if self.knob("EO_AIRFLOW_DB_URL") or self.on_sqlite:
            return where(self.db_url())
        return f"PostgreSQL at 127.0.0.1:{self.postgres().port}/{DATABASE}"

    def ensure_database(self) -> None:
        """The project's PostgreSQL up, with Airflow's database in it (unless another is chosen)."""
        if self.knob("EO_AIRFLOW_DB_URL") or self.on_sqlite:
            return
        server = self.postgres()
        server.start()
        server.create_database(DATABASE)

    def env(self) -> dict[str, str]:
        venv_bin = str(Path(sys.executable).parent)
        db_url = self.db_url()
        return {
            **os.environ,
            **dict(self.knobs),  # what a later command found recorded, its processes see too
            "AIRFLOW_HOME": str(self.home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(REPO_ROOT / "dags"),
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO_ROOT / "plugins"),
            # The Data Docs are served by this API server (plugins/eo_platform.py).
            "EO_DATA_DOCS_URL": f"{self.url}/data-docs",
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            # Two cores: a few task processes at a time, Spark jobs need the rest.
            "AIRFLOW__CORE__PARALLELISM": os.environ.get("EO_AIRFLOW_PARALLELISM", "4"),
            "AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG": "2",
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": os.environ.get("EO_AIRFLOW_PAUSED", "True"),
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.url}/execution/",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USER}:admin",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(self.home / "passwords.json"),
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__PORT": str(self.port),
            "AIRFLOW__API__BASE_URL": self.url,
            "AIRFLOW__API__WORKERS": "1",
            "AIRFLOW__API_AUTH__JWT_SECRET": self._secret("jwt_secret", lambda: secrets.token_urlsafe(32)),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": db_url,
            # Airflow 3 also opens an async engine; for PostgreSQL it would take asyncpg, which is
            # not installed: psycopg 3 serves both.
            **(
                {"AIRFLOW__DATABASE__SQL_ALCHEMY_CONN_ASYNC": db_url.replace("+psycopg://", "+psycopg_async://", 1)}
                if db_url.startswith("postgresql+psycopg://")
                else {}
            ),
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "30",
            "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "30",
            "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(self.home / "logs"),
            # The log servers' ports follow the API port, so a second instance (tests) fits.
            "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(self.port + 1),
            "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(self.port + 2),
            "PATH": f"{venv_bin}{os.pathsep}{os.environ.get('PATH', '')}",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])),
            "EO_HOME": str(REPO_ROOT),
            "SPARK_LOCAL_IP": "127.0.0.1",
            MARK: str(self.home),
        }

    def write_config(self) -> Path:
        """<home>/airflow.cfg from this Airflow's settings (its metadata database first of all)."""
        path = self.home / "airflow.cfg"
        self.home.mkdir(parents=True, exist_ok=True)
        path.write_text(config_file(self.env()))
        path.chmod(0o600)  # it holds the database's password and the API's secret
        return path

    def cli(self, args: list[str]) -> int:
        """`airflow <args>` on this Airflow: its database up, its airflow.cfg written, its whole
        environment; the command's own output and exit code."""
        self.ensure_database()
        self.write_config()
        print(f"airflow {' '.join(args)}   (home {self.home}, metadata in {self.metadata()})", file=sys.stderr)
        binary = Path(sys.executable).parent / "airflow"
        return subprocess.run([str(binary), *args], env=self.env(), cwd=REPO_ROOT).returncode

    def airflow(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        binary = Path(sys.executable).parent / "airflow"
        done = subprocess.run([str(binary), *args], env=self.env(), capture_output=True, text=True)
        if check and done.returncode != 0:
            tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-5:])
            raise RuntimeError(f"airflow {' '.join(args)} failed (exit {done.returncode}):\n{tail}")
        return done

    def pid_file(self, component: str) -> Path:
        return self.home / f"{component}.pid"

    def running(self) -> dict[str, bool]:
        return {c: process.alive(process.read_pid(self.pid_file(c))) for c in COMPONENTS}

    @property
    def restarts_file(self) -> Path:
        return self.home / "restarts.jsonl"

    def restarts(self) -> list[dict]:
        """Every component the watchdog found dead and started again, oldest first."""
        if not self.restarts_file.exists():
            return []
        return [json.loads(line) for line in self.restarts_file.read_text().splitlines() if line.strip()]

    def _spawn(self, component: str, env: dict[str, str]) -> int:
        binary = str(Path(sys.executable).parent / "airflow")
        return process.spawn([binary, component], self.home / f"{component}.log", self.pid_file(component), env=env)

    tasks_in = staticmethod(tasks_in)

    def taken_with(self, component: str) -> tuple[list[dict], list[int]]:
        """What a dead component leaves behind: the task instances its processes were running (the
        LocalExecutor's workers live in the scheduler's process group), and the processes to stop
        before it starts again: what is left of its group (they hold its ports and would go on with
        its work) and every process of those tasks, which would run on beside the tasks' next try.
        Nothing while the component is alive."""
        pid = process.read_pid(self.pid_file(component))
        if pid is None or process.alive(pid):
            return [], []
        members = process.group(pid)
        tasks, processes = self.tasks_in(members)
        return tasks, sorted(set(members) | processes)

    def revive(self) -> list[str]:
        """Start again each component that died, and note it (make airflow-status and the UI's
        restarts page show them), with the running tasks it took with it: Airflow starts those
        again from the beginning, as their next try."""
        dead = [c for c, alive in self.running().items() if not alive]
        for component in dead:
            tasks, stray = self.taken_with(component)
            if stray:  # a SIGKILLed scheduler's workers, its tasks' processes and their Spark jobs
                print(f"{component} had left {len(stray)} process(es) behind: stopped {stray}", flush=True)
                process.terminate(stray)
            pid = self._spawn(component, self.env())
            at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            record: dict = {"component": component, "at": at, "pid": pid}
            if tasks:
                record["tasks"] = tasks
            with open(self.restarts_file, "a") as log:
                log.write(json.dumps(record) + "\n")
            print(f"{at} {component} had died: started again, pid {pid}", flush=True)
            for task in tasks:
                print(f"  it took a running task with it: {describe_task(task)}; Airflow runs it again", flush=True)
        return dead

    def watch(self, every: float = WATCH_EVERY_S) -> None:
        while True:
            time.sleep(every)
            self.revive()

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/api/v2/monitor/health", timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    def prepare(self) -> None:
        """Database, connections and serialized DAGs: idempotent."""
        self.home.mkdir(parents=True, exist_ok=True)
        self.ensure_database()
        self.password()
        self.write_config()
        self.airflow("db", "migrate")
        if self.airflow("connections", "get", "spark_default", check=False).returncode != 0:
            self.airflow(
                "connections", "add", "spark_default", "--conn-type", "spark", "--conn-host",
                os.environ.get("EO_SPARK_MASTER", "local[*]"),
            )  # fmt: skip
        from eo.runtime.submit import build_pyfiles

        build_pyfiles()
        self.airflow("dags", "reserialize")

    def start(self, timeout: float = 180) -> bool:
        if all(self.running().values()) and self.healthy():
            return False
        if process.port_open(self.port) and not self.running()["api-server"]:
            raise RuntimeError(f"port {self.port} is taken by another process")
        self.prepare()
        self.record_start()
        env = self.env()
        for component, alive in self.running().items():
            if not alive:
                self._spawn(component, env)
        process.wait_for(self.healthy, timeout, f"Airflow API server on {self.url}")
        if not self.watching():
            watch = [sys.executable, "-m", "infra.airflow", "watch", "--port", str(self.port), "--home", str(self.home)]
            process.spawn(watch, self.home / f"{WATCHDOG}.log", self.pid_file(WATCHDOG), cwd=REPO_ROOT)
        return True

    def watching(self) -> bool:
        return process.alive(process.read_pid(self.pid_file(WATCHDOG)))

    def leftovers(self) -> list[int]:
        """Processes started for this Airflow (its MARK in their environment) still alive: not the
        stream a task started (outside_airflow), nor anything an operator's shell started with
        AIRFLOW_HOME set."""
        return process.with_env(MARK, str(self.home))

    def stop(self) -> list[str]:
        """Stop the watchdog, the components and every process of theirs: the components' process
        groups, the running tasks' processes (each in a group of its own) and what carries MARK (a
        Spark job a task submitted would go on writing the lake after Airflow is gone). What a task
        started outside Airflow (the stream) is none of these and runs on."""
        process.stop(self.pid_file(WATCHDOG), timeout=10)  # first, or it would start them again
        scheduler = process.read_pid(self.pid_file("scheduler"))
        _, tasks = self.tasks_in(process.group(scheduler)) if process.alive(scheduler) else ([], set())
        stopped = [c for c in COMPONENTS if process.stop(self.pid_file(c), timeout=30)]
        if left := sorted({*self.leftovers(), *(pid for pid in tasks if process.alive(pid))}):
            named = ", ".join(f"{pid} ({process.title(pid)[:60]})" for pid in left)
            print(f"stopping {len(left)} process(es) Airflow left behind: {named}", flush=True)
            process.terminate(left)
        return stopped


def _start(airflow: AirflowService, args: argparse.Namespace) -> None:
    started = airflow.start()
    print(f"Airflow {'started' if started else 'already running'}: {airflow.url}")
    print(f"login: {USER} / {airflow.password()}   (home {airflow.home})")
    print(f'metadata: {airflow.metadata()}; other Airflow commands: make airflow-cli ARGS="dags list"')
    print(f"Data Docs: {airflow.url}/data-docs/")
    print(
        "DAGs are paused when first seen, except verify_agreement (it checks each rebuild as it lands):"
        " unpause the others in the UI, or trigger runs there."
    )


def _stop(airflow: AirflowService, args: argparse.Namespace) -> None:
    stopped = airflow.stop()
    print(f"stopped: {', '.join(stopped)}" if stopped else "Airflow was not running")


def _watch(airflow: AirflowService, args: argparse.Namespace) -> None:
    airflow.watch()


def _cli(airflow: AirflowService, args: argparse.Namespace) -> int:
    if not args.extra:
        print('which Airflow command? e.g. make airflow-cli ARGS="dags list"', file=sys.stderr)
        return 2
    return airflow.cli(args.extra)


def main(argv: list[str] | None = None) -> int:
    from infra import airflow_status  # it reads this module's service

    return service.main(
        "infra.airflow", __doc__, lambda args: AirflowService.default(args.port, args.home),
        start=_start, stop=_stop, status=airflow_status.status, verbs={"watch": _watch, "cli": _cli},
        options=service.port_and_home, passthrough=("cli",), argv=argv,
    )  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
