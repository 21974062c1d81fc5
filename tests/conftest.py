"""Shared fixtures: one local Spark session for the whole run, tmp lakes, a test Kafka broker."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path

import hypothesis
import pytest

from eo.runtime.config import REPO_ROOT, SHORT_LIVED_JVM_OPTIONS, Settings, load_settings
from tests import file_order, timing

# Airflow reads its configuration when first imported: point it at a scratch home first.
AIRFLOW_TEST_HOME = Path(tempfile.mkdtemp(prefix="eo-airflow-tests-"))
os.environ.update(
    {
        "AIRFLOW_HOME": str(AIRFLOW_TEST_HOME),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{AIRFLOW_TEST_HOME / 'airflow.db'}",
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO_ROOT / "dags"),
        # The platform's plugins, as every Airflow of the project loads them: the DAGs' timetable
        # (plugins/eo_timetables.py) is stored and read back only when a plugin registers it.
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO_ROOT / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW_CONN_SPARK_DEFAULT": '{"conn_type": "spark", "host": "local[2]"}',
    }
)

# The JVMs the tests start beside their own session (spark-submit's drivers, a command's session,
# the Kafka brokers) live a minute or two: C1 alone and the serial collector cost a third less CPU
# there than C2 compiling code it never runs long enough to repay (measured in docs/testing.md).
# The `spark` fixture's session, alive the whole run, keeps the JIT as deployed, where C1 was
# slower. EO_JVM_OPTIONS="" turns it off.
os.environ.setdefault("EO_JVM_OPTIONS", SHORT_LIVED_JVM_OPTIONS)

# Hypothesis: on CI (CI=true, as .ci/run runs) the examples are derived from each test's name, the
# same every run, so a red CI is never a draw that the next run does not make again; on a developer's
# machine they are drawn at random, exploring further each run. Each test keeps its own number of
# examples. HYPOTHESIS_PROFILE=ci makes CI's examples locally (docs/testing.md).
hypothesis.settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
hypothesis.settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "default"))

# py4j logs at INFO when its connections are collected at interpreter exit, after pytest has
# closed the stream Airflow's root handler writes to: a 'Logging error' traceback on every run.
logging.getLogger("py4j").setLevel(logging.WARNING)

# Under pytest-xdist each worker (gw0, gw1, ...) has its own session servers: ports apart by worker.
WORKER = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
TEST_KAFKA_PORT = int(os.environ.get("EO_TEST_KAFKA_PORT", "19092")) + 10 * WORKER


def pytest_configure(config):
    timing.register(config)  # where the suite's time went, printed after the run


def pytest_collection_modifyitems(config, items):
    """The bench's plumbing (~15 min) runs only when asked for by name (`-m bench`, make
    bench-check): lab code, and performance lives in make bench, not in the suite. Under xdist,
    the files longest first (tests/file_order.py)."""
    if "bench" not in (config.option.markexpr or ""):
        bench = [item for item in items if item.get_closest_marker("bench") is not None]
        if bench:
            config.hook.pytest_deselected(items=bench)
            items[:] = [item for item in items if item.get_closest_marker("bench") is None]
    if hasattr(config, "workerinput"):  # an xdist worker: the controller schedules in this order
        order = file_order.longest_first([item.nodeid.split("::", 1)[0] for item in items], file_order.load_estimates())
        items[:] = [items[i] for i in order]


# The shared session and its conf as the `spark` fixture built it (set while the session is up).
_SPARK_BASELINE: dict = {}


@pytest.fixture(scope="session")
def spark():
    """Local, 2 shuffle partitions, UI off, Delta configured (as in Delta's testing/utils.py)."""
    from eo.runtime.spark import BASE_CONF, JAVA, build_session, close_state_stores

    session = build_session(
        "eo-tests",
        load_settings("local"),
        conf={
            "spark.master": "local[2]",
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.ui.enabled": "false",
            "spark.driver.memory": "3g",
            JAVA: BASE_CONF[JAVA],  # not EO_JVM_OPTIONS
        },
    )
    _SPARK_BASELINE["session"], _SPARK_BASELINE["conf"] = session, dict(session.conf.getAll)
    yield session
    _SPARK_BASELINE.clear()
    close_state_stores()  # before the JVM exits, as the jobs do (eo/runtime/spark.py)
    session.stop()


def restore_conf(spark, before: dict[str, str]) -> dict[str, str | None]:
    """Put the session's runtime conf back as it was in `before` (a `dict(spark.conf.getAll)`).

    In-process jobs (streaming.run.run, ops.reset.reset, batch.rebuild ...) call
    eo.runtime.spark.build_session, whose getOrCreate applies BASE_CONF to the shared session (4 shuffle
    partitions over the fixture's 2, for one) for the rest of the run. Keys that changed, appeared
    or disappeared are set back or unset, when modifiable at runtime (static and core keys, such as
    spark.app.name, cannot change once the session is up). A key no conf entry registers, read
    by its prefix (the state store's RocksDB keys), is not "modifiable" to Spark, yet changes at
    runtime: it is set back too. Returns what it restored: key -> the value set back, or None
    for a key unset."""
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    after = dict(spark.conf.getAll)
    restored: dict[str, str | None] = {}
    for key in sorted(before.keys() | after.keys()):
        if before.get(key) == after.get(key):
            continue
        try:
            if key in before:
                spark.conf.set(key, before[key])
            else:
                spark.conf.unset(key)
        except (PySparkException, Py4JError):  # a static SQL key or a core key: fixed once the session is up
            continue
        restored[key] = before.get(key)
    return restored


@pytest.fixture(autouse=True)
def _spark_conf_restored(request):
    """Every test that uses the `spark` session leaves its runtime conf as it found it."""
    if "spark" not in request.fixturenames:
        yield
        return
    spark = request.getfixturevalue("spark")
    before = dict(spark.conf.getAll)
    yield
    restore_conf(spark, before)


@pytest.fixture(scope="module", autouse=True)
def _spark_conf_restored_after_module():
    """And every module, for what its module-scoped fixtures changed (test_flow.py's `flowed` runs
    the streaming job in-process before its tests start): back to the conf the fixture built."""
    yield
    if _SPARK_BASELINE:
        restore_conf(_SPARK_BASELINE["session"], _SPARK_BASELINE["conf"])


def lake_settings(root: Path, **overrides) -> Settings:
    """Settings whose every root is under `root`: tests never touch data/ or reports/."""
    values = {
        "lake_root": str(root / "lake"),
        "checkpoint_root": str(root / "checkpoints"),
        "acks_root": str(root / "acks"),
        "reports_root": str(root / "reports"),
        "topic": f"t-{uuid.uuid4().hex[:10]}",
        **overrides,
    }
    return load_settings("local").with_overrides(**values)


def settings_env(settings: Settings) -> dict[str, str]:
    """The same settings, as EO_* variables for a subprocess."""
    keys = ("lake_root", "checkpoint_root", "acks_root", "reports_root", "topic", "kafka_bootstrap")
    return {f"EO_{k.upper()}": str(getattr(settings, k)) for k in keys}


@pytest.fixture
def lake(tmp_path) -> Settings:
    return lake_settings(tmp_path)


@pytest.fixture(scope="session")
def kafka(tmp_path_factory):
    """A real KRaft broker on its own port, data in a tmp dir; stopped at the end."""
    from infra.kafka import Broker

    broker = Broker(TEST_KAFKA_PORT, tmp_path_factory.mktemp("kafka"))
    broker.start()
    yield broker
    broker.stop()


@pytest.fixture
def pipeline(tmp_path, kafka) -> Settings:
    """Settings for one end-to-end run: tmp lake and a fresh topic on the test broker."""
    from eo.runtime.kafka_admin import ensure_topic

    settings = lake_settings(tmp_path, kafka_bootstrap=kafka.bootstrap)
    ensure_topic(settings)
    return settings


def built_once(tmp_path_factory, name: str, build: Callable[[Path], None]) -> Path:
    """The folder `name`, built by `build(folder)` once per run however many xdist workers ask
    (xdist's recipe: the run's common temp folder and a file lock). The first worker to ask builds
    it while the others wait on the lock, then all read the same folder: copy it before changing
    it. A build that raises leaves nothing marked built, and the next worker to ask tries again
    (and fails the same way, in its own tests)."""
    import fcntl

    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # pytest-N/popen-gwK -> pytest-N, shared by the run's workers
    folder, done = base / name, base / f"{name}.built"
    with open(base / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            build(folder)
            done.touch()
    return folder


TWO_DAY_TOPIC = "t-two-day-lake"  # the same in every copy: the settings of a copy name its rows' topic


def _stream_two_days(spark, root: Path) -> None:
    from producer.generator import ClickstreamGenerator
    from tests.helpers import BASE, prepare_lake, records, stream

    settings = lake_settings(root, topic=TWO_DAY_TOPIC)
    generator = ClickstreamGenerator(seed=5, start=BASE, span_hours=48, total_events=3000, users=60)
    rows = records(m.value for m in generator.messages())
    prepare_lake(spark, settings)
    half = len(rows) // 2
    stream(spark, settings, [rows[:half], rows[half:]])


@pytest.fixture(scope="session")
def two_day_lake(spark, tmp_path_factory) -> Settings:
    """Two days of clickstream (from 2026-11-05) streamed into bronze, silver and gold by the real
    streaming query in two micro-batches: what the Airflow DAGs rebuild and verify. Streamed once
    per run (`built_once`); each worker gets a copy of its own, which its tests may change."""
    shared = built_once(tmp_path_factory, "two-day-lake", lambda root: _stream_two_days(spark, root))
    mine = tmp_path_factory.mktemp("two-day-lake")
    shutil.copytree(shared, mine, dirs_exist_ok=True)
    return lake_settings(mine, topic=TWO_DAY_TOPIC)


@pytest.fixture(scope="session")
def postgres():
    """A real PostgreSQL server (Debian's packages) on its own port, in a scratch folder."""
    from infra.postgres import Postgres

    home = Path(tempfile.mkdtemp(prefix="eo-pg-tests-"))  # under /tmp: the server user can reach it
    server = Postgres(int(os.environ.get("EO_TEST_PG_PORT", "15432")) + WORKER, home)
    server.start()
    yield server
    server.stop()
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def pg_dsn(postgres) -> str:
    """A fresh schema-less database state: every table this project creates is dropped first."""
    import psycopg

    with psycopg.connect(postgres.dsn(), autocommit=True) as conn:
        conn.execute("DROP SCHEMA public CASCADE")
        conn.execute("CREATE SCHEMA public")
    return postgres.dsn()
