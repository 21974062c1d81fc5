"""Where a command's traces go: the terminal gets its progress and one line, Spark's log a file.

A command run at a terminal (`guarded`, eo/runtime/cli.py) names a log file for this process,
`<reports>/logs/<command>-<UTC time>-<pid>.log` (`EO_REPORTS_ROOT` when it is a local folder, as
a test's is, else the repository's `reports/`; `EO_LOG_DIR` names another folder; `EO_JOB_LOG`
names the file, and a child command inherits it), before any Spark driver starts. The driver Spark starts
for it then writes its warnings and errors, stack traces included, there and not on the
terminal (infra/conf/spark-log4j2-file.properties), and a failure's one line names the file when
anything was written to it. A refused start used to end its one line after 200 to 700 lines of
Spark traces.

A driver started by spark-submit (the stream service, Airflow's launcher, EMR) keeps the
launcher's log configuration: its output already goes to that job's own log.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from eo.runtime.config import REPO_ROOT

FILE_LOG_CONFIG = REPO_ROOT / "infra" / "conf" / "spark-log4j2-file.properties"
VARIABLE = "EO_JOB_LOG"


def current() -> Path | None:
    """This process's log file, once a command named one."""
    named = os.environ.get(VARIABLE)
    return Path(named) if named else None


def begin(command: str) -> tuple[Path, str | None]:
    """Name this process's log file for `command` (unless one is named already, as a parent
    command's); returns it and the variable's value before, for `end`."""
    before = os.environ.get(VARIABLE)
    if before:
        return Path(before), before
    folder = Path(os.environ.get("EO_LOG_DIR") or _reports() / "logs")
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = folder / f"{command}-{stamp}-{os.getpid()}.log"
    os.environ[VARIABLE] = str(path)
    return path, None


def _reports() -> Path:
    """The reports' folder on this machine: the settings' own when given as a local folder."""
    reports = os.environ.get("EO_REPORTS_ROOT", "")
    if reports and "://" not in reports:
        return Path(reports) if Path(reports).is_absolute() else REPO_ROOT / reports
    return REPO_ROOT / "reports"


def end(before: str | None) -> None:
    """Put the variable back as `begin` found it (an in-process command, in a test)."""
    if before is None:
        os.environ.pop(VARIABLE, None)
    else:
        os.environ[VARIABLE] = before


def java_options() -> str | None:
    """The driver's log options while a command's log file is named, else None."""
    path = current()
    if path is None:
        return None
    return f"-Dlog4j2.configurationFile=file:{FILE_LOG_CONFIG} -Deo.log.file={path}"


def named(path: Path) -> str:
    """The words a failure's line ends with when the log holds something: where its trace is."""
    try:
        written = path.stat().st_size > 0
    except OSError:
        written = False
    return f" (Spark's log: {path})" if written else ""
