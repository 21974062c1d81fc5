package io.effectivelyonce.reader;

import java.util.Collections;
import java.util.Iterator;
import org.apache.spark.api.java.function.FlatMapGroupsWithStateFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.GroupState;
import org.apache.spark.sql.streaming.GroupStateTimeout;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.types.StructType;

/**
 * The stream's first-copy state (streaming/plan.py): of all the rows that share a key, only the
 * first copy goes on, once, ever.
 *
 * <p>"First" is the rule the batch rebuild applies to bronze (eo/core/transforms/dedup.py): the
 * earliest micro-batch wins, and within a micro-batch the lowest (topic, partition, offset). The
 * engine's own dropDuplicates keeps whichever copy reaches the state first, which within one
 * micro-batch depends on the order shuffle blocks arrive in: two copies on two partitions could
 * go either way. Here every copy of a new key in the batch is seen at once and the lowest
 * coordinates win, whatever the arrival order.
 *
 * <p>A seed row (a key the lake already holds, after a reset) always wins: it is passed on, to be
 * counted by the next state and then dropped, so no live copy of its key is ever taken.
 */
public final class FirstCopy implements FlatMapGroupsWithStateFunction<String, Row, Boolean, Row> {
    private static final long serialVersionUID = 1L;

    private final Coordinates coordinates;
    private final int seed;

    private FirstCopy(StructType schema, String seedColumn) {
        this.coordinates = new Coordinates(schema);
        this.seed = schema.fieldIndex(seedColumn);
    }

    /** The first copy of each `keyColumn` value, across all micro-batches (RocksDB or HDFS state). */
    public static Dataset<Row> apply(Dataset<Row> rows, String keyColumn, String seedColumn) {
        StructType schema = rows.schema();
        return Grouping.byColumn(rows, keyColumn)
                .flatMapGroupsWithState(
                        new FirstCopy(schema, seedColumn),
                        OutputMode.Append(),
                        Encoders.BOOLEAN(),
                        Encoders.row(schema),
                        GroupStateTimeout.NoTimeout());
    }

    @Override
    public Iterator<Row> call(String key, Iterator<Row> copies, GroupState<Boolean> seen) {
        if (seen.exists()) {
            return Collections.emptyIterator();
        }
        Row first = null;
        Row seedRow = null;
        while (copies.hasNext()) {
            Row copy = copies.next();
            if (isSeed(copy)) {
                seedRow = seedRow == null ? copy : seedRow;
            } else if (first == null || coordinates.earlier(copy, first)) {
                first = copy;
            }
        }
        first = seedRow == null ? first : seedRow;
        seen.update(Boolean.TRUE);
        return first == null ? Collections.emptyIterator() : Collections.singletonList(first).iterator();
    }

    private boolean isSeed(Row row) {
        return !row.isNullAt(seed) && row.getBoolean(seed);
    }
}
