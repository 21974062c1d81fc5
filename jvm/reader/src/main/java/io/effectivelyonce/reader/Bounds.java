package io.effectivelyonce.reader;

/** The bounds of the field domains (conf/platform.toml [domains]), in the units the rules use. */
record Bounds(long eventTimeFloorMicros, long maxFutureSkewMicros, int maxRecordBytes) {
    static Bounds of(long eventTimeFloorMicros, int maxFutureSkewMinutes, int maxRecordBytes) {
        return new Bounds(eventTimeFloorMicros, maxFutureSkewMinutes * 60_000_000L, maxRecordBytes);
    }
}
