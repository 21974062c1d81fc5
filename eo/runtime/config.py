"""The one environment switch.

`EO_ENV` picks a section of `conf/platform.toml`; `EO_<KEY>` variables override single keys
(ports, roots), so tests and scripts can relocate everything without touching code.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlsplit

from eo.core.sources import CLICKS, SELECTED


def _home() -> Path:
    """The checkout: EO_HOME, else the folder above this package (when it is not in a zip). A job run
    names its unpacked home archive relative to its working folder (eo/cloud/artifacts.py)."""
    if os.environ.get("EO_HOME"):
        return Path(os.environ["EO_HOME"]).resolve()
    here = Path(__file__).resolve().parents[2]
    return here if (here / "conf").is_dir() else Path.cwd()


REPO_ROOT = _home()
NAMESPACES = ("main", "rebuild")
# The streaming query of the source this process serves (EO_SOURCE, eo/core/sources): its
# checkpoint, its lease and its commits' app id are named after it. The clickstream's keeps the
# name it had before sources were declared, so its checkpoints and leases carry on; every other
# source's query is named after the source.
STREAM_QUERY = "events" if SELECTED is CLICKS else SELECTED.name


def source_prefix(source: str) -> str:
    """The folder of a source's data under the lake and reports roots: none for the clickstream,
    whose data stays where it was before sources were declared; `/<source>` for every other, its
    tables (gold and reference included), the lake's own records (its origin, its rebuilt
    intervals) and its reports (verdicts, catch-ups, poison) there (`Settings.source_lake`,
    `source_reports`). Terraform names the same folders (terraform/platform/main.tf)."""
    return "" if source == CLICKS.name else f"/{source}"


SOURCE_PREFIX = source_prefix(SELECTED.name)


class ConfigError(ValueError):
    """The configuration names an unknown environment, table or namespace."""


@dataclass(frozen=True)
class Settings:
    env: str
    lake_root: str
    checkpoint_root: str
    acks_root: str
    reports_root: str
    kafka_bootstrap: str
    topic: str
    topic_partitions: int
    spark_master: str
    tables: dict[str, str] = field(default_factory=dict)
    maintenance: dict[str, int] = field(default_factory=dict)
    domains: dict[str, object] = field(default_factory=dict)
    spark_conf: dict[str, str] = field(default_factory=dict)
    # Spark Kafka source/sink options beyond the address (the aws environment's IAM authentication);
    # eo.runtime.kafka_admin.spark_kafka_options adds the address, client_config derives the Python clients' own.
    kafka_options: dict[str, str] = field(default_factory=dict)
    job_runner: str = "spark-submit"  # or "emr-serverless": how Airflow runs the job modules
    # The epoch lease (eo/runtime/fencing.py): "file" next to the checkpoints, or "dynamodb" in
    # `lease_table` (instances on different machines); PostgreSQL wins when its sinks are on.
    lease: str = "file"
    lease_table: str = ""
    aws_region: str = ""
    aws_endpoint: str = ""  # a local AWS-compatible server (local-s3); empty: AWS itself
    # Where a browser opens the Data Docs (Airflow serves the local copy); empty: their storage URI.
    data_docs_url: str = ""

    def table_path(self, name: str, namespace: str = "main") -> str:
        """A table's path: from [tables], or a declared gold table's own (gold/<name>)."""
        from eo.core.gold import DECLARED

        paths = {**{t.name: t.path for t in DECLARED.values()}, **self.tables}
        if name not in paths:
            raise ConfigError(f"unknown table {name!r}; known: {sorted(paths)}")
        if namespace not in NAMESPACES:
            raise ConfigError(f"unknown namespace {namespace!r}; known: {NAMESPACES}")
        prefix = "" if namespace == "main" else "_rebuild/"
        return f"{self.source_lake}/{prefix}{paths[name]}"

    @property
    def source_lake(self) -> str:
        """The served source's folder of the lake (no trailing /): the lake root for the clickstream."""
        return f"{self.lake_root.rstrip('/')}{SOURCE_PREFIX}"

    @property
    def source_reports(self) -> str:
        """The served source's folder of the reports (no trailing /)."""
        return f"{self.reports_root.rstrip('/')}{SOURCE_PREFIX}"

    def checkpoint_path(self, query: str) -> str:
        return f"{self.checkpoint_root.rstrip('/')}/{query}"

    def with_overrides(self, **values: object) -> Settings:
        return replace(self, **values)


def _absolute(value: str) -> str:
    """Relative local paths are relative to the repo, whatever the working directory."""
    if urlsplit(value).scheme or value.startswith("/"):
        return value
    return str(REPO_ROOT / value)


# The settings that pick an implementation (one switch per role, decided here once).
CHOICES = {"job_runner": ("spark-submit", "emr-serverless"), "lease": ("file", "dynamodb")}

TF_REF = re.compile(r"\$\{tf:([a-z_]+)\}")


def _resolve_outputs(env: str, values: dict) -> dict:
    """Replace ${tf:name} with Terraform's output `name` (read only if the env uses any)."""
    if not any(isinstance(v, str) and TF_REF.search(v) for v in values.values()):
        return values
    from eo.runtime.tf_outputs import read_outputs

    outputs = read_outputs(env, REPO_ROOT)

    def value(match: re.Match) -> str:
        if match.group(1) not in outputs:
            raise ConfigError(f"Terraform output {match.group(1)!r} missing for environment {env!r}")
        return str(outputs[match.group(1)])

    return {k: TF_REF.sub(value, v) if isinstance(v, str) else v for k, v in values.items()}


def config_file() -> Path:
    return Path(os.environ.get("EO_CONFIG", REPO_ROOT / "conf" / "platform.toml"))


def _section(env: str | None, path: Path | None) -> tuple[str, dict, dict]:
    raw = tomllib.loads((path or config_file()).read_text())
    env = env or os.environ.get("EO_ENV", "local")
    environments = raw.get("env", {})
    if env not in environments:
        raise ConfigError(f"unknown environment {env!r}; known: {sorted(environments)}")
    return env, raw, dict(environments[env])


def local_services(env: str | None = None, path: Path | None = None) -> list[str]:
    """The servers this machine must run for the environment (`local_services`), known before its
    settings can be loaded: local-s3's buckets live in a local server that writes its outputs."""
    return list(_section(env, path)[2].get("local_services", []))


KAFKA_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")


def load_settings(env: str | None = None, path: Path | None = None) -> Settings:
    env, raw, values = _section(env, path)
    values.pop("local_services", None)
    spark_conf = values.pop("spark", {})
    kafka_options = values.pop("kafka", {})
    # The topic the served source declares (eo/core/sources/<source>.schema.json x-topic), unless
    # this environment or EO_TOPIC names another (the demo's own topic, a test's). An environment's
    # `topic` is the clickstream's: another source's topic is its declaration's, or EO_TOPIC.
    if SELECTED is not CLICKS:
        values["topic"] = SELECTED.topic
    values.setdefault("topic", SELECTED.topic)
    for key in list(values):
        override = os.environ.get(f"EO_{key.upper()}")
        if override is not None:
            values[key] = override
    values = _resolve_outputs(env, values)
    spark_conf = _resolve_outputs(env, spark_conf)
    kafka_options = {k: str(v) for k, v in _resolve_outputs(env, kafka_options).items()}
    for key in ("lake_root", "checkpoint_root", "acks_root", "reports_root"):
        values[key] = _absolute(str(values[key]))
    values["topic_partitions"] = int(values["topic_partitions"])
    # One topic: of copies of an event in one micro-batch, the stream keeps the lowest (partition,
    # offset), which is the rebuild's (topic, partition, offset) only within one topic.
    if not KAFKA_TOPIC.fullmatch(str(values["topic"])):
        raise ConfigError(
            f"topic = {values['topic']!r} in environment {env!r}: one Kafka topic name ({KAFKA_TOPIC.pattern})"
        )
    for key, allowed in CHOICES.items():
        if key in values and values[key] not in allowed:
            raise ConfigError(f"{key} = {values[key]!r} in environment {env!r}; one of {allowed}")
    return Settings(
        env=env,
        tables=dict(raw["tables"]),
        maintenance=dict(raw.get("maintenance", {})),
        domains=dict(raw.get("domains", {})),
        spark_conf=spark_conf,
        kafka_options=kafka_options,
        **values,
    )


# What the tests set EO_JVM_OPTIONS to (tests/conftest.py) and lab/jvm_options.py measures: C1 only
# and the serial collector, for JVMs that live a minute or two.
SHORT_LIVED_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def machine_java_options() -> str:
    """EO_JVM_OPTIONS: options this machine adds to every JVM the project starts (spark-submit's
    drivers, a session's own JVM, a cluster's executors, the standalone master and workers, the
    Kafka broker), after the project's own. The tests set there
    the JIT and GC of JVMs that live a minute or two (tests/conftest.py, docs/testing.md); their
    shared session, alive the whole run, passes its own. Unset, the JVMs run as deployed."""
    return os.environ.get("EO_JVM_OPTIONS", "").strip()
