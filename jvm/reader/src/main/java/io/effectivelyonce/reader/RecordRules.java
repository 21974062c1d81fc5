package io.effectivelyonce.reader;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;

/**
 * The strict reading of one raw record: its typed fields and the first rule it breaks, in the
 * order of docs/bad-input.md. 1. the record: malformed_json:{empty, too_large, invalid_utf8,
 * repeated_key, syntax, not_object, trailing_data}; 2. each field in order: missing_field, then
 * bad_type; 3. each field in order: bad_value. The reference checks (campaign, ad) come after,
 * in Spark (eo/core/transforms/parse.py classify).
 */
final class RecordRules {
    private static final String PURCHASE = "purchase";

    private RecordRules() {}

    static Reading read(byte[] value, Long kafkaTimestampMicros, Bounds bounds) {
        if (value == null || Utf8Bytes.isBlank(value)) {
            return Reading.unread("malformed_json:empty");
        }
        if (value.length > bounds.maxRecordBytes()) {
            return Reading.unread("malformed_json:too_large");
        }
        if (!Utf8Bytes.isValid(value)) {
            return Reading.unread("malformed_json:invalid_utf8");
        }
        String text = new String(value, StandardCharsets.UTF_8);
        JsonRecord record = StrictJsonReader.read(text);
        switch (record.shape()) {
            case INVALID:
                return Reading.unread(TopLevelKeys.repeated(text) ? "malformed_json:repeated_key" : "malformed_json:syntax");
            case NOT_OBJECT:
                return Reading.unread("malformed_json:not_object");
            default:
                return typed(record, kafkaTimestampMicros, bounds);
        }
    }

    /** A readable object's fields, typed, and the reason: trailing data first, then the field rules. */
    private static Reading typed(JsonRecord record, Long kafkaTimestampMicros, Bounds bounds) {
        String eventTime = string(record, Field.EVENT_TIME);
        Long eventTimeMicros = eventTime == null ? null : inDomain(EventTime.micros(eventTime), kafkaTimestampMicros, bounds);
        String priceText = priceText(record.field(Field.PRICE));
        BigDecimal price = priceText != null && Price.exact(priceText) ? Price.value(priceText) : null;
        String reason = record.trailingData()
                ? "malformed_json:trailing_data"
                : fieldReason(record, eventTimeMicros, priceText, price);
        return new Reading(
                string(record, Field.EVENT_ID),
                string(record, Field.EVENT_TYPE),
                eventTimeMicros,
                string(record, Field.USER_ID),
                string(record, Field.SESSION_ID),
                string(record, Field.CAMPAIGN_ID),
                string(record, Field.AD_ID),
                price,
                reason);
    }

    private static String fieldReason(JsonRecord record, Long eventTimeMicros, String priceText, BigDecimal price) {
        for (Field field : Field.REQUIRED) {
            FieldValue value = record.field(field);
            if (value == null || value.kind() == JsonKind.NULL) {
                return "missing_field:" + field.key;
            }
            if (value.kind() != JsonKind.STRING) {
                return "bad_type:" + field.key;
            }
        }
        FieldValue priceValue = record.field(Field.PRICE);
        if (priceValue != null && priceValue.kind() != JsonKind.NULL && priceText == null) {
            return "bad_type:price"; // a boolean, an object, an array or a float
        }
        if (!Ids.valid(string(record, Field.EVENT_ID))) {
            return "bad_value:event_id";
        }
        String eventType = string(record, Field.EVENT_TYPE);
        if (!isEventType(eventType)) {
            return "bad_value:event_type";
        }
        if (eventTimeMicros == null) {
            return "bad_value:event_time";
        }
        for (Field field : Field.IDS_AFTER_EVENT_TIME) {
            if (!Ids.valid(string(record, field))) {
                return "bad_value:" + field.key;
            }
        }
        boolean purchase = PURCHASE.equals(eventType);
        if (purchase && priceText == null) {
            return "missing_field:price";
        }
        if (priceText != null && (!purchase || price == null || price.signum() < 0)) {
            return "bad_value:price";
        }
        return null;
    }

    /** eo/core/tables.py EVENT_TYPES. */
    private static boolean isEventType(String type) {
        return switch (type) {
            case "impression", "click", PURCHASE -> true;
            default -> false;
        };
    }

    /** The event time when it is not before the floor nor later than the Kafka timestamp plus the skew. */
    private static Long inDomain(Long micros, Long kafkaTimestampMicros, Bounds bounds) {
        if (micros == null || kafkaTimestampMicros == null) {
            return null;
        }
        boolean inside = micros >= bounds.eventTimeFloorMicros()
                && micros <= kafkaTimestampMicros + bounds.maxFutureSkewMicros();
        return inside ? micros : null;
    }

    /** A price's text when it is a string or a number Spark reads exactly, else null. */
    private static String priceText(FieldValue price) {
        if (price == null) {
            return null;
        }
        return switch (price.kind()) {
            case STRING, INTEGER, DECIMAL -> price.text();
            default -> null;
        };
    }

    private static String string(JsonRecord record, Field field) {
        FieldValue value = record.field(field);
        return value == null ? null : value.string();
    }
}
