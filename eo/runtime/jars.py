"""The jars a Spark session needs, resolved by Maven into .cache/jars (never from Ivy): Delta and the
Kafka connector (infra/maven/spark), the strict reading's UDF (jvm/reader), and for object storage
hadoop-aws with the AWS SDK modules it needs (infra/maven/aws)."""

from __future__ import annotations

from pathlib import Path

from eo.runtime.config import REPO_ROOT

SPARK_JARS_DIR = REPO_ROOT / ".cache" / "jars" / "spark"
AWS_JARS_DIR = REPO_ROOT / ".cache" / "jars" / "aws"
READER_JARS_DIR = REPO_ROOT / ".cache" / "jars" / "reader"
READER_JAR_GLOB = "effectively-once-reader-*.jar"


class MissingJarsError(RuntimeError):
    """The Maven-resolved jars are not there yet."""


def jar_paths(
    object_store: bool = False,
    jars_dir: Path = SPARK_JARS_DIR,
    aws_dir: Path = AWS_JARS_DIR,
    reader_dir: Path = READER_JARS_DIR,
) -> list[str]:
    """Delta + Kafka connector jars and the reader jar (eo/core/transforms/parse.py reads records with it);
    with `object_store`, also hadoop-aws and the AWS SDK modules it needs."""
    jars = sorted(str(p) for p in jars_dir.glob("*.jar"))
    if not any("delta-spark" in j for j in jars) or not any("spark-sql-kafka" in j for j in jars):
        raise MissingJarsError(f"Delta and Kafka connector jars not found in {jars_dir}; run `make jars` first")
    reader = sorted(str(p) for p in reader_dir.glob(READER_JAR_GLOB))
    if len(reader) != 1:
        raise MissingJarsError(
            f"expected one reader jar ({READER_JAR_GLOB}) in {reader_dir}, found {len(reader)}; run `make jars` first"
        )
    jars += reader
    if object_store:
        aws = sorted(str(p) for p in aws_dir.glob("*.jar"))
        if not any("hadoop-aws" in j for j in aws):
            raise MissingJarsError(f"hadoop-aws jars not found in {aws_dir}; run `make jars` first")
        jars += aws
    return jars
