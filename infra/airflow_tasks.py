"""Airflow's task processes, found by their titles and logs: which task instance a process runs,
in one line, and the tasks a dead scheduler took with it (infra/airflow.py's watchdog and status)."""

from __future__ import annotations

import re
import time

from infra import process

# How Airflow names the processes of a task: the LocalExecutor's worker supervising it ("airflow
# worker -- LocalExecutor: <id>") and the task's own process ("airflow worker -- <id>"), by the task
# instance's id; the supervisor writes the task's log, <logs>/dag_id=../run_id=../task_id=../attempt=N.log.
TASK_TITLE = re.compile(
    r"^airflow worker -- (?:LocalExecutor[^:]*: )?(?P<id>[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12})"
)
TASK_LOG = re.compile(
    r"/dag_id=(?P<dag_id>[^/]+)/run_id=(?P<run_id>[^/]+)/task_id=(?P<task_id>[^/]+)/"
    r"(?:map_index=(?P<map_index>\d+)/)?attempt=(?P<try_number>\d+)\.log$"
)


def task_of(title: str, files: list[str]) -> dict | None:
    """The task instance a process runs, from its title (the task instance's id) and, when it is
    the worker writing the task's log, that log (DAG, run, task and try); None for another process."""
    match = TASK_TITLE.match(title)
    if not match:
        return None
    task: dict = {"id": match["id"]}
    for path in files:
        if logged := TASK_LOG.search(path):
            task.update({k: v for k, v in logged.groupdict().items() if v is not None}, log=path)
            task["try_number"] = int(task["try_number"])
            if "map_index" in task:
                task["map_index"] = int(task["map_index"])
            break
    return task


def describe_task(task: dict) -> str:
    """One task instance in a line: `dag.task[map index] (run ..., try N, ran for ...)`."""
    if "task_id" not in task:
        return f"task instance {task['id']}"
    index = f"[{task['map_index']}]" if "map_index" in task else ""
    ran = f", ran {_duration(task['ran_seconds'])}" if task.get("ran_seconds") is not None else ""
    return f"{task['dag_id']}.{task['task_id']}{index} (run {task['run_id']}, try {task['try_number']}{ran})"


def _duration(seconds: float) -> str:
    minutes = int(seconds // 60)
    return f"{minutes // 60} h {minutes % 60} min" if minutes >= 60 else f"{minutes} min {int(seconds % 60)} s"


def lost_tasks(restarts: list[dict]) -> list[dict]:
    """The tasks each restart took with it, oldest first, each with the restart's component and time."""
    return [{**task, "component": r["component"], "at": r["at"]} for r in restarts for task in r.get("tasks", [])]


def tasks_in(members: list[int]) -> tuple[list[dict], set[int]]:
    """The task instances the LocalExecutor's workers among `members` (a scheduler's process
    group) run, and every process of those tasks: the workers, and each task's own process with
    its process group (Airflow gives it one of its own: its Spark job is there). Found by their
    titles: a retitled process's environment no longer shows Airflow's mark."""
    tasks: dict[str, dict] = {}
    for member in members:
        if task := task_of(process.title(member), process.open_files(member)):
            tasks.setdefault(task["id"], {}).update(task)
    processes, now = set(), time.time()
    for pid, match in process.titled(TASK_TITLE).items():
        if match["id"] not in tasks:
            continue
        processes |= {pid, *process.group(pid)}
        began = process.started(pid)
        if "LocalExecutor" not in match.group(0) and began is not None:  # the task's own process
            task = tasks[match["id"]]
            task["started_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(began))
            task["ran_seconds"] = round(now - began, 1)
    return sorted(tasks.values(), key=lambda t: t.get("started_at", "")), processes
