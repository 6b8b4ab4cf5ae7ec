package dev.outbox.sidecar;

import java.util.Locale;

/**
 * A fatal configuration error: the sidecar prints {@link #oneLine()} and exits with status
 * {@value SidecarApplication#CONFIG_ERROR_EXIT}. The value of a key that holds a secret is never shown, nor a secret inside
 * another value (a password in a JDBC URL: {@link Redaction}). Immutable.
 */
public final class SidecarConfigException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** The configuration key at fault. */
    private final String key;
    /** Its value as configured, or null when it is not set; kept as given, shown only masked or redacted. */
    private final String value;
    /** What is wrong, and what to do. */
    private final String problem;

    /**
     * A configuration error; the message is the one line {@link #oneLine()} returns.
     *
     * @param key     the configuration key at fault, e.g. {@code sidecar.outboxes.orders.store.table}
     * @param value   its value as configured, or null when it is not set (masked if the key holds a secret)
     * @param problem what is wrong, and what to do
     * @param cause   the exception behind it (a builder's rejection, a failed connection), or {@code null}
     */
    public SidecarConfigException(String key, String value, String problem, Throwable cause) {
        super(format(key, value, problem), cause);
        this.key = key;
        this.value = value;
        this.problem = problem;
    }

    /**
     * The key at fault.
     *
     * @return the full key, e.g. {@code sidecar.outboxes.orders.store.table}, or an option such as
     *         {@code --config}
     */
    public String key() {
        return key;
    }

    /**
     * What is wrong.
     *
     * @return the problem and what to do, as given (not redacted: print {@link #oneLine()} instead)
     */
    public String problem() {
        return problem;
    }

    /**
     * The message on one line: the key, its value (masked if secret) and the problem.
     *
     * @return {@code configuration error: <key> = <value>: <problem>}, secrets masked or redacted and line breaks
     *         removed, safe to print
     */
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
