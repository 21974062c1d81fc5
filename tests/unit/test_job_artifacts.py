"""What a job run gets (eo/cloud/artifacts.py, eo/cloud/job_image.py) and how make cloud-smoke plays
the runtime (lab/cloud_smoke/runtime.py): the job's code, configuration, outputs and Python come
from the artifacts and the image, never from the repository."""

from __future__ import annotations

import ast
import importlib.metadata
import json
import re
import sys
import zipfile
from pathlib import Path

import pytest

from eo.cloud import artifacts, job_image
from eo.cloud.artifact_store import EMR_JARS_DIR
from eo.cloud.emr_serverless import spark_submit
from eo.runtime.config import REPO_ROOT, _home, load_settings
from eo.runtime.tf_outputs import read_outputs
from lab.cloud_smoke.runtime import S3A_JARS_DIR, BadJobDriver, LocalRuntime, parameters

pytestmark = pytest.mark.unit

JOB_PACKAGES = ("eo", "streaming", "batch", "ops")


def third_party_imports() -> set[str]:
    found = set()
    for package in JOB_PACKAGES:
        for path in (REPO_ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    found |= {alias.name.split(".")[0] for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    found.add(node.module.split(".")[0])
    ours = {*JOB_PACKAGES, "infra", "lab", "producer", "tests"}
    return {m for m in found if m not in sys.stdlib_module_names and m not in ours}


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name.split("[")[0]).lower()


def test_the_image_installs_every_package_the_job_code_imports():
    """A module the jobs import but the image lacks fails only at a job run: caught here."""
    distributions = importlib.metadata.packages_distributions()
    installed = {normalized(r) for r in (*job_image.JOB_REQUIREMENTS, *job_image.PROVIDED)}
    missing = {}
    for module in third_party_imports() - {"delta"}:  # `delta` comes in the delta-spark jar (pyFiles)
        names = {normalized(d) for d in distributions.get(module, [module])}
        if not names & installed:
            missing[module] = sorted(names)
    assert not missing, f"imported by the job packages, not in JOB_REQUIREMENTS: {missing}"
    assert "pyspark" not in {normalized(r) for r in job_image.JOB_REQUIREMENTS}  # the release's own


def test_the_dockerfile_installs_the_requirements_at_the_locks_versions(tmp_path):
    folder = job_image.write_context(tmp_path / "ctx", "emr-spark-8.2.0")
    dockerfile = (folder / "Dockerfile").read_text()
    assert (
        dockerfile.startswith("# Generated")
        and "FROM public.ecr.aws/emr-serverless/spark/emr-spark-8.2.0:latest" in dockerfile
    )
    assert "-r /opt/eo/job-requirements.txt -c /opt/eo/requirements.lock" in dockerfile
    assert f"RUN {artifacts.JOB_PYTHON} -m pip install" in dockerfile and "pip check" in dockerfile
    assert (folder / "requirements.lock").read_text() == job_image.LOCK.read_text()
    lines = (folder / "job-requirements.txt").read_text().splitlines()
    assert [line for line in lines if not line.startswith("#")] == list(job_image.JOB_REQUIREMENTS)
    locked = {normalized(line.split("==")[0]) for line in job_image.LOCK.read_text().splitlines() if "==" in line}
    assert {normalized(r) for r in job_image.JOB_REQUIREMENTS} <= locked


def test_the_built_artifacts_hold_the_code_the_entry_points_and_the_configuration(tmp_path):
    keys = artifacts.build_application(tmp_path)
    assert set(keys) == {str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file()}
    assert keys[-1] == artifacts.APPLICATION_MANIFEST
    application = artifacts.built_application(tmp_path)
    assert application.keys() == keys[:-1]
    with zipfile.ZipFile(tmp_path / application.conf) as conf:
        assert "conf/platform.toml" in conf.namelist()
        assert conf.read("conf/platform.toml") == (REPO_ROOT / "conf" / "platform.toml").read_bytes()
    with zipfile.ZipFile(tmp_path / application.pyfiles) as code:
        names = code.namelist()
    assert {"eo/runtime/config.py", "streaming/run.py", "batch/rebuild.py", "ops/reset.py"} <= set(names)
    assert "eo/core/sources/clicks.schema.json" in names  # the declarations travel with the code
    assert not any(n.startswith(("tests/", "lab/", "dags/", "jobs/")) for n in names)
    assert set(application.entrypoints) == set(artifacts.ENTRY_POINTS)
    for script, key in application.entrypoints.items():
        assert (tmp_path / key).read_bytes() == (REPO_ROOT / script).read_bytes()
        assert key.endswith(f"/{script}")  # EMR runs the file under its own name


def test_each_key_is_named_by_its_content():
    one = artifacts.content_key("pyfiles/eo-jobs.zip", b"code")
    assert one == artifacts.content_key("pyfiles/eo-jobs.zip", b"code")
    assert re.fullmatch(r"pyfiles/eo-jobs-[0-9a-f]{16}\.zip", one)
    assert artifacts.content_key("pyfiles/eo-jobs.zip", b"codf") != one
    entry = artifacts.content_key("entrypoints/jobs/stream.py", b"x")
    assert re.fullmatch(r"entrypoints/[0-9a-f]{16}/jobs/stream\.py", entry)
    assert artifacts.content_key("home/eo-conf.zip", b"x").removeprefix("home/eo-conf-") == entry.split("/")[1] + ".zip"


def test_the_same_sources_build_the_same_keys_and_a_changed_byte_new_ones(tmp_path, monkeypatch):
    first = artifacts.build_application(tmp_path / "one")
    assert artifacts.build_application(tmp_path / "two") == first  # zips without build times
    conf = tmp_path / "conf"
    conf.mkdir()
    for toml in (REPO_ROOT / "conf").glob("*.toml"):
        (conf / toml.name).write_bytes(toml.read_bytes())
    (conf / "platform.toml").write_bytes((conf / "platform.toml").read_bytes() + b"\n")
    monkeypatch.setattr(artifacts, "config_file", lambda: conf / "platform.toml")
    before = artifacts.built_application(tmp_path / "one")
    artifacts.build_application(tmp_path / "one")  # rebuilt in place: the earlier build's files go
    after = artifacts.built_application(tmp_path / "one")
    assert after.conf != before.conf  # only the configuration changed
    assert (after.pyfiles, after.entrypoints) == (before.pyfiles, before.entrypoints)
    assert not (tmp_path / "one" / before.conf).exists()


def test_a_job_run_finds_its_home_and_outputs_in_its_working_folder(tmp_path, monkeypatch):
    """As unpacked by the runtime: EO_HOME and EO_TF_OUTPUTS name folders relative to the working one."""
    outputs = {"region": "eu-west-1", "lake_bucket": "the-lake"}
    archive = artifacts.outputs_archive(outputs, tmp_path / "o.zip")
    with zipfile.ZipFile(archive) as z:
        z.extractall(tmp_path / "run" / artifacts.OUTPUTS_ALIAS)
    (tmp_path / "run" / artifacts.HOME_ALIAS).mkdir()
    monkeypatch.chdir(tmp_path / "run")
    application = artifacts.Application("pyfiles/eo-jobs-0.zip", "home/eo-conf-0.zip", {})
    conf = artifacts.application_conf(load_settings("local"), "b", application)
    assert conf["spark.submit.pyFiles"] == "s3://b/pyfiles/eo-jobs-0.zip"
    assert conf["spark.archives"].startswith(f"s3://b/home/eo-conf-0.zip#{artifacts.HOME_ALIAS},")
    env = {k.split(".")[-1]: v for k, v in conf.items() if k.startswith("spark.emr-serverless.driverEnv.")}
    assert env["EO_HOME"] == artifacts.HOME_ALIAS and env["PYSPARK_PYTHON"] == artifacts.JOB_PYTHON
    monkeypatch.setenv("EO_HOME", env["EO_HOME"])
    monkeypatch.setenv("EO_TF_OUTPUTS", env["EO_TF_OUTPUTS"])
    assert _home() == tmp_path / "run" / artifacts.HOME_ALIAS
    assert read_outputs("aws", _home()) == outputs
    executors = {k.split(".")[-1]: v for k, v in conf.items() if k.startswith("spark.executorEnv.")}
    assert executors == {k: v for k, v in env.items() if k != "PYSPARK_DRIVER_PYTHON"}


class Bucket:
    """download_file from a dict of keys to local files."""

    def __init__(self, files: dict[str, Path]):
        self.files = files
        self.fetched: list[str] = []

    def download_file(self, bucket: str, key: str, target: str) -> None:
        self.fetched.append(key)
        Path(target).write_bytes(self.files[key].read_bytes())


def test_the_runtime_stand_in_gives_the_job_only_what_its_driver_names(tmp_path):
    build = tmp_path / "build"
    keys = artifacts.build_application(build)
    artifacts.outputs_archive({"region": "r"}, build / artifacts.OUTPUTS_KEY)
    files = {k: build / k for k in [*keys, artifacts.OUTPUTS_KEY]}
    application = artifacts.built_application(build)
    files["jars/effectively-once-reader-0.1.0.jar"] = build / application.conf  # any bytes
    conf = artifacts.application_conf(load_settings("local"), "b", application)
    conf["spark.jars"] = "s3://b/jars/effectively-once-reader-0.1.0.jar,s3://b/jars/delta-spark_4.1_2.13-4.2.0.jar"
    submit = spark_submit("b", application.entry_point("jobs/verify.py"), ["--run-name", "x"], conf)["sparkSubmit"]
    bucket = Bucket(files)
    # The release's PySpark's Hadoop, which the runtime's hadoop-aws must match (make jars-aws-emr).
    hadoop = next(S3A_JARS_DIR.glob("hadoop-aws-*.jar")).name.removeprefix("hadoop-aws-")
    bundled = tmp_path / "venv" / "lib" / "python3.11" / "site-packages" / "pyspark" / "jars"
    bundled.mkdir(parents=True)
    (bundled / f"hadoop-client-api-{hadoop}").touch()
    runtime = LocalRuntime(tmp_path / "venv", bucket, {"JAVA_HOME": "/jvm"})
    (tmp_path / "job").mkdir()
    command, env = runtime.prepare(submit, tmp_path / "job")
    python = str(tmp_path / "venv" / "bin" / "python")
    assert env == {
        "JAVA_HOME": "/jvm",
        "EO_ENV": "local",
        "EO_SOURCE": "clicks",  # the source the caller serves
        "EO_HOME": artifacts.HOME_ALIAS,
        "EO_TF_OUTPUTS": f"{artifacts.OUTPUTS_ALIAS}/{artifacts.OUTPUTS_MEMBER}",
        "PYSPARK_PYTHON": python,
        "PYSPARK_DRIVER_PYTHON": python,
        "PATH": f"{tmp_path / 'venv' / 'bin'}:/usr/bin:/bin",
    }
    assert (tmp_path / "job" / artifacts.HOME_ALIAS / "conf" / "platform.toml").is_file()
    assert json.loads((tmp_path / "job" / env["EO_TF_OUTPUTS"]).read_text()) == {"region": "r"}
    assert command[-3:] == [str(tmp_path / "job" / "verify.py"), "--run-name", "x"]
    assert set(bucket.fetched) >= {application.pyfiles, application.conf, application.entry_point("jobs/verify.py")}
    jars = dict(a.split("=", 1) for a in command[4:-3:2])["spark.jars"].split(",")
    assert str(tmp_path / "job" / "effectively-once-reader-0.1.0.jar") in jars  # shipped: fetched
    assert str(EMR_JARS_DIR / "delta-spark_4.1_2.13-4.2.0.jar") in jars  # the release's: the runtime's own
    assert "jars/delta-spark_4.1_2.13-4.2.0.jar" not in bucket.fetched
    assert f"spark.executorEnv.PYSPARK_PYTHON={python}" in command


@pytest.mark.parametrize("bad", ["--conf a=b --jars x.jar", "--conf novalue", "--conf a=b extra"])
def test_a_job_driver_emr_would_refuse_is_refused(bad):
    with pytest.raises(BadJobDriver):
        parameters({"sparkSubmitParameters": bad})


def test_a_submitted_job_leaves_where_its_driver_listens_to_the_launcher():
    """On EMR the executors run on other hosts: a session under spark-submit must not bind its
    driver to loopback (this project's own spark-submit passes loopback at launch instead)."""
    from eo.runtime.spark import LOOPBACK, session_conf
    from eo.runtime.submit import LAUNCH_KEYS

    settings = load_settings("local")
    submitted = session_conf(settings, {"spark.x": "1"}, submitted=True)
    assert not set(LOOPBACK) & set(submitted) and "spark.master" not in submitted and submitted["spark.x"] == "1"
    assert set(LOOPBACK) <= set(LAUNCH_KEYS)  # the local launcher still says loopback
