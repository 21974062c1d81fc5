package io.effectivelyonce.reader;

/**
 * A JSON value's type as the rules ask it. Numbers are typed as Spark's Variant parser types them:
 * INTEGER when a long holds them, DECIMAL when written in plain notation with at most 38 digits and
 * 38 decimals, FLOAT otherwise (an exponent, or more digits).
 */
enum JsonKind {
    NULL,
    STRING,
    INTEGER,
    DECIMAL,
    FLOAT,
    BOOLEAN,
    OBJECT,
    ARRAY
}
