"""A single-node Kafka broker in KRaft mode, run from its Maven Central jars.

    python -m infra.kafka start|stop|status|kill [--port 9092] [--home DIR]
    python -m infra.kafka status [--json] [--check]

The port defaults to the one in EO_KAFKA_BOOTSTRAP / conf/platform.toml; the controller listens
on port+1. State (data, log, pid) lives under data/services/kafka-<port>/, an ignored folder.
`start` returns once the broker answers metadata requests; `kill` is a SIGKILL, for fault tests.
"""

from __future__ import annotations

import argparse
import base64
import os
import signal
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from string import Template

from eo.runtime.config import REPO_ROOT, load_settings, machine_java_options
from infra import process, service
from infra.status import Status, server_status

JARS_DIR = REPO_ROOT / ".cache" / "jars" / "kafka"
CONF_DIR = Path(__file__).resolve().parent / "conf"
SERVICES_DIR = REPO_ROOT / "data" / "services"


def _cluster_id() -> str:
    """A random KRaft cluster id. Like Kafka's own Uuid.randomUuid, never one starting with '-':
    StorageTool's argument parser would read it as an option (CI failed on one, 1 start in 64)."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


@dataclass(frozen=True)
class Broker:
    port: int
    home: Path

    @classmethod
    def default(cls, port: int | None = None, home: Path | None = None) -> Broker:
        if port is None:
            port = int(load_settings().kafka_bootstrap.rsplit(":", 1)[1])
        return cls(port, home or SERVICES_DIR / f"kafka-{port}")

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid_file(self) -> Path:
        return self.home / "kafka.pid"

    @property
    def log_file(self) -> Path:
        return self.home / "stdout.log"

    @property
    def data_dir(self) -> Path:
        return self.home / "data"

    @property
    def config_file(self) -> Path:
        return self.home / "server.properties"

    def running(self) -> bool:
        return process.alive(process.read_pid(self.pid_file))

    def answers(self) -> bool:
        if not process.port_open(self.port):
            return False
        from confluent_kafka.admin import AdminClient

        from eo.runtime.kafka_admin import CLIENT_LOG

        try:
            AdminClient({"bootstrap.servers": self.bootstrap, "logger": CLIENT_LOG}).list_topics(timeout=2)
            return True
        except Exception:  # noqa: BLE001 - not up yet, whatever the client says
            return False

    def _java(self, main_class: str, *args: str, extra: list[str] | None = None) -> list[str]:
        java = Path(os.environ["JAVA_HOME"], "bin", "java") if "JAVA_HOME" in os.environ else "java"
        return [
            str(java),
            *(extra or []),
            *machine_java_options().split(),
            f"-Dlog4j2.configurationFile={CONF_DIR / 'kafka-log4j2.properties'}",
            f"-Dkafka.logs.dir={self.home}",
            "-cp",
            f"{JARS_DIR}/*",
            main_class,
            *args,
        ]

    def _configure(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        template = Template((CONF_DIR / "kafka-server.properties").read_text())
        self.config_file.write_text(
            template.substitute(port=self.port, controller_port=self.port + 1, data_dir=self.data_dir)
        )
        if not (self.data_dir / "meta.properties").exists():
            cluster_id = _cluster_id()
            subprocess.run(
                self._java("kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(self.config_file)),
                check=True,
                capture_output=True,
            )

    def start(self, timeout: float = 90.0) -> bool:
        """Start (or find running) and wait until it answers. Returns whether it was started."""
        if not any(JARS_DIR.glob("kafka_2.13-*.jar")):
            raise FileNotFoundError(f"Kafka jars missing in {JARS_DIR}; run `make jars` first")
        if self.running():
            process.wait_for(self.answers, timeout, f"Kafka on {self.bootstrap}")
            return False
        if process.port_open(self.port):
            raise RuntimeError(f"port {self.port} is taken by another process")
        self._configure()
        heap = os.environ.get("EO_KAFKA_HEAP", "512m")
        cmd = self._java("kafka.Kafka", str(self.config_file), extra=[f"-Xmx{heap}", f"-Xms{heap}"])
        process.spawn(cmd, self.log_file, self.pid_file)
        try:
            process.wait_for(self.answers, timeout, f"Kafka on {self.bootstrap}")
        except TimeoutError:
            process.stop(self.pid_file, timeout=5)
            raise
        return True

    def stop(self) -> bool:
        return process.stop(self.pid_file)

    def kill(self) -> int | None:
        """SIGKILL, as a crash would; data stays, so start() recovers the same log."""
        pid = process.kill(self.pid_file, signal.SIGKILL)
        if pid:
            process.wait_for(lambda: not process.alive(pid), 10, "killed broker exit")
        return pid


def _start(broker: Broker, args: argparse.Namespace) -> None:
    started = broker.start()
    print(f"Kafka {'started' if started else 'already running'} on {broker.bootstrap} (home {broker.home})")


def _kill(broker: Broker, args: argparse.Namespace) -> None:
    pid = broker.kill()
    print(f"Kafka pid {pid} killed" if pid else "Kafka was not running")


def _status(broker: Broker, args: argparse.Namespace) -> Status:
    where = {"bootstrap": broker.bootstrap, "home": broker.home}
    return server_status("kafka", "Kafka", broker.running(), broker.answers, where, "make kafka-start")


def main(argv: list[str] | None = None) -> int:
    return service.main(
        "infra.kafka", __doc__, lambda args: Broker.default(args.port, args.home),
        start=_start, stop=service.stop_verb("Kafka"), status=_status, verbs={"kill": _kill},
        options=service.port_and_home, argv=argv,
    )  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
