package io.effectivelyonce.reader;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.api.java.function.FlatMapGroupsWithStateFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.expressions.GenericRowWithSchema;
import org.apache.spark.sql.streaming.GroupState;
import org.apache.spark.sql.streaming.GroupStateTimeout;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.types.StructType;

/**
 * The stream's user-tuple state (streaming/plan.py): every event row goes on, and the one that
 * brings a (campaign, type, minute, user) never seen before is marked, so gold counts that user
 * once for that minute.
 *
 * <p>Rows are grouped by their tuple key. A group whose key the state already holds passes
 * unmarked; otherwise the row with the lowest (topic, partition, offset) is re-kinded from
 * {@code E} to {@code EU} and the key is stored. Only new tuples are written to the state: the
 * event rows themselves cost no write, and there is no separate row per tuple.
 *
 * <p>A row of any other kind (a refused record, keyed by its own coordinates) passes untouched and
 * is never stored. A seed row (after a reset) or a row whose tuple the seed holds ({@code counted})
 * stores its key without marking anything: the lake has counted that user already.
 */
public final class NewTuple implements FlatMapGroupsWithStateFunction<String, Row, Boolean, Row> {
    private static final long serialVersionUID = 1L;
    static final String EVENT = "E";
    static final String NEW_TUPLE = "EU";

    private final StructType schema;
    private final int kind;
    private final int seed;
    private final int counted;
    private final Coordinates coordinates;

    private NewTuple(StructType schema, String seedColumn, String countedColumn) {
        this.schema = schema;
        this.kind = schema.fieldIndex("_kind");
        this.seed = schema.fieldIndex(seedColumn);
        this.counted = schema.fieldIndex(countedColumn);
        this.coordinates = new Coordinates(schema);
    }

    /** Every row of `rows`, the first of each new `keyColumn` value among event rows marked. */
    public static Dataset<Row> apply(Dataset<Row> rows, String keyColumn, String seedColumn, String countedColumn) {
        StructType schema = rows.schema();
        return Grouping.byColumn(rows, keyColumn)
                .flatMapGroupsWithState(
                        new NewTuple(schema, seedColumn, countedColumn),
                        OutputMode.Append(),
                        Encoders.BOOLEAN(),
                        Encoders.row(schema),
                        GroupStateTimeout.NoTimeout());
    }

    @Override
    public Iterator<Row> call(String key, Iterator<Row> rows, GroupState<Boolean> seen) {
        List<Row> group = new ArrayList<>();
        boolean events = false;
        boolean known = seen.exists();
        int first = -1;
        while (rows.hasNext()) {
            Row row = rows.next();
            group.add(row);
            if (!EVENT.equals(row.getString(kind))) {
                continue;
            }
            events = true;
            boolean fromSeed = flag(row, seed);
            known = known || fromSeed || flag(row, counted);
            if (!fromSeed && (first < 0 || coordinates.earlier(row, group.get(first)))) {
                first = group.size() - 1;
            }
        }
        if (events && !seen.exists()) {
            seen.update(Boolean.TRUE);
        }
        if (!known && first >= 0) {
            group.set(first, rekinded(group.get(first)));
        }
        return group.iterator();
    }

    private static boolean flag(Row row, int index) {
        return !row.isNullAt(index) && row.getBoolean(index);
    }

    private Row rekinded(Row row) {
        Object[] values = new Object[row.length()];
        for (int i = 0; i < values.length; i++) {
            values[i] = row.get(i);
        }
        values[kind] = NEW_TUPLE;
        return new GenericRowWithSchema(values, schema);
    }
}
