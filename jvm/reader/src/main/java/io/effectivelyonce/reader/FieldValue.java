package io.effectivelyonce.reader;

/**
 * One field of a record's top-level object as read: its JSON kind and, for a string or an INTEGER
 * or DECIMAL number, its text (a number's canonical text, as Spark casts it to a string).
 */
record FieldValue(JsonKind kind, String text) {
    static final FieldValue NULL = new FieldValue(JsonKind.NULL, null);
    static final FieldValue FLOAT = new FieldValue(JsonKind.FLOAT, null);
    static final FieldValue BOOLEAN = new FieldValue(JsonKind.BOOLEAN, null);
    static final FieldValue OBJECT = new FieldValue(JsonKind.OBJECT, null);
    static final FieldValue ARRAY = new FieldValue(JsonKind.ARRAY, null);

    /** The text when the value is a string, else null (no coercion). */
    String string() {
        return kind == JsonKind.STRING ? text : null;
    }
}
