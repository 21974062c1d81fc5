package io.effectivelyonce.reader;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.exc.InputCoercionException;
import java.io.IOException;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The strict reading of a record's text, in one pass of Jackson's streaming parser.
 *
 * <p>It accepts exactly what Spark's Variant parser (parse_json) accepts, the parser that defined
 * this platform's rules: Jackson's default features (no single quotes, NaN, leading zeros, comments,
 * trailing commas or raw control characters in strings; nesting up to 1000 levels), no key twice in
 * any object, and no lone UTF-16 surrogate written as an escape. Like that parser, it reads the first
 * value only; what follows it is reported as trailing data, not refused here. Numbers are typed as
 * Variant types them (see {@link JsonKind}).
 */
final class StrictJsonReader {
    // The `new JsonFactory()` the Variant parser uses: its features and StreamReadConstraints.
    // Repeated keys are found here rather than by Jackson's STRICT_DUPLICATE_DETECTION, which
    // costs a set per object: the event's own keys are checked against the fields read so far.
    private static final JsonFactory STRICT = new JsonFactory();
    // Variant keeps a decimal of at most this precision and scale; beyond, a number is a double.
    private static final int MAX_DECIMAL_DIGITS = 38;

    private StrictJsonReader() {}

    /** The record's text read against `schema`: which of its top-level keys are declared fields. */
    static JsonRecord read(String text, SourceSchema schema) {
        // A lone surrogate can only come from a \\u escape (the text is valid UTF-8): without one,
        // no string needs the check.
        boolean escapes = text.indexOf("\\u") >= 0;
        try (JsonParser parser = STRICT.createParser(text)) {
            JsonToken first = parser.nextToken();
            if (first == null) {
                return JsonRecord.INVALID;
            }
            if (first != JsonToken.START_OBJECT) {
                readValue(parser, first, escapes);
                return JsonRecord.NOT_OBJECT;
            }
            FieldValue[] fields = new FieldValue[schema.fields.length];
            Set<String> extraKeys = null;
            int expected = 0; // the field after the last one read: keys usually come in declaration order
            JsonToken token;
            while ((token = parser.nextToken()) != JsonToken.END_OBJECT) {
                if (token == null) {
                    return JsonRecord.INVALID;
                }
                String key = parser.currentName();
                if (escapes) {
                    requireWholeCharacters(parser, key);
                }
                int field = schema.indexOf(key, expected);
                if (field < 0) {
                    extraKeys = extraKeys == null ? new HashSet<>() : extraKeys;
                    requireFirst(parser, extraKeys.add(key), key);
                } else {
                    requireFirst(parser, fields[field] == null, key);
                    expected = field + 1;
                }
                FieldValue value = readValue(parser, parser.nextToken(), escapes);
                if (field >= 0) {
                    fields[field] = value;
                }
            }
            int end = (int) parser.currentLocation().getCharOffset();
            return new JsonRecord(JsonRecord.Shape.OBJECT, !onlyWhiteSpaceFrom(text, end), fields, sorted(extraKeys));
        } catch (IOException | RuntimeException e) {
            // Jackson's refusals (JsonProcessingException, StreamConstraintsException, a repeated key):
            // whatever stops the Variant parser makes the record unreadable, never the task fail.
            return JsonRecord.INVALID;
        }
    }

    private static String[] sorted(Set<String> keys) {
        if (keys == null) {
            return null;
        }
        String[] names = keys.toArray(new String[0]);
        Arrays.sort(names);
        return names;
    }

    /** Reads the value whose first token is `token`, nested values included, and says what it is. */
    private static FieldValue readValue(JsonParser parser, JsonToken token, boolean escapes) throws IOException {
        if (token == null) {
            throw new JsonParseException(parser, "unexpected end of input");
        }
        switch (token) {
            case VALUE_STRING: {
                String text = parser.getText(); // also finishes the token: an unclosed string fails here
                if (escapes) {
                    requireWholeCharacters(parser, text);
                }
                return new FieldValue(JsonKind.STRING, text);
            }
            case VALUE_NUMBER_INT:
                try {
                    return new FieldValue(JsonKind.INTEGER, Long.toString(parser.getLongValue()));
                } catch (InputCoercionException tooLong) {
                    return decimalOrFloat(parser.getText());
                }
            case VALUE_NUMBER_FLOAT:
                return decimalOrFloat(parser.getText());
            case VALUE_TRUE:
            case VALUE_FALSE:
                return FieldValue.BOOLEAN;
            case VALUE_NULL:
                return FieldValue.NULL;
            case START_OBJECT:
                skipNested(parser, escapes);
                return FieldValue.OBJECT;
            case START_ARRAY:
                skipNested(parser, escapes);
                return FieldValue.ARRAY;
            default:
                throw new JsonParseException(parser, "unexpected token " + token);
        }
    }

    /**
     * Reads past the rest of an object or array (its first token read), with every check the Variant
     * parser makes in it. `keys` holds, for each open level, the keys of an object (null: an array).
     */
    private static void skipNested(JsonParser parser, boolean escapes) throws IOException {
        List<Set<String>> keys = new ArrayList<>();
        keys.add(parser.currentToken() == JsonToken.START_OBJECT ? new HashSet<>() : null);
        while (!keys.isEmpty()) {
            JsonToken token = parser.nextToken();
            if (token == null) {
                throw new JsonParseException(parser, "unexpected end of input");
            }
            switch (token) {
                case START_OBJECT -> keys.add(new HashSet<>());
                case START_ARRAY -> keys.add(null);
                case END_OBJECT, END_ARRAY -> keys.remove(keys.size() - 1);
                case FIELD_NAME -> {
                    String key = parser.currentName();
                    if (escapes) {
                        requireWholeCharacters(parser, key);
                    }
                    requireFirst(parser, keys.get(keys.size() - 1).add(key), key);
                }
                case VALUE_STRING -> {
                    if (escapes) {
                        requireWholeCharacters(parser, parser.getText());
                    }
                }
                default -> {}
            }
        }
    }

    private static void requireFirst(JsonParser parser, boolean first, String key) throws JsonParseException {
        if (!first) {
            throw new JsonParseException(parser, "repeated key " + key);
        }
    }

    /**
     * A number that is no long: a DECIMAL when Variant keeps it exactly (plain notation, at most 38
     * digits and 38 decimals), with the text Spark gives it as a string (trailing zeros dropped, no
     * exponent); else a FLOAT.
     */
    private static FieldValue decimalOrFloat(String number) {
        for (int i = 0; i < number.length(); i++) {
            char c = number.charAt(i);
            if (c != '-' && c != '.' && (c < '0' || c > '9')) {
                return FieldValue.FLOAT; // an exponent
            }
        }
        BigDecimal decimal = new BigDecimal(number);
        if (decimal.precision() > MAX_DECIMAL_DIGITS || decimal.scale() > MAX_DECIMAL_DIGITS) {
            return FieldValue.FLOAT;
        }
        return new FieldValue(JsonKind.DECIMAL, decimal.stripTrailingZeros().toPlainString());
    }

    /** Refuses a lone surrogate: an escape such as "\\ud800" names no character. */
    private static void requireWholeCharacters(JsonParser parser, String text) throws JsonParseException {
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < text.length() && Character.isLowSurrogate(text.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                throw new JsonParseException(parser, "lone surrogate in a string");
            }
        }
    }

    private static boolean onlyWhiteSpaceFrom(String text, int start) {
        for (int i = start; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c != ' ' && c != '\t' && c != '\r' && c != '\n') {
                return false;
            }
        }
        return true;
    }
}
