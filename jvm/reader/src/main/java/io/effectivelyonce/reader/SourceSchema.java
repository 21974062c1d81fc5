package io.effectivelyonce.reader;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A source's declaration (eo/core/sources/&lt;name&gt;.schema.json, a JSON Schema), compiled for the
 * strict reading: its fields in declaration order (the order their rules are asked), by name, and
 * what a record with a key it does not declare becomes (additionalProperties: true keeps the record
 * and counts the key; false quarantines it). eo/core/sources/__init__.py reads the same file, with
 * the same refusals, for silver's columns; a test holds the two readings equal.
 */
final class SourceSchema {
    /** The id domain, checked by {@link Ids} without a regex. */
    static final String ID_PATTERN = "^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$";
    private static final Set<String> TOP_KEYS = Set.of(
            "$schema", "$id", "title", "description", "type", "x-topic", "x-event-id", "x-event-time",
            "x-catalogue", "additionalProperties", "required", "properties");
    private static final Set<String> FIELD_KEYS = Set.of(
            "description", "type", "format", "pattern", "enum", "minimum", "x-sql-type", "x-present-when");
    private static final Pattern DECIMAL = Pattern.compile("DECIMAL\\((\\d+),\\s*(\\d+)\\)");

    final String name;
    final DeclaredField[] fields;
    final boolean quarantineUnknown;
    // The fields' names, interned: Jackson interns the keys it reads, so a key in declaration order
    // is found by identity, before any hashing (records mostly list their keys in one order).
    private final String[] names;
    private final Map<String, Integer> index;
    // Each field's reasons, made once: a refused record costs no string of its own.
    final String[] missingField;
    final String[] badType;
    final String[] badValue;

    private SourceSchema(String name, DeclaredField[] fields, boolean quarantineUnknown) {
        this.name = name;
        this.fields = fields;
        this.quarantineUnknown = quarantineUnknown;
        this.names = new String[fields.length];
        this.index = new HashMap<>();
        this.missingField = new String[fields.length];
        this.badType = new String[fields.length];
        this.badValue = new String[fields.length];
        for (int i = 0; i < fields.length; i++) {
            names[i] = fields[i].name().intern();
            index.put(names[i], i);
            missingField[i] = "missing_field:" + names[i];
            badType[i] = "bad_type:" + names[i];
            badValue[i] = "bad_value:" + names[i];
        }
    }

    /**
     * The field a key names (keys are case-sensitive), or -1 for a key the declaration lacks.
     * `expected`: the field the key most likely names (the one after the previous key's).
     */
    int indexOf(String key, int expected) {
        if (expected < names.length && names[expected] == key) {
            return expected;
        }
        Integer found = index.get(key);
        return found == null ? -1 : found;
    }

    /** The UDF's return type: the fields in order, then reason and unknown_fields. */
    String readingDdl() {
        StringBuilder ddl = new StringBuilder("struct<");
        for (DeclaredField field : fields) {
            ddl.append(field.name()).append(": ").append(field.ddl()).append(", ");
        }
        return ddl.append("reason: string, unknown_fields: array<string>>").toString();
    }

    /** The declaration's text compiled, or IllegalArgumentException naming what it cannot read. */
    static SourceSchema parse(String text) {
        JsonNode root;
        try {
            root = new ObjectMapper().readTree(text);
        } catch (IOException e) {
            throw new IllegalArgumentException("a source declaration that is not JSON: " + e.getMessage(), e);
        }
        String name = root.path("title").asText("");
        refuseUnknown(root, TOP_KEYS, name, "the declaration");
        if (!"object".equals(root.path("type").asText())) {
            throw refused(name, "\"type\" must be \"object\"");
        }
        Set<String> required = new HashSet<>();
        root.path("required").forEach(node -> required.add(node.asText()));
        JsonNode properties = root.path("properties");
        List<String> names = new ArrayList<>();
        properties.fieldNames().forEachRemaining(names::add);
        for (String needed : required) {
            if (!names.contains(needed)) {
                throw refused(name, "required field " + needed + " is not among the properties");
            }
        }
        String eventTime = root.path("x-event-time").asText(null);
        DeclaredField[] fields = new DeclaredField[names.size()];
        for (int i = 0; i < fields.length; i++) {
            String field = names.get(i);
            fields[i] = field(name, field, properties.get(field), required.contains(field), field.equals(eventTime), names);
        }
        JsonNode additional = root.path("additionalProperties");
        return new SourceSchema(name, fields, additional.isBoolean() && !additional.asBoolean());
    }

    private static DeclaredField field(
            String source, String name, JsonNode spec, boolean required, boolean eventTime, List<String> names) {
        refuseUnknown(spec, FIELD_KEYS, source, "field " + name);
        String sqlType = spec.path("x-sql-type").asText("").toUpperCase();
        Set<String> types = new HashSet<>();
        if (spec.path("type").isArray()) {
            spec.path("type").forEach(node -> types.add(node.asText()));
        } else {
            types.add(spec.path("type").asText());
        }
        DeclaredField.Type type;
        int precision = 0;
        int scale = 0;
        Matcher decimal = DECIMAL.matcher(sqlType);
        if (types.equals(Set.of("string", "number")) && decimal.matches()) {
            type = DeclaredField.Type.DECIMAL;
            precision = Integer.parseInt(decimal.group(1));
            scale = Integer.parseInt(decimal.group(2));
        } else if (types.equals(Set.of("string")) && "date-time".equals(spec.path("format").asText())) {
            type = DeclaredField.Type.TIMESTAMP;
        } else if (types.equals(Set.of("string")) && !spec.has("format")) {
            type = DeclaredField.Type.STRING;
        } else if (types.equals(Set.of("integer"))) {
            type = DeclaredField.Type.LONG;
        } else {
            throw refused(source, "field " + name + " has a type the reading does not know");
        }
        boolean numeric = type == DeclaredField.Type.DECIMAL || type == DeclaredField.Type.LONG;
        if (spec.has("x-sql-type") && type != DeclaredField.Type.DECIMAL) {
            throw refused(source, "field " + name + ": x-sql-type names a decimal's DECIMAL(p,s) only");
        }
        if (spec.has("minimum") && !numeric) {
            throw refused(source, "field " + name + ": minimum applies to a decimal or an integer only");
        }
        if ((spec.has("pattern") || spec.has("enum")) && type != DeclaredField.Type.STRING) {
            throw refused(source, "field " + name + ": pattern and enum apply to a string only");
        }
        String pattern = spec.has("pattern") ? spec.get("pattern").asText() : null;
        Set<String> allowed = null;
        if (spec.has("enum")) {
            allowed = new HashSet<>();
            for (JsonNode value : spec.get("enum")) {
                allowed.add(value.asText());
            }
        }
        int presentWhenField = -1;
        String presentWhenValue = null;
        if (spec.has("x-present-when")) {
            Iterator<Map.Entry<String, JsonNode>> condition = spec.get("x-present-when").fields();
            Map.Entry<String, JsonNode> only = condition.next();
            presentWhenField = names.indexOf(only.getKey());
            presentWhenValue = only.getValue().asText();
            if (presentWhenField < 0 || condition.hasNext()) {
                throw refused(source, "field " + name + ": x-present-when names one declared field and its value");
            }
        }
        return new DeclaredField(
                name,
                type,
                required,
                ID_PATTERN.equals(pattern),
                pattern == null || ID_PATTERN.equals(pattern) ? null : Pattern.compile(pattern),
                allowed,
                precision,
                scale,
                spec.has("minimum") ? new BigDecimal(spec.get("minimum").asText()) : null,
                eventTime,
                presentWhenField,
                presentWhenValue);
    }

    private static void refuseUnknown(JsonNode node, Set<String> known, String source, String where) {
        node.fieldNames().forEachRemaining(key -> {
            if (!known.contains(key)) {
                throw refused(source, where + " has keyword " + key + ", which the reading does not know");
            }
        });
    }

    private static IllegalArgumentException refused(String source, String what) {
        return new IllegalArgumentException("source " + source + " refused: " + what + " (docs/sources.md)");
    }
}
