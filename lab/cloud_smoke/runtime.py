"""A job run as EMR Serverless runs it, on this machine: the job driver's files fetched from the
bucket into an empty folder, its archives unpacked there, and spark-submit started in that folder
with only the settings and environment variables the job driver passes.

Two things stand in for the release, because its Spark (4.1, on Amazon Linux) cannot run here:
- the release's Spark and the jars matched to it (Delta, the Kafka connector, the log store jar)
  are the local Spark's (pyspark in the job venv, .cache/jars);
- the image's Python (JOB_PYTHON) is the job venv's, built from the same files as the image
  (lab/cloud_smoke/job_venv.py).
Everything of the application's own comes from the bucket: code, entry point, home, the reader jar.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from eo.cloud.artifacts import JOB_PYTHON
from eo.runtime.jars import jar_paths

DRIVER_ENV = "spark.emr-serverless.driverEnv."
# The application's own jars, used as shipped; the release provides every other jar the driver names.
SHIPPED_JARS = ("effectively-once-reader-", "aws-msk-iam-auth-")
FETCHED = ("spark.submit.pyFiles", "spark.archives")


class BadJobDriver(ValueError):
    """The job driver is not something EMR Serverless would accept."""


def parameters(submit: dict) -> dict[str, str]:
    """sparkSubmitParameters as EMR reads them: `--conf key=value` pairs only."""
    words = shlex.split(submit["sparkSubmitParameters"])
    if len(words) % 2:
        raise BadJobDriver(f"not a list of --conf key=value: {submit['sparkSubmitParameters']!r}")
    if any(flag != "--conf" or "=" not in pair for flag, pair in zip(words[::2], words[1::2], strict=True)):
        raise BadJobDriver(f"not a list of --conf key=value: {submit['sparkSubmitParameters']!r}")
    return dict(pair.split("=", 1) for pair in words[1::2])


@dataclass
class LocalRuntime:
    """`venv`: the job venv (the image's stand-in); `s3`: a boto3 client of the bucket's server."""

    venv: Path
    s3: object
    base_env: dict[str, str]  # what the runtime itself provides: AWS credentials and endpoint, JAVA_HOME
    master: str = "local[2]"

    def fetch(self, uri: str, folder: Path) -> Path:
        """An s3:// file into `folder`; a local path (a release jar's stand-in) as it is."""
        if not uri.startswith("s3://"):
            return Path(uri)
        bucket, key = uri.removeprefix("s3://").split("/", 1)
        target = folder / Path(key).name
        self.s3.download_file(bucket, key, str(target))
        return target

    def prepare(self, submit: dict, folder: Path) -> tuple[list[str], dict[str, str]]:
        """The spark-submit command and environment of the job driver, its files fetched into `folder`."""
        conf = parameters(submit)
        env = {k.removeprefix(DRIVER_ENV): v for k, v in conf.items() if k.startswith(DRIVER_ENV)}
        python = str(self.venv / "bin" / "python")
        env = {k: python if v == JOB_PYTHON else v for k, v in env.items()}
        conf = {k: python if v == JOB_PYTHON else v for k, v in conf.items() if not k.startswith(DRIVER_ENV)}
        for uri in conf.pop("spark.archives", "").split(","):
            if uri:  # unpacked into the working folder under its alias, as the runtime does
                source, alias = uri.split("#", 1)
                shutil.unpack_archive(self.fetch(source, folder), folder / alias)
        py_files = [self.fetch(u, folder) for u in conf["spark.submit.pyFiles"].split(",")]
        conf["spark.submit.pyFiles"] = ",".join(str(p) for p in py_files)
        named = conf["spark.jars"].split(",")
        shipped = [str(self.fetch(j, folder)) for j in named if Path(j).name.startswith(SHIPPED_JARS)]
        release = [j for j in jar_paths(object_store=True) if not Path(j).name.startswith(SHIPPED_JARS)]
        conf["spark.jars"] = ",".join([*release, *shipped])
        entry = self.fetch(submit["entryPoint"], folder)
        command = [str(self.venv / "bin" / "spark-submit"), "--master", self.master]
        for key, value in {**conf, "spark.driver.memory": "2g", "spark.driver.host": "127.0.0.1"}.items():
            command += ["--conf", f"{key}={value}"]
        path = f"{self.venv / 'bin'}:/usr/bin:/bin"
        return [*command, str(entry), *submit["entryPointArguments"]], {**self.base_env, **env, "PATH": path}

    def start(self, submit: dict, folder: Path, log: Path) -> subprocess.Popen:
        """The job run, started in `folder` (created empty), its output in `log`."""
        folder.mkdir(parents=True)
        command, env = self.prepare(submit, folder)
        with log.open("w") as out:
            return subprocess.Popen(
                command, cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )

    def run(self, submit: dict, folder: Path, log: Path, timeout: float = 900) -> int:
        return self.start(submit, folder, log).wait(timeout)


def runtime_env() -> dict[str, str]:
    """What every job run has from the runtime itself, not from the job driver."""
    keep = ("JAVA_HOME", "HOME", "LANG")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    return {**env, "SPARK_LOCAL_IP": "127.0.0.1", "TZ": "UTC"}
