"""The streaming job as a long-running local service (what the supervisor DAG restarts).

    python -m infra.streaming start|stop|status|kill [-- extra streaming args]

It is `spark-submit streaming/run.py run`, detached, with its pid and log under
data/services/streaming-<topic>/. A restart resumes from the queries' checkpoints.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path

from infra import process
from jobs.config import REPO_ROOT, Settings, load_settings
from jobs.submit import submit_command, submit_env

SERVICES_DIR = REPO_ROOT / "data" / "services"


def home(settings: Settings) -> Path:
    return SERVICES_DIR / f"streaming-{settings.topic}"


def pid_file(settings: Settings) -> Path:
    return home(settings) / "streaming.pid"


def running(settings: Settings) -> bool:
    return process.alive(process.read_pid(pid_file(settings)))


def start(settings: Settings, args: list[str] | None = None) -> int | None:
    """Start the continuous streaming job unless it runs already; returns the new pid."""
    if running(settings):
        return None
    home(settings).mkdir(parents=True, exist_ok=True)
    cmd = submit_command("streaming/run.py", ["run", *(args or [])], settings)
    return process.spawn(cmd, home(settings) / "streaming.log", pid_file(settings), env=submit_env())


def stop(settings: Settings) -> bool:
    """SIGTERM to the whole process group (driver JVM and Python), then wait."""
    pid = process.read_pid(pid_file(settings))
    if not process.alive(pid):
        return False
    os.killpg(pid, signal.SIGTERM)
    process.wait_for(lambda: not process.alive(pid), 60, "streaming job exit")
    pid_file(settings).unlink(missing_ok=True)
    return True


def kill(settings: Settings) -> int | None:
    """SIGKILL the whole driver, as a crash would."""
    pid = process.read_pid(pid_file(settings))
    if not process.alive(pid):
        return None
    os.killpg(pid, signal.SIGKILL)
    process.wait_for(lambda: not process.alive(pid), 10, "killed streaming job exit")
    return pid


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.streaming", description=__doc__.split("\n")[0])
    parser.add_argument("action", choices=["start", "stop", "status", "kill"])
    parser.add_argument("extra", nargs=argparse.REMAINDER, help="arguments for `streaming run`")
    args = parser.parse_args(argv)
    settings = load_settings()
    if args.action == "start":
        pid = start(settings, [a for a in args.extra if a != "--"])
        print(f"streaming job started, pid {pid}" if pid else "streaming job already running")
        print(f"log: {home(settings) / 'streaming.log'}")
    elif args.action == "stop":
        print("streaming job stopped" if stop(settings) else "streaming job was not running")
    elif args.action == "kill":
        pid = kill(settings)
        print(f"streaming job pid {pid} killed" if pid else "streaming job was not running")
    else:
        from jobs.monitoring import health

        print(json.dumps({"running": running(settings), "queries": health(settings)}, indent=2))
        return 0 if running(settings) else 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
