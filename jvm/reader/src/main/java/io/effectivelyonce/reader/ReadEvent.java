package io.effectivelyonce.reader;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF5;

/**
 * The Spark UDF of one source: (value, kafka_timestamp in microseconds, event_time_floor in
 * microseconds, max_future_skew_minutes, max_record_bytes) -> struct of the declared fields in
 * order, reason and unknown_fields ({@link #readingDdl}; eo/core/sources/__init__.py `reading_ddl`
 * says the same). Made with the declaration's text (eo/core/transforms/parse.py `register_reader`),
 * which travels with the function to the executors and is compiled once per JVM there. The bounds
 * come as literal columns.
 */
public final class ReadEvent implements UDF5<byte[], Long, Long, Integer, Integer, Row> {
    private static final long serialVersionUID = 2L;

    private final String declaration;
    private transient volatile SourceSchema schema;

    /** A reading of the source `declaration` (its JSON Schema's text) declares; refused at once if unreadable. */
    public ReadEvent(String declaration) {
        this.declaration = declaration;
        this.schema = SourceSchema.parse(declaration);
    }

    /** The Spark type the UDF of `declaration` returns. */
    public static String readingDdl(String declaration) {
        return SourceSchema.parse(declaration).readingDdl();
    }

    @Override
    public Row call(
            byte[] value,
            Long kafkaTimestampMicros,
            Long eventTimeFloorMicros,
            Integer maxFutureSkewMinutes,
            Integer maxRecordBytes) {
        Bounds bounds = Bounds.of(eventTimeFloorMicros, maxFutureSkewMinutes, maxRecordBytes);
        return RowFactory.create(RecordRules.read(value, kafkaTimestampMicros, bounds, compiled()));
    }

    private SourceSchema compiled() {
        SourceSchema found = schema;
        if (found == null) { // deserialized on an executor: the transient field is empty
            found = SourceSchema.parse(declaration);
            schema = found;
        }
        return found;
    }
}
