package io.effectivelyonce.reader;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.Instant;

/**
 * The strict reading of one raw record against its source's declaration: its typed fields, the
 * first rule it breaks and the top-level keys the declaration lacks, in the order of
 * docs/bad-input.md. 1. the record: malformed_json:{empty, too_large, invalid_utf8, repeated_key,
 * syntax, not_object, trailing_data}; 2. each field in declaration order: missing_field, then
 * bad_type; 3. each field in declaration order: bad_value (a conditional field's missing_field
 * too); 4. unknown_field:&lt;first key&gt; when the declaration quarantines them. The reference
 * checks (campaign, ad) come after, in Spark (eo/core/transforms/parse.py classify).
 *
 * <p>The reading is an array: the fields' values in declaration order (a field is null when the
 * record has no readable object, or the field is absent, of another JSON type, or outside its
 * domain for a time or a decimal; it is set whatever the reason otherwise), then the reason (null
 * when valid), then the unknown keys (sorted; null when none).
 */
final class RecordRules {
    private RecordRules() {}

    static Object[] read(byte[] value, Long kafkaTimestampMicros, Bounds bounds, SourceSchema schema) {
        if (value == null || Utf8Bytes.isBlank(value)) {
            return unread(schema, "malformed_json:empty");
        }
        if (value.length > bounds.maxRecordBytes()) {
            return unread(schema, "malformed_json:too_large");
        }
        if (!Utf8Bytes.isValid(value)) {
            return unread(schema, "malformed_json:invalid_utf8");
        }
        String text = new String(value, StandardCharsets.UTF_8);
        JsonRecord record = StrictJsonReader.read(text, schema);
        switch (record.shape()) {
            case INVALID:
                return unread(schema, TopLevelKeys.repeated(text) ? "malformed_json:repeated_key" : "malformed_json:syntax");
            case NOT_OBJECT:
                return unread(schema, "malformed_json:not_object");
            default:
                return typed(record, kafkaTimestampMicros, bounds, schema);
        }
    }

    private static Object[] unread(SourceSchema schema, String reason) {
        Object[] reading = new Object[schema.fields.length + 2];
        reading[schema.fields.length] = reason;
        return reading;
    }

    /**
     * A readable object's fields, typed, and the reason: trailing data first, then the field rules.
     * One pass types every field and notes the first missing or mistyped one; the domains follow.
     */
    private static Object[] typed(JsonRecord record, Long kafkaTimestampMicros, Bounds bounds, SourceSchema schema) {
        DeclaredField[] fields = schema.fields;
        Object[] reading = new Object[fields.length + 2];
        String[] texts = new String[fields.length];
        String typeReason = null;
        for (int i = 0; i < fields.length; i++) {
            DeclaredField field = fields[i];
            FieldValue found = record.field(i);
            if (found == null || found.kind() == JsonKind.NULL) {
                if (typeReason == null && field.required()) {
                    typeReason = schema.missingField[i];
                }
            } else if (field.accepts(found.kind())) {
                texts[i] = found.text();
                reading[i] = typedValue(field, texts[i], kafkaTimestampMicros, bounds);
            } else if (typeReason == null) {
                typeReason = schema.badType[i]; // another JSON type: a float where a decimal goes, say
            }
        }
        String reason;
        if (record.trailingData()) {
            reason = "malformed_json:trailing_data";
        } else if (typeReason != null) {
            reason = typeReason;
        } else {
            reason = valueReason(record, texts, reading, schema);
        }
        reading[fields.length] = reason;
        reading[fields.length + 1] = record.unknown();
        return reading;
    }

    /** A field's value of its type, or null when outside its domain (a time, a decimal). */
    private static Object typedValue(DeclaredField field, String text, Long kafkaTimestampMicros, Bounds bounds) {
        switch (field.type()) {
            case TIMESTAMP: {
                Long micros = EventTime.micros(text);
                if (field.eventTime()) {
                    micros = inDomain(micros, kafkaTimestampMicros, bounds);
                }
                return micros == null ? null : instant(micros);
            }
            case DECIMAL:
                return Decimals.exact(text, field.precision(), field.scale()) ? Decimals.value(text, field.scale()) : null;
            case LONG:
                return Long.valueOf(text);
            default:
                return text;
        }
    }

    /** The first field outside its domain, in declaration order (every field has its type). */
    private static String valueReason(JsonRecord record, String[] texts, Object[] reading, SourceSchema schema) {
        DeclaredField[] fields = schema.fields;
        for (int i = 0; i < fields.length; i++) {
            DeclaredField field = fields[i];
            if (field.presentWhenField() >= 0) {
                boolean wanted = field.presentWhenValue().equals(texts[field.presentWhenField()]);
                if (wanted && texts[i] == null) {
                    return schema.missingField[i];
                }
                if (!wanted && texts[i] != null) {
                    return schema.badValue[i];
                }
            }
            if (texts[i] != null && !inDomain(field, texts[i], reading[i])) {
                return schema.badValue[i];
            }
        }
        String[] unknown = record.unknown();
        if (schema.quarantineUnknown && unknown != null) {
            return "unknown_field:" + unknown[0];
        }
        return null;
    }

    /** Whether a present value of the field's type is in its domain. */
    private static boolean inDomain(DeclaredField field, String text, Object value) {
        switch (field.type()) {
            case TIMESTAMP:
            case DECIMAL:
                if (value == null) {
                    return false;
                }
                break;
            default:
                break;
        }
        if (field.ids() && !Ids.valid(text)) {
            return false;
        }
        if (field.pattern() != null && !field.pattern().matcher(text).find()) {
            return false;
        }
        if (field.allowed() != null && !field.allowed().contains(text)) {
            return false;
        }
        if (field.minimum() != null) {
            BigDecimal number = value instanceof BigDecimal decimal ? decimal : BigDecimal.valueOf((Long) value);
            return number.compareTo(field.minimum()) >= 0;
        }
        return true;
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

    private static Instant instant(long micros) {
        return Instant.ofEpochSecond(Math.floorDiv(micros, 1_000_000L), Math.floorMod(micros, 1_000_000L) * 1_000L);
    }
}
