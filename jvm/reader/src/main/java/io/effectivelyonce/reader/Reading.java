package io.effectivelyonce.reader;

import java.math.BigDecimal;

/**
 * One record read: its typed fields and `reason`, the first rule it breaks (null when valid).
 * A field is null when the record has no readable object, or the field is absent, of another JSON
 * type, or (event_time, price) outside its domain; it is set whatever the reason otherwise.
 */
record Reading(
        String eventId,
        String eventType,
        Long eventTimeMicros,
        String userId,
        String sessionId,
        String campaignId,
        String adId,
        BigDecimal price,
        String reason) {

    static Reading unread(String reason) {
        return new Reading(null, null, null, null, null, null, null, null, reason);
    }
}
