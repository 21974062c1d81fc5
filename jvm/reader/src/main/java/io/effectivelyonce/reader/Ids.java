package io.effectivelyonce.reader;

/**
 * The id domain, \A[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}\z (eo/core/transforms/parse.py ID_PATTERN):
 * 1 to 64 ASCII characters, letters, digits and _ . : -, the first a letter or a digit.
 */
final class Ids {
    private static final int MAX_LENGTH = 64;
    // Indexed by character: 1 a letter or a digit, 2 another character an id may hold, 0 none.
    private static final byte[] KINDS = new byte[128];

    static {
        for (char c = '0'; c <= '9'; c++) {
            KINDS[c] = 1;
        }
        for (char c = 'A'; c <= 'Z'; c++) {
            KINDS[c] = 1;
            KINDS[Character.toLowerCase(c)] = 1;
        }
        for (char c : new char[] {'_', '.', ':', '-'}) {
            KINDS[c] = 2;
        }
    }

    private Ids() {}

    static boolean valid(String id) {
        int n = id.length();
        if (n == 0 || n > MAX_LENGTH || kind(id.charAt(0)) != 1) {
            return false;
        }
        for (int i = 1; i < n; i++) {
            if (kind(id.charAt(i)) == 0) {
                return false;
            }
        }
        return true;
    }

    private static int kind(char c) {
        return c < KINDS.length ? KINDS[c] : 0;
    }
}
