package io.effectivelyonce.reader;

/** The fields an event is read for, in the order their rules are asked (docs/bad-input.md). */
enum Field {
    EVENT_ID("event_id"),
    EVENT_TYPE("event_type"),
    EVENT_TIME("event_time"),
    USER_ID("user_id"),
    SESSION_ID("session_id"),
    CAMPAIGN_ID("campaign_id"),
    AD_ID("ad_id"),
    PRICE("price");

    static final Field[] REQUIRED = {EVENT_ID, EVENT_TYPE, EVENT_TIME, USER_ID, SESSION_ID, CAMPAIGN_ID, AD_ID};
    static final Field[] IDS_AFTER_EVENT_TIME = {USER_ID, SESSION_ID, CAMPAIGN_ID, AD_ID};
    static final int COUNT = values().length;

    final String key;

    Field(String key) {
        this.key = key;
    }

    /** The field a key names, or null for an extra field (keys are case-sensitive). */
    static Field named(String key) {
        return switch (key) {
            case "event_id" -> EVENT_ID;
            case "event_type" -> EVENT_TYPE;
            case "event_time" -> EVENT_TIME;
            case "user_id" -> USER_ID;
            case "session_id" -> SESSION_ID;
            case "campaign_id" -> CAMPAIGN_ID;
            case "ad_id" -> AD_ID;
            case "price" -> PRICE;
            default -> null;
        };
    }
}
