package io.effectivelyonce.reader;

/**
 * What the strict reading of a record's text found: whether its first JSON value is valid and an
 * object, whether anything but white space follows that value, and the event's fields in it.
 */
record JsonRecord(Shape shape, boolean trailingData, FieldValue[] fields) {
    enum Shape {
        /** The first value is not strict JSON (or repeats a key at any level). */
        INVALID,
        /** A valid first value that is an array, a string, a number, true, false or null. */
        NOT_OBJECT,
        OBJECT
    }

    static final JsonRecord INVALID = new JsonRecord(Shape.INVALID, false, null);
    static final JsonRecord NOT_OBJECT = new JsonRecord(Shape.NOT_OBJECT, false, null);

    /** The field as read, or null when the object has no such key. */
    FieldValue field(Field field) {
        return fields[field.ordinal()];
    }
}
