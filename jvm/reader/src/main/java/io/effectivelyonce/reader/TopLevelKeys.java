package io.effectivelyonce.reader;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.json.JsonReadFeature;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Set;

/**
 * Tells a repeated top-level key from other syntax errors, in records the strict reading refused.
 *
 * <p>A record is `repeated_key` when its top-level object can be read to its end by the reading
 * Spark's json_object_keys makes (single quotes and raw control characters allowed, nested values
 * skipped unchecked for repeats) and names a key twice. The keys are compared as Spark compares
 * them, as UTF-8 bytes: a lone surrogate becomes '?'. Everything else the strict reading refused
 * is `syntax`, a key repeated inside a nested value included. Only refused records get here.
 */
final class TopLevelKeys {
    private static final JsonFactory LENIENT = JsonFactory.builder()
            .enable(JsonReadFeature.ALLOW_UNESCAPED_CONTROL_CHARS)
            .enable(JsonReadFeature.ALLOW_SINGLE_QUOTES)
            .build();

    private TopLevelKeys() {}

    static boolean repeated(String text) {
        try (JsonParser parser = LENIENT.createParser(text)) {
            if (parser.nextToken() != JsonToken.START_OBJECT) {
                return false;
            }
            Set<String> seen = new HashSet<>();
            boolean repeated = false;
            // The end of the top-level object is the first value outside it: no name.
            while (parser.nextValue() != null && parser.currentName() != null) {
                repeated |= !seen.add(asUtf8(parser.currentName()));
                parser.skipChildren();
            }
            return repeated;
        } catch (IOException unreadable) {
            return false;
        }
    }

    private static String asUtf8(String key) {
        return new String(key.getBytes(StandardCharsets.UTF_8), StandardCharsets.UTF_8);
    }
}
