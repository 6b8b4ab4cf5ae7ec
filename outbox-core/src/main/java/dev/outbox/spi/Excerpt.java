package dev.outbox.spi;

/**
 * A key or value as it may appear in a reason, an exception message or a log line: whole if short, else its start
 * and its length. A writer may give a record a key of megabytes; a parked record's reason, an ERROR line or a
 * {@code toString()} must not repeat it. Stateless.
 */
public final class Excerpt {
    /** The most characters of a key or value kept whole: {@value}. */
    public static final int MAX_LENGTH = 100;
    /** The most characters of a parked record's reason kept whole: {@value}. */
    public static final int MAX_REASON_LENGTH = 1_000;

    private Excerpt() {
    }

    /**
     * {@code text} if it has at most {@link #MAX_LENGTH} characters, else its first {@link #MAX_LENGTH} followed by
     * {@code …(N characters)}; {@code "null"} for null.
     *
     * @param text the text, or null
     * @return the excerpt; never null
     */
    public static String of(String text) {
        return of(text, MAX_LENGTH);
    }

    /**
     * {@code text} if it has at most {@code max} characters, else its first {@code max} followed by
     * {@code …(N characters)}; {@code "null"} for null.
     *
     * @param text the text, or null
     * @param max  the most characters kept, at least 1
     * @return the excerpt; never null
     * @throws IllegalArgumentException if {@code max} is less than 1

     */
    public static String of(String text, int max) {
        if (max < 1) {
            throw new IllegalArgumentException("max must be at least 1: " + max);
        }
        if (text == null) {
            return "null";
        }
        if (text.length() <= max) {
            return text;
        }
        int end = max;
        if (Character.isHighSurrogate(text.charAt(end - 1))) {
            end--; // never cut a character in two
        }
        return text.substring(0, end) + "…(" + String.format("%,d", text.length()) + " characters)";
    }
}
