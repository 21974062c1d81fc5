"""A class-data-sharing archive of the Spark driver's classes (the JVM's AppCDS).

A Spark driver loads tens of thousands of classes before its first job; with this archive mapped,
they come ready-parsed from one file. On 2 cores, a cold `batch.verify` of one day
(`python -m eo.runtime.submit jobs/verify.py --interval ...`, runs alternated) started its session
in about half the time with it, and the whole job ended sooner, with this archive and with one
built from a verify run itself (the figures: docs/history/hot-path-journal.md). It changes no
compiled code, so a long job's speed is the same.

`make setup` builds it (`python -m eo.runtime.class_archive`): a small job on every kind of work
the jobs do (Delta reads, writes and merges, SQL, Arrow), run once with the JVM told to archive
the classes it loaded when it exits. The archive is named by what it was built from (the JVM and
the jars), so a new JVM or new jars simply find none until it is built again: every JVM starts
without it then.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

from eo.runtime.config import REPO_ROOT

ARCHIVE_DIR = REPO_ROOT / ".cache" / "jvm"


def _java() -> Path | None:
    home = os.environ.get("JAVA_HOME")
    java = Path(home) / "bin" / "java" if home else None
    found = str(java) if java and java.exists() else shutil.which("java")
    return Path(found).resolve() if found else None


def _spark_jars() -> list[Path]:
    import pyspark

    return sorted((Path(pyspark.__file__).parent / "jars").glob("*.jar"))


def archive_key(java: Path | None, jars: list[Path]) -> str:
    """What the archive depends on: the JVM binary and every jar, by path, size and time."""
    digest = hashlib.sha256()
    for path in [java, *jars] if java else jars:
        stat = path.stat()
        digest.update(f"{path}|{stat.st_size}|{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def archive_path(archive_dir: Path = ARCHIVE_DIR) -> Path | None:
    """Where this machine's archive is, or would be; None without a JVM or the jars."""
    java, jars = _java(), _spark_jars()
    if java is None or not jars:
        return None
    from eo.runtime.jars import MissingJarsError, jar_paths

    try:
        jars += [Path(p) for p in jar_paths(object_store=True)]
    except MissingJarsError:  # before `make jars`: no job can start, and no archive is named
        return None
    return archive_dir / f"spark-driver-{archive_key(java, jars)}.jsa"


def java_options(archive_dir: Path = ARCHIVE_DIR) -> str:
    """The driver JVM's option that maps the archive, when it has been built; else nothing."""
    path = archive_path(archive_dir)
    return f"-XX:SharedArchiveFile={path}" if path is not None and path.is_file() else ""


def _workload(scratch: Path) -> None:
    """Under spark-submit: the kinds of work the jobs do, on a few rows."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    from eo.runtime.config import load_settings
    from eo.runtime.spark import build_session

    spark = build_session("eo-class-archive", load_settings())
    table = str(scratch / "table")
    rows = spark.range(2000).select(
        F.col("id"),
        (F.col("id") % 7).cast("string").alias("key"),
        (F.col("id") * 1.5).cast("decimal(18,2)").alias("amount"),
        F.timestamp_seconds(F.col("id") * 60).alias("at"),
    )
    rows.write.format("delta").partitionBy("key").save(table)
    rows.write.format("delta").mode("append").save(table)
    DeltaTable.forPath(spark, table).alias("t").merge(
        rows.limit(10).alias("s"), "t.id = s.id AND t.key = s.key"
    ).whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    read = spark.read.format("delta").load(table)
    read.groupBy("key", F.window("at", "1 minute")).agg(F.sum("amount"), F.countDistinct("id")).collect()
    read.join(read.select("id", F.lit(1).alias("one")), "id", "full_outer").where("one IS NULL").count()
    read.mapInArrow(lambda batches: batches, read.schema).toArrow()
    spark.stop()


def build(archive_dir: Path = ARCHIVE_DIR) -> Path | None:
    """Build this machine's archive unless it is there; returns its path (None: no JVM)."""
    from eo.runtime.config import load_settings
    from eo.runtime.spark import DRIVER_JAVA_OPTIONS
    from eo.runtime.submit import run_job

    path = archive_path(archive_dir)
    if path is None or path.is_file():
        return path
    archive_dir.mkdir(parents=True, exist_ok=True)
    partial = archive_dir / f".{path.name}.{os.getpid()}.partial"  # beside it: the rename is atomic
    with tempfile.TemporaryDirectory(prefix="eo-class-archive-") as scratch:
        # Classes the archive cannot hold (signed jars, generated ones) are skipped, each with a warning.
        options = f"{DRIVER_JAVA_OPTIONS} -XX:ArchiveClassesAtExit={partial} -Xlog:cds*=error"
        print(f"[class-archive] building {path.name} from a small job (~40 s)", flush=True)
        run_job(
            "jobs/class_archive.py",
            ["--workload", scratch],
            load_settings("local"),
            conf={"spark.driver.extraJavaOptions": options},
        )
    if not partial.is_file():
        raise RuntimeError(f"the JVM wrote no class archive at {partial}")
    for old in archive_dir.glob("spark-driver-*.jsa"):
        old.unlink()
    os.replace(partial, path)  # a JVM maps a whole archive or none
    print(f"[class-archive] {path}", flush=True)
    return path


def cli(argv: list[str] | None = None) -> int:
    """`python -m eo.runtime.class_archive`: build the archive; `jobs/class_archive.py --workload DIR`
    (what `build` spark-submits): the small job whose classes the JVM archives."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--workload"]:
        _workload(Path(argv[1]))
    else:
        build()
    return 0


if __name__ == "__main__":
    sys.exit(cli())
