package io.effectivelyonce.reader;

import java.math.BigDecimal;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * One property of a source's declaration (eo/core/sources/*.schema.json), compiled: its name, the
 * type it is read as, whether it is required, and its domain rules (docs/sources.md).
 *
 * @param pattern null when any string is in the domain, or when `ids` holds it (the id pattern,
 *     checked by {@link Ids} without a regex)
 * @param presentWhenField the index of the field whose value `presentWhenValue` makes this one
 *     required (and without which it must be absent), or -1
 */
record DeclaredField(
        String name,
        Type type,
        boolean required,
        boolean ids,
        Pattern pattern,
        Set<String> allowed,
        int precision,
        int scale,
        BigDecimal minimum,
        boolean eventTime,
        int presentWhenField,
        String presentWhenValue) {

    /** What a field is read as, and the JSON kinds each accepts (others are bad_type). */
    enum Type {
        STRING("string"),
        TIMESTAMP("timestamp"),
        DECIMAL(null),
        LONG("bigint");

        final String ddl;

        Type(String ddl) {
            this.ddl = ddl;
        }
    }

    /** The field's Spark type, as the UDF returns it. */
    String ddl() {
        return type == Type.DECIMAL ? "decimal(" + precision + "," + scale + ")" : type.ddl;
    }

    /** Whether a non-null JSON value of `kind` has this field's type. */
    boolean accepts(JsonKind kind) {
        return switch (type) {
            case STRING, TIMESTAMP -> kind == JsonKind.STRING;
            case DECIMAL -> kind == JsonKind.STRING || kind == JsonKind.INTEGER || kind == JsonKind.DECIMAL;
            case LONG -> kind == JsonKind.INTEGER;
        };
    }
}
