"""A job run as EMR Serverless runs it, on this machine: the job driver's files fetched from the
bucket into an empty folder, its archives unpacked there, and spark-submit started in that folder
with only the settings and environment variables the job driver passes.

The engine is the release's (infra/cloud-versions.json): pyspark at its Spark version (4.1.3) in the
job venv, and the jars `make jars-emr` resolves for it (infra/maven/emr/pom.xml: Delta 4.2.0 built
for Spark 4.1, the Kafka connector 4.1.3), the ones the upload puts in the artifacts bucket.
What still stands in for the release, because its image (Amazon Linux, Spark 4.1.3-amzn-0) cannot
run here:
- Spark and Delta are the upstream builds of the release's versions, not Amazon's -amzn-0 builds;
- the image's S3 access (EMRFS for s3://, its own hadoop-aws for s3a://) is upstream hadoop-aws
  at the Hadoop of that pyspark (3.4.2) with its AWS SDK (infra/maven/aws-emr, `make jars-aws-emr`),
  talking s3a:// to moto;
- the image's S3 DynamoDB log store jar is not on the classpath (not on Maven Central): the
  local-s3 environment commits Spark's Delta writes with Delta's default S3 log store
  (delta-storage 4.2.0, among the release jars), the aws environment with that jar;
- the image's Python (JOB_PYTHON) is the job venv's, built from the same files as the image
  (lab/cloud_smoke/job_venv.py), on this machine's Linux and Java.
Everything of the application's own comes from the bucket: code, entry point, home, the reader jar
and the MSK IAM auth jar.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from eo.cloud.artifacts import JOB_PYTHON
from eo.runtime.config import REPO_ROOT
from eo.runtime.jars import MissingJarsError

DRIVER_ENV = "spark.emr-serverless.driverEnv."
# The application's own jars, used as shipped; the release provides every other jar the driver names.
SHIPPED_JARS = ("effectively-once-reader-", "aws-msk-iam-auth-")
FETCHED = ("spark.submit.pyFiles", "spark.archives")
# The stand-in for the image's S3 access (`make jars-aws-emr`).
S3A_JARS_DIR = REPO_ROOT / ".cache" / "jars" / "aws-emr"


def _version(jars: list[str], prefix: str) -> str | None:
    found = [Path(j).name.removeprefix(prefix).removesuffix(".jar") for j in jars if Path(j).name.startswith(prefix)]
    return found[0] if len(found) == 1 else None


def release_jars(venv: Path, s3a_dir: Path = S3A_JARS_DIR) -> list[str]:
    """The jars the release's Spark runs the jobs with, but for the application's own (SHIPPED_JARS,
    fetched from the bucket): the EMR set `make jars-emr` resolved (refused unless the pom's) and
    hadoop-aws for the venv's pyspark's Hadoop."""
    from eo.cloud.artifact_store import emr_jar_paths

    emr = [j for j in emr_jar_paths() if not Path(j).name.startswith(SHIPPED_JARS)]
    s3a = sorted(str(p) for p in s3a_dir.glob("*.jar"))
    bundled = sorted((venv / "lib").glob("python*/site-packages/pyspark/jars/hadoop-client-api-*.jar"))
    hadoop = _version([str(p) for p in bundled], "hadoop-client-api-")
    if _version(s3a, "hadoop-aws-") != hadoop:
        raise MissingJarsError(
            f"{s3a_dir} has hadoop-aws {_version(s3a, 'hadoop-aws-')} where the job venv's pyspark has Hadoop "
            f"{hadoop}: set infra/maven/aws-emr/pom.xml's hadoop.version and run `make jars-aws-emr`"
        )
    return [*emr, *s3a]


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

    def release_jars(self) -> list[str]:
        return release_jars(self.venv)

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
        conf["spark.jars"] = ",".join([*self.release_jars(), *shipped])
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
