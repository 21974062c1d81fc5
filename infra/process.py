"""Starting, watching and stopping background server processes by pid file."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path


def read_pid(pid_file: Path) -> int | None:
    try:
        return int(pid_file.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None


def alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie child counts as dead
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
        return state != "Z"
    except (FileNotFoundError, IndexError):
        return True


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def spawn(cmd: list[str], log_file: Path, pid_file: Path, env: dict | None = None, cwd: Path | None = None) -> int:
    """Start `cmd` detached from this process group, output appended to `log_file`."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with open(log_file, "ab") as log:
        proc = subprocess.Popen(
            cmd,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
            cwd=cwd,
            start_new_session=True,
        )
    pid_file.write_text(str(proc.pid))
    return proc.pid


def wait_for(check: Callable[[], bool], timeout: float, what: str, interval: float = 0.3) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if check():
            return time.monotonic() - started
        time.sleep(interval)
    raise TimeoutError(f"{what} not ready after {timeout:.0f} s")


def group(pgid: int) -> list[int]:
    """The live (not zombie) processes of process group `pgid`, from /proc."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(stat.parent.name))
    return members


def with_env(name: str, value: str) -> list[int]:
    """The live processes whose environment sets `name` to `value` (readable ones: this user's)."""
    wanted, found = f"{name}={value}".encode(), []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if wanted in environ.read_bytes().split(b"\0") and alive(int(environ.parent.name)):
                found.append(int(environ.parent.name))
        except OSError:
            continue
    return found


def terminate(pids: list[int], timeout: float = 10.0) -> None:
    """SIGTERM each, then SIGKILL what is left after `timeout`."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10.0)):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        try:
            wait_for(lambda: not any(alive(pid) for pid in pids), wait, f"pids {pids} exit")
            return
        except TimeoutError:
            if sig == signal.SIGKILL:
                raise


def stop(pid_file: Path, timeout: float = 30.0) -> bool:
    """SIGTERM, then SIGKILL after `timeout`; then the same for what it left in its process group
    (spawn gives each server its own): an executor's workers or a log server outlive their parent
    otherwise. Returns whether something was running."""
    pid = read_pid(pid_file)
    if not alive(pid):
        pid_file.unlink(missing_ok=True)
        return False
    os.kill(pid, signal.SIGTERM)
    try:
        wait_for(lambda: not alive(pid), timeout, f"pid {pid} exit")
    except TimeoutError:
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: not alive(pid), 10, f"pid {pid} exit after SIGKILL")
    if left := group(pid):
        terminate(left)
    pid_file.unlink(missing_ok=True)
    return True


def clear_group(pid_file: Path) -> list[int]:
    """What a server that died left in its process group (an executor's workers, a log server),
    stopped before the server starts again: they would hold its ports and go on with its work.
    Returns their pids; nothing while the server itself is alive."""
    pid = read_pid(pid_file)
    if pid is None or alive(pid):
        return []
    if left := group(pid):
        terminate(left)
    return left


def kill(pid_file: Path, sig: int = signal.SIGKILL) -> int | None:
    """Send `sig` (a crash, by default) and return the pid it went to."""
    pid = read_pid(pid_file)
    if alive(pid):
        os.kill(pid, sig)
        return pid
    return None
