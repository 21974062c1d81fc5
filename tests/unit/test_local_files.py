"""Spark's checkpoint files on a local disk (conf/platform.toml, [env.local.spark])."""

from __future__ import annotations

import pytest
from py4j.protocol import Py4JJavaError

pytestmark = pytest.mark.unit

CHECKPOINTS = "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"


def test_checkpoints_rename_through_the_file_system(spark, tmp_path):
    """Spark's default manager renames through FileContext, which forks `readlink` per side."""
    jvm = spark._jvm
    conf = spark._jsparkSession.sessionState().newHadoopConf()
    managers = getattr(jvm.org.apache.spark.sql.execution.streaming.checkpointing, "CheckpointFileManager$")
    manager = getattr(managers, "MODULE$").create(jvm.org.apache.hadoop.fs.Path(str(tmp_path)), conf)
    assert manager.getClass().getName() == CHECKPOINTS

    target = jvm.org.apache.hadoop.fs.Path(str(tmp_path / "0"))
    out = manager.createAtomic(target, False)
    out.write(bytearray(b"v1"))
    out.close()
    assert (tmp_path / "0").read_bytes() == b"v1"

    with pytest.raises(Py4JJavaError, match="FileAlreadyExists"):  # a second writer of a batch file
        again = manager.createAtomic(target, False)
        again.write(bytearray(b"v2"))
        again.close()
    assert (tmp_path / "0").read_bytes() == b"v1"
