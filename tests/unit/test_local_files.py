"""Spark's checkpoint files on a local disk (conf/platform.toml, [env.local.spark])."""

from __future__ import annotations

CHECKPOINTS = "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"


def _hadoop(spark, path):
    jvm = spark._jvm
    conf = spark._jsparkSession.sessionState().newHadoopConf()
    return jvm.org.apache.hadoop.fs.Path(str(path)), conf


def test_checkpoints_rename_through_the_file_system(spark, tmp_path):
    """Spark's default manager renames through FileContext, which forks `readlink` per side."""
    path, conf = _hadoop(spark, tmp_path / "checkpoint")
    managers = getattr(spark._jvm.org.apache.spark.sql.execution.streaming.checkpointing, "CheckpointFileManager$")
    manager = getattr(managers, "MODULE$").create(path, conf)
    assert manager.getClass().getName() == CHECKPOINTS

    target = spark._jvm.org.apache.hadoop.fs.Path(str(tmp_path / "checkpoint" / "0"))
    out = manager.createAtomic(target, False)
    out.write(bytearray(b"v1"))
    out.close()
    assert (tmp_path / "checkpoint" / "0").read_bytes() == b"v1"
    try:  # a second writer of the same batch file is refused
        again = manager.createAtomic(target, False)
        again.write(bytearray(b"v2"))
        again.close()
        refused = False
    except Exception:  # noqa: BLE001 (py4j wraps Hadoop's FileAlreadyExistsException)
        refused = True
    assert refused
    assert (tmp_path / "checkpoint" / "0").read_bytes() == b"v1"
