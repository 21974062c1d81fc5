"""A PostgreSQL server from Debian's packages, on loopback, with its data in an ignored folder.

    python -m infra.postgres start|stop|status|dsn [--port 5432] [--home DIR]
    python -m infra.postgres status [--json] [--check]

The cluster is created on first start (database and user `eo`, password generated and kept in
<home>/password, never in the repo). As root, the server runs as the `postgres` system user,
since PostgreSQL refuses to run as root. `dsn` prints the connection string for EO_PG_DSN.
"""

from __future__ import annotations

import argparse
import os
import pwd
import secrets
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from eo.runtime.config import REPO_ROOT
from infra import process, service
from infra.status import Status, server_status

SERVICES_DIR = REPO_ROOT / "data" / "services"
DATABASE = USER = "eo"


def pg_bin(tool: str) -> str:
    """The newest installed server's tool (Debian keeps them out of PATH)."""
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name))
    for folder in reversed(versions):
        if (folder / tool).exists():
            return str(folder / tool)
    found = shutil.which(tool)
    if not found:
        raise FileNotFoundError(f"{tool} not found: install Debian's postgresql package (make setup does)")
    return found


def _as_server_user(cmd: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return cmd
    return ["runuser", "-u", "postgres", "--", *cmd]


@dataclass(frozen=True)
class Postgres:
    port: int
    home: Path

    @classmethod
    def default(cls, port: int | None = None, home: Path | None = None) -> Postgres:
        port = port or int(os.environ.get("EO_PG_PORT", "5432"))
        return cls(port, home or SERVICES_DIR / f"postgres-{port}")

    @property
    def data_dir(self) -> Path:
        return self.home / "data"

    @property
    def socket_dir(self) -> Path:
        return self.home / "run"

    @property
    def password_file(self) -> Path:
        return self.home / "password"

    def password(self) -> str:
        return self.password_file.read_text().strip()

    def dsn(self) -> str:
        return f"postgresql://{USER}:{self.password()}@127.0.0.1:{self.port}/{DATABASE}"

    def _run(self, cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
        return subprocess.run(_as_server_user(cmd), check=True, capture_output=True, text=True, **kwargs)

    def _own(self) -> None:
        """The server user must own its folders (and reach them)."""
        for path in (self.home, self.data_dir, self.socket_dir):
            path.mkdir(parents=True, exist_ok=True)
        self.home.chmod(0o755)
        if os.geteuid() == 0:
            entry = pwd.getpwnam("postgres")
            for path in (self.home, self.data_dir, self.socket_dir):
                os.chown(path, entry.pw_uid, entry.pw_gid)

    def _init(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        if not self.password_file.exists():
            self.password_file.write_text(secrets.token_urlsafe(16))
            self.password_file.chmod(0o600)
        self._own()
        if (self.data_dir / "PG_VERSION").exists():
            return
        pwfile = self.home / "initdb.pw"
        pwfile.write_text(self.password())
        if os.geteuid() == 0:
            os.chown(pwfile, pwd.getpwnam("postgres").pw_uid, -1)
        try:
            self._run(
                [pg_bin("initdb"), "-D", str(self.data_dir), "-U", USER, "--pwfile", str(pwfile),
                 "--auth", "scram-sha-256", "-E", "UTF8", "--no-locale"]
            )  # fmt: skip
        finally:
            pwfile.unlink(missing_ok=True)
        with open(self.data_dir / "postgresql.conf", "a") as conf:
            conf.write(
                "\n# effectively-once: loopback only, small footprint\n"
                f"listen_addresses = '127.0.0.1'\nport = {self.port}\n"
                f"unix_socket_directories = '{self.socket_dir}'\n"
                "max_connections = 50\nshared_buffers = 128MB\nfsync = on\n"
            )

    def running(self) -> bool:
        try:
            pid_line = (self.data_dir / "postmaster.pid").read_text().split("\n")[0]
        except (FileNotFoundError, PermissionError):
            return False
        return pid_line.isdigit() and process.alive(int(pid_line))

    def answers(self, database: str = DATABASE) -> bool:
        import psycopg

        try:
            with psycopg.connect(self.dsn().rsplit("/", 1)[0] + f"/{database}", connect_timeout=2) as conn:
                conn.execute("SELECT 1")
            return True
        except psycopg.Error:
            return False

    def create_database(self, name: str = DATABASE) -> None:
        """Create database `name` unless it exists (the server must be up)."""
        import psycopg

        admin = self.dsn().rsplit("/", 1)[0] + "/postgres"
        with psycopg.connect(admin, autocommit=True) as conn:
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
                conn.execute(f"CREATE DATABASE {name}")

    def start(self, timeout: float = 60) -> bool:
        if self.running() and self.answers():
            return False
        if process.port_open(self.port):
            raise RuntimeError(f"port {self.port} is taken by another process")
        self._init()
        self._run([pg_bin("pg_ctl"), "-D", str(self.data_dir), "-l", str(self.home / "server.log"), "-w", "start"])
        process.wait_for(lambda: self.answers("postgres"), timeout, f"PostgreSQL on 127.0.0.1:{self.port}")
        self.create_database()
        return True

    def stop(self) -> bool:
        if not self.running():
            return False
        self._run([pg_bin("pg_ctl"), "-D", str(self.data_dir), "-m", "fast", "-w", "stop"])
        return True


def _start(server: Postgres, args: argparse.Namespace) -> None:
    started = server.start()
    print(f"PostgreSQL {'started' if started else 'already running'} on 127.0.0.1:{server.port}")
    print(f"export EO_PG_DSN='{server.dsn()}'")


def _dsn(server: Postgres, args: argparse.Namespace) -> None:
    print(server.dsn())


def _status(server: Postgres, args: argparse.Namespace) -> Status:
    where, to_start = {"address": f"127.0.0.1:{server.port}", "home": server.home}, "python -m infra.postgres start"
    return server_status("postgres", "PostgreSQL", server.running(), server.answers, where, to_start)


def main(argv: list[str] | None = None) -> int:
    return service.main(
        "infra.postgres", __doc__, lambda args: Postgres.default(args.port, args.home),
        start=_start, stop=service.stop_verb("PostgreSQL"), status=_status, verbs={"dsn": _dsn},
        options=service.port_and_home, argv=argv,
    )  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
