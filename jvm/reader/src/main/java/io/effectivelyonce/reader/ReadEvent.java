package io.effectivelyonce.reader;

import java.time.Instant;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF5;

/**
 * The Spark UDF: (value, kafka_timestamp in microseconds, event_time_floor in microseconds,
 * max_future_skew_minutes, max_record_bytes) -> struct<event_id, event_type, event_time,
 * user_id, session_id, campaign_id, ad_id, price, reason> (eo/core/transforms/parse.py READING).
 * The bounds come as literal columns, so registering the function needs no state.
 */
public final class ReadEvent implements UDF5<byte[], Long, Long, Integer, Integer, Row> {
    private static final long serialVersionUID = 1L;

    @Override
    public Row call(
            byte[] value,
            Long kafkaTimestampMicros,
            Long eventTimeFloorMicros,
            Integer maxFutureSkewMinutes,
            Integer maxRecordBytes) {
        Bounds bounds = Bounds.of(eventTimeFloorMicros, maxFutureSkewMinutes, maxRecordBytes);
        Reading reading = RecordRules.read(value, kafkaTimestampMicros, bounds);
        return RowFactory.create(
                reading.eventId(),
                reading.eventType(),
                instant(reading.eventTimeMicros()),
                reading.userId(),
                reading.sessionId(),
                reading.campaignId(),
                reading.adId(),
                reading.price(),
                reading.reason());
    }

    private static Instant instant(Long micros) {
        if (micros == null) {
            return null;
        }
        return Instant.ofEpochSecond(Math.floorDiv(micros, 1_000_000L), Math.floorMod(micros, 1_000_000L) * 1_000L);
    }
}
