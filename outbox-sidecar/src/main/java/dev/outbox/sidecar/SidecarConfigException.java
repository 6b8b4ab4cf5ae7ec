package dev.outbox.sidecar;

import java.util.Locale;

/**
 * A fatal configuration error: the sidecar prints {@link #oneLine()} and exits with status
 * {@value SidecarApplication#CONFIG_ERROR_EXIT}. The value of a key that holds a secret is never shown, nor a secret inside
 * another value (a password in a JDBC URL: {@link Redaction}). Immutable.
 */
public final class SidecarConfigException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final String key;
    private final String value;
    private final String problem;

    /**
     * @param key     the configuration key at fault, e.g. {@code sidecar.outboxes.orders.store.table}
     * @param value   its value as configured, or null when it is not set (masked if the key holds a secret)
     * @param problem what is wrong, and what to do
     */
    public SidecarConfigException(String key, String value, String problem, Throwable cause) {
        super(format(key, value, problem), cause);
        this.key = key;
        this.value = value;
        this.problem = problem;
    }

    /** The key at fault. */
    public String key() {
        return key;
    }

    /** What is wrong. */
    public String problem() {
        return problem;
    }

    /** The message on one line: the key, its value (masked if secret) and the problem. */
    public String oneLine() {
        return getMessage();
    }

    @Override
    public String toString() {
        return getMessage();
    }

    private static String format(String key, String value, String problem) {
        String shown = value == null ? "(not set)" : isSecret(key) ? "'" + Redaction.MASK + "'"
                : "'" + Redaction.redact(value) + "'";
        return ("configuration error: " + key + " = " + shown + ": " + Redaction.redact(problem))
                .replaceAll("[\\r\\n]+", " ");
    }

    /** Whether the value of {@code key} must never be shown. */
    static boolean isSecret(String key) {
        String k = key.toLowerCase(Locale.ROOT);
        return k.contains("password") || k.contains("token") || k.contains("secret") || k.contains("jaas")
                || k.contains("credential") || k.endsWith(".key");
    }
}
