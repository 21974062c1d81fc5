package org.apache.spark.sql.catalyst.plans.logical;

/**
 * A marker Spark 4.1.3 no longer has, which Delta 4.2.0 (delta-spark_4.1, built against Spark
 * 4.1.0) still names: eleven of its commands (ALTER TABLE ... and REORG) implement it, so without
 * it loading io.delta.tables.DeltaTable fails with NoClassDefFoundError on the EMR release's Spark
 * (infra/cloud-versions.json: Spark 4.1.3, Delta 4.2.0), found by `make cloud-smoke`.
 *
 * <p>It told Spark's cache manager to leave a command's plan alone; Spark 4.1.3 has no such check,
 * so a marker with nothing in it is all Delta's classes need to link. On a Spark that still has
 * it, Spark's own class wins (its jars come before the application's); Spark 4.2 with Delta 4.4
 * (the local engine) names it nowhere. It rides in the reader jar because that is the one jar of
 * the application's own every job run has on its classpath, locally and on EMR Serverless.
 */
public interface IgnoreCachedData {}
