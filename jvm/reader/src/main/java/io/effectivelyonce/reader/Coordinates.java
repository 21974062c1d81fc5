package io.effectivelyonce.reader;

import java.io.Serializable;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.StructType;

/** A record's place in Kafka, (topic, partition, offset): the order bronze has within one micro-batch. */
final class Coordinates implements Serializable {
    private static final long serialVersionUID = 1L;

    private final int topic;
    private final int partition;
    private final int offset;

    Coordinates(StructType schema) {
        this.topic = schema.fieldIndex("kafka_topic");
        this.partition = schema.fieldIndex("kafka_partition");
        this.offset = schema.fieldIndex("kafka_offset");
    }

    /** Is `a` before `b`? Both must come from Kafka (a seed row has no coordinates). */
    boolean earlier(Row a, Row b) {
        int byTopic = a.getString(topic).compareTo(b.getString(topic));
        if (byTopic != 0) {
            return byTopic < 0;
        }
        int byPartition = Integer.compare(a.getInt(partition), b.getInt(partition));
        if (byPartition != 0) {
            return byPartition < 0;
        }
        return a.getLong(offset) < b.getLong(offset);
    }
}
