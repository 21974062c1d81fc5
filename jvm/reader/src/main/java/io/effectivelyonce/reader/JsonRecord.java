package io.effectivelyonce.reader;

/**
 * What the strict reading of a record's text found: whether its first JSON value is valid and an
 * object, whether anything but white space follows that value, the declared fields in it (by their
 * index in the source's declaration) and the top-level keys it does not declare (sorted; null when
 * none).
 */
record JsonRecord(Shape shape, boolean trailingData, FieldValue[] fields, String[] unknown) {
    enum Shape {
        /** The first value is not strict JSON (or repeats a key at any level). */
        INVALID,
        /** A valid first value that is an array, a string, a number, true, false or null. */
        NOT_OBJECT,
        OBJECT
    }

    static final JsonRecord INVALID = new JsonRecord(Shape.INVALID, false, null, null);
    static final JsonRecord NOT_OBJECT = new JsonRecord(Shape.NOT_OBJECT, false, null, null);

    /** The field as read, or null when the object has no such key. */
    FieldValue field(int index) {
        return fields[index];
    }
}
