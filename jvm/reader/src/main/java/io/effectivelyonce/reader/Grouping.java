package io.effectivelyonce.reader;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.KeyValueGroupedDataset;
import org.apache.spark.sql.Row;

/** How the stream's Java operators group their rows: by a string column the rows already hold. */
final class Grouping {
    private Grouping() {}

    /**
     * The rows grouped by `keyColumn` (a string). Spark shuffles them by that column as it is and
     * turns a row into a Java object only inside the operator; `groupByKey` with a key function
     * turned every row into one before the shuffle too, and added the key as a second column.
     */
    static KeyValueGroupedDataset<String, Row> byColumn(Dataset<Row> rows, String keyColumn) {
        return rows.groupBy(rows.col(keyColumn)).as(Encoders.STRING(), Encoders.row(rows.schema()));
    }
}
