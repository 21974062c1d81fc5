"""A Spark standalone cluster on this machine, from the pyspark distribution: a master and
workers with one core each, on loopback.

    python -m infra.spark_cluster start|stop|status [--workers 2] [--port 7077]
    python -m infra.spark_cluster status [--json] [--check]   # --check: is a worker up
    python -m infra.spark_cluster kill-worker N      # SIGKILL, as a lost machine

Jobs reach it with EO_SPARK_MASTER=spark://127.0.0.1:7077 (or the spark_default connection in
Airflow); nothing else in the code changes.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from eo.runtime.config import REPO_ROOT, machine_java_options
from infra import process, service
from infra.status import Status

SERVICES_DIR = REPO_ROOT / "data" / "services"


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


@dataclass(frozen=True)
class SparkCluster:
    port: int = 7077
    workers: int = 2
    worker_memory: str = "3g"
    home: Path = SERVICES_DIR / "spark-cluster"

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    @property
    def ui_port(self) -> int:
        return self.port + 1000  # the master's web UI (and its JSON status)

    def _class(self, main: str, *args: str) -> list[str]:
        return [str(spark_home() / "bin" / "spark-class"), main, *args]

    def _env(self) -> dict[str, str]:
        """The master's and the workers' environment; their JVMs carry this machine's options
        (EO_JVM_OPTIONS), as every JVM the project starts does."""
        return {
            "SPARK_HOME": str(spark_home()),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_LOG_DIR": str(self.home / "logs"),
            "PYSPARK_PYTHON": sys.executable,
            "SPARK_DAEMON_JAVA_OPTS": machine_java_options(),
        }

    def pid_file(self, name: str) -> Path:
        return self.home / f"{name}.pid"

    def status(self) -> dict:
        """The master's view: its alive workers, their cores and the running applications."""
        try:
            url = f"http://127.0.0.1:{self.ui_port}/json/"
            with urllib.request.urlopen(url, timeout=3) as response:
                state = json.load(response)
        except OSError:
            return {"alive": False, "workers": 0, "cores": 0, "applications": 0}
        workers = [w for w in state.get("workers", []) if w.get("state") == "ALIVE"]
        return {
            "alive": True,
            "workers": len(workers),
            "cores": sum(w["cores"] for w in workers),
            "applications": len(state.get("activeapps", [])),
        }

    def start(self, timeout: float = 60) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        env = self._env()
        if not process.alive(process.read_pid(self.pid_file("master"))):
            master = self._class(
                "org.apache.spark.deploy.master.Master",
                "--host", "127.0.0.1", "--port", str(self.port), "--webui-port", str(self.ui_port),
            )  # fmt: skip
            process.spawn(master, self.home / "master.log", self.pid_file("master"), env=env)
            process.wait_for(lambda: self.status()["alive"], timeout, f"Spark master on {self.master_url}")
        for n in range(1, self.workers + 1):
            self.start_worker(n)
        process.wait_for(lambda: self.status()["workers"] >= self.workers, timeout, f"{self.workers} workers")

    def start_worker(self, n: int) -> None:
        if process.alive(process.read_pid(self.pid_file(f"worker-{n}"))):
            return
        work = self.home / f"worker-{n}"
        work.mkdir(parents=True, exist_ok=True)
        worker = self._class(
            "org.apache.spark.deploy.worker.Worker",
            "--host", "127.0.0.1", "--cores", "1", "--memory", self.worker_memory,
            "--webui-port", str(self.ui_port + n), "--work-dir", str(work), self.master_url,
        )  # fmt: skip
        process.spawn(worker, self.home / f"worker-{n}.log", self.pid_file(f"worker-{n}"), env=self._env())

    def kill_worker(self, n: int) -> int | None:
        """SIGKILL the worker and the executors it launched (its process group)."""
        pid = process.read_pid(self.pid_file(f"worker-{n}"))
        if not process.alive(pid):
            return None
        os.killpg(pid, signal.SIGKILL)
        process.wait_for(lambda: not process.alive(pid), 10, f"worker {n} exit")
        return pid

    def stop(self) -> list[str]:
        stopped = []
        for name in [*(f"worker-{n}" for n in range(1, self.workers + 1)), "master"]:
            pid = process.read_pid(self.pid_file(name))
            if process.alive(pid):
                os.killpg(pid, signal.SIGTERM)  # the worker's executors are in its group
                process.wait_for(lambda pid=pid: not process.alive(pid), 30, f"{name} exit")
                stopped.append(name)
            self.pid_file(name).unlink(missing_ok=True)
        return stopped


def _start(cluster: SparkCluster, args: argparse.Namespace) -> None:
    cluster.start()
    print(
        f"Spark master {cluster.master_url} with {cluster.status()['workers']} workers; UI http://127.0.0.1:{cluster.ui_port}"
    )
    print(f"use it: EO_SPARK_MASTER={cluster.master_url}")


def _stop(cluster: SparkCluster, args: argparse.Namespace) -> None:
    print(f"stopped: {', '.join(cluster.stop()) or 'nothing was running'}")


def _kill_worker(cluster: SparkCluster, args: argparse.Namespace) -> None:
    pid = cluster.kill_worker(args.worker or 1)
    print(f"worker {args.worker or 1} (pid {pid}) killed" if pid else "that worker was not running")


def _status(cluster: SparkCluster, args: argparse.Namespace) -> Status:
    """Up while the master has a worker to run jobs on; all `--workers` of them is `running`."""
    found = cluster.status()
    up = found["alive"] and found["workers"] > 0
    if not found["alive"]:
        state = "stopped"
    elif found["workers"] >= cluster.workers:
        state = "running"
    else:
        state = f"running, {found['workers']} of {cluster.workers} workers"
    report = {"service": "spark-cluster", "state": state, "master": cluster.master_url, **found}
    rows: list[tuple[str, object]] = [("Spark cluster", state), ("master", cluster.master_url)]
    if found["alive"]:
        rows += [(name, found[name]) for name in ("workers", "cores", "applications")]
        rows.append(("UI", f"http://127.0.0.1:{cluster.ui_port}"))
    else:
        rows.append(("to start it", "python -m infra.spark_cluster start"))
    return Status(up, report, rows)


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("worker", nargs="?", type=int, help="worker number, for kill-worker")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--port", type=int, default=7077)


def main(argv: list[str] | None = None) -> int:
    return service.main(
        "infra.spark_cluster", __doc__, lambda args: SparkCluster(args.port, args.workers),
        start=_start, stop=_stop, status=_status, verbs={"kill-worker": _kill_worker}, options=_options, argv=argv,
    )  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
