package io.effectivelyonce.reader;

import java.time.DateTimeException;
import java.time.LocalDateTime;
import java.time.ZoneOffset;

/**
 * An event time: YYYY-MM-DDTHH:MM:SS, up to 6 decimals of a second, then Z or an offset ±HH:MM
 * of at most 18:00; a real calendar instant (no Feb 30, hour 24 or second 60), in microseconds
 * since the epoch, as Spark's try_to_timestamp reads it (proleptic Gregorian calendar).
 */
final class EventTime {
    private static final int MAX_FRACTION_DIGITS = 6; // a Spark timestamp holds microseconds
    private static final int MAX_OFFSET_MINUTES = 18 * 60;

    private EventTime() {}

    /** Microseconds since the epoch, or null when the text is no such instant. */
    static Long micros(String text) {
        int n = text.length();
        if (n < 20 || !digitsAt(text, 0, 4) || text.charAt(4) != '-' || !digitsAt(text, 5, 2)
                || text.charAt(7) != '-' || !digitsAt(text, 8, 2) || text.charAt(10) != 'T'
                || !digitsAt(text, 11, 2) || text.charAt(13) != ':' || !digitsAt(text, 14, 2)
                || text.charAt(16) != ':' || !digitsAt(text, 17, 2)) {
            return null;
        }
        int i = 19;
        int nanos = 0;
        if (text.charAt(i) == '.') {
            int start = ++i;
            while (i < n && isDigit(text.charAt(i))) {
                i++;
            }
            int digits = i - start;
            if (digits < 1 || digits > MAX_FRACTION_DIGITS) {
                return null;
            }
            nanos = number(text, start, digits);
            for (int k = digits; k < 9; k++) {
                nanos *= 10;
            }
        }
        ZoneOffset offset = offset(text, i);
        if (offset == null) {
            return null;
        }
        try {
            LocalDateTime local = LocalDateTime.of(number(text, 0, 4), number(text, 5, 2), number(text, 8, 2),
                    number(text, 11, 2), number(text, 14, 2), number(text, 17, 2), nanos);
            return local.toEpochSecond(offset) * 1_000_000L + nanos / 1_000;
        } catch (DateTimeException noSuchInstant) {
            return null;
        }
    }

    /** The zone that ends the text from `start`: "Z" or ±HH:MM up to ±18:00, else null. */
    private static ZoneOffset offset(String text, int start) {
        int rest = text.length() - start;
        if (rest == 1 && text.charAt(start) == 'Z') {
            return ZoneOffset.UTC;
        }
        char sign = rest == 6 ? text.charAt(start) : 0;
        if ((sign != '+' && sign != '-') || !digitsAt(text, start + 1, 2) || text.charAt(start + 3) != ':'
                || !digitsAt(text, start + 4, 2)) {
            return null;
        }
        int hours = number(text, start + 1, 2);
        int minutes = number(text, start + 4, 2);
        if (minutes > 59 || hours * 60 + minutes > MAX_OFFSET_MINUTES) {
            return null;
        }
        int seconds = (hours * 60 + minutes) * 60;
        return ZoneOffset.ofTotalSeconds(sign == '-' ? -seconds : seconds);
    }

    private static boolean digitsAt(String text, int start, int count) {
        for (int i = start; i < start + count; i++) {
            if (!isDigit(text.charAt(i))) {
                return false;
            }
        }
        return true;
    }

    private static boolean isDigit(char c) {
        return c >= '0' && c <= '9';
    }

    private static int number(String text, int start, int count) {
        int value = 0;
        for (int i = start; i < start + count; i++) {
            value = value * 10 + (text.charAt(i) - '0');
        }
        return value;
    }
}
