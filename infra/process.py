"""Starting, watching and stopping background server processes by pid file."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
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


# Run by daemon(): starts the command in a session of its own, prints its pid and exits at once.
_LAUNCHER = """
import subprocess, sys
log, cwd, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
with open(log, "ab") as out:
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=cwd,
                            start_new_session=True)
print(proc.pid)
"""


def daemon(cmd: list[str], log_file: Path, pid_file: Path, environ: dict[str, str], cwd: Path) -> int:
    """Start `cmd` as a daemon, output appended to `log_file`: a session and process group of its
    own, run from `cwd`, with exactly `environ` as its environment (nothing of the caller's added),
    and not a child of the caller: a launcher starts it and exits before this returns, so it is
    adopted by init (or the machine's subreaper) at once. Whatever stops, restarts or reaps the
    caller's process tree, group or environment leaves it alone."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    launched = subprocess.run(
        [sys.executable, "-I", "-c", _LAUNCHER, str(log_file), str(cwd), *cmd],
        env=environ,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )
    if launched.returncode != 0:
        raise RuntimeError(f"could not start {cmd[0]}: {launched.stderr.strip().splitlines()[-1:]}")
    pid = int(launched.stdout.strip())
    pid_file.write_text(str(pid))
    return pid


def started(pid: int | None) -> float | None:
    """When process `pid` started, in epoch seconds (from /proc); None if it is not there."""
    if pid is None:
        return None
    try:
        ticks = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
        boot = next(
            int(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines() if line.startswith("btime ")
        )
    except (OSError, IndexError, ValueError, StopIteration):
        return None
    return boot + ticks / os.sysconf("SC_CLK_TCK")


def title(pid: int) -> str:
    """Its command line as `ps` shows it (a title a process set for itself included); "" if gone."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def open_files(pid: int) -> list[str]:
    """The paths of the files it has open (readable: this user's processes)."""
    paths = []
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return []
    for fd in fds:
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("/"):
            paths.append(target)
    return paths


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


def titled(pattern: re.Pattern[str]) -> dict[int, re.Match[str]]:
    """The live processes whose title (`title`) matches `pattern`, with the match. Found by title,
    not environment: a process that sets its title (setproctitle, as Airflow's do) may overwrite
    what /proc shows of its environment."""
    found = {}
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        pid = int(cmdline.parent.name)
        if (match := pattern.match(title(pid))) and alive(pid):
            found[pid] = match
    return found


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


def kill(pid_file: Path, sig: int = signal.SIGKILL) -> int | None:
    """Send `sig` (a crash, by default) and return the pid it went to."""
    pid = read_pid(pid_file)
    if alive(pid):
        os.kill(pid, sig)
        return pid
    return None
