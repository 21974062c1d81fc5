package io.effectivelyonce.reader;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/** Checks on a record's raw bytes, made before any of them is decoded. */
final class Utf8Bytes {
    // Eight bytes at a time: most records are ASCII, and a word without a high bit is 8 ASCII bytes.
    private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final long HIGH_BITS = 0x8080808080808080L;

    private Utf8Bytes() {}

    /** True when every byte is JSON white space (space, tab, CR, LF), or there is none. */
    static boolean isBlank(byte[] bytes) {
        for (byte b : bytes) {
            if (b != ' ' && b != '\t' && b != '\r' && b != '\n') {
                return false;
            }
        }
        return true;
    }

    /**
     * True when the bytes are well-formed UTF-8 (Unicode Table 3-7), the test Spark's
     * is_valid_utf8 makes: no overlong forms, no encoded surrogates, nothing above U+10FFFF.
     */
    static boolean isValid(byte[] bytes) {
        int i = 0;
        int n = bytes.length;
        while (i + Long.BYTES <= n && ((long) LONGS.get(bytes, i) & HIGH_BITS) == 0) {
            i += Long.BYTES;
        }
        while (i < n) {
            int b = bytes[i] & 0xFF;
            if (b < 0x80) {
                i++;
                continue;
            }
            int length;
            int secondMin = 0x80;
            int secondMax = 0xBF;
            if (b >= 0xC2 && b <= 0xDF) {
                length = 2;
            } else if (b >= 0xE0 && b <= 0xEF) {
                length = 3;
                if (b == 0xE0) {
                    secondMin = 0xA0; // below: overlong
                } else if (b == 0xED) {
                    secondMax = 0x9F; // above: UTF-16 surrogates
                }
            } else if (b >= 0xF0 && b <= 0xF4) {
                length = 4;
                if (b == 0xF0) {
                    secondMin = 0x90; // below: overlong
                } else if (b == 0xF4) {
                    secondMax = 0x8F; // above: beyond U+10FFFF
                }
            } else {
                return false; // a continuation byte first, C0/C1 (overlong) or F5..FF
            }
            if (i + length > n) {
                return false;
            }
            int second = bytes[i + 1] & 0xFF;
            if (second < secondMin || second > secondMax) {
                return false;
            }
            for (int k = 2; k < length; k++) {
                int next = bytes[i + k] & 0xFF;
                if (next < 0x80 || next > 0xBF) {
                    return false;
                }
            }
            i += length;
        }
        return true;
    }
}
