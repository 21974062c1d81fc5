package io.effectivelyonce.reader;

import java.math.BigDecimal;

/**
 * A decimal field's domain: a value DECIMAL(precision, scale) holds exactly, never rounded. Judged
 * on the value's text (a string's own, a number's canonical one): an optional minus, at most
 * precision - scale integer digits (leading zeros aside) and at most scale decimals (trailing zeros
 * aside).
 */
final class Decimals {
    private Decimals() {}

    /** True when DECIMAL(precision, scale) holds the text's value exactly. */
    static boolean exact(String text, int precision, int scale) {
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
        if (i == integerStart || (firstSignificant >= 0 && i - firstSignificant > precision - scale)) {
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
            if (!isDigit(c) || (k - i > scale && c != '0')) {
                return false;
            }
        }
        return true;
    }

    /** The DECIMAL(_, scale) value of a text `exact` accepts. */
    static BigDecimal value(String text, int scale) {
        return new BigDecimal(text).setScale(scale);
    }

    private static boolean isDigit(char c) {
        return c >= '0' && c <= '9';
    }
}
