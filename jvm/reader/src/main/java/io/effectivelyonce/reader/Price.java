package io.effectivelyonce.reader;

import java.math.BigDecimal;

/**
 * The price domain: a value DECIMAL(10,2) holds exactly, never rounded. Judged on the price's text
 * (a string's own, a number's canonical one): \A-?0*[0-9]{1,8}(\.[0-9]{1,2}0*)?\z, that is up to
 * 8 integer digits (leading zeros aside) and 2 decimals (trailing zeros aside).
 */
final class Price {
    static final int SCALE = 2;
    private static final int MAX_INTEGER_DIGITS = 8;

    private Price() {}

    /** True when DECIMAL(10,2) holds the text's value exactly. */
    static boolean exact(String text) {
        int n = text.length();
        int i = text.startsWith("-") ? 1 : 0;
        int integerStart = i;
        int firstSignificant = -1;
        while (i < n && isDigit(text.charAt(i))) {
            if (firstSignificant < 0 && text.charAt(i) != '0') {
                firstSignificant = i;
            }
            i++;
        }
        if (i == integerStart || (firstSignificant >= 0 && i - firstSignificant > MAX_INTEGER_DIGITS)) {
            return false;
        }
        if (i == n) {
            return true;
        }
        if (text.charAt(i) != '.' || i + 1 == n) {
            return false;
        }
        for (int k = i + 1; k < n; k++) {
            char c = text.charAt(k);
            if (!isDigit(c) || (k - i > SCALE && c != '0')) {
                return false;
            }
        }
        return true;
    }

    /** The DECIMAL(10,2) value of a text `exact` accepts. */
    static BigDecimal value(String text) {
        return new BigDecimal(text).setScale(SCALE);
    }

    private static boolean isDigit(char c) {
        return c >= '0' && c <= '9';
    }
}
