package dev.outbox.sidecar;

import java.io.ByteArrayOutputStream;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Keeps secrets out of everything the sidecar prints. Two rules, applied to every line of standard output and
 * standard error ({@link #install()}: log lines, stack traces, the start-up error line) and to every configuration
 * error message:
 * <ul>
 *   <li>each secret the configuration holds ({@link #remember}: the values of keys named like {@code *password*},
 *       {@code *secret*}, {@code *token*}, {@code *credential*}, {@code *jaas*}, read inline or from a file) is
 *       replaced by {@value #MASK} wherever it appears;</li>
 *   <li>in a URL, a parameter whose name contains {@code password}, {@code secret} or {@code token}, and the password
 *       of a {@code user:password@} part, are masked even if the configuration never named them as secrets.</li>
 * </ul>
 * Thread-safe.
 */
final class Redaction {
    /** What a secret is replaced with. */
    static final String MASK = "******";
    /** Shorter values are not masked wherever they appear: a 1-character "secret" would mask half of every line. */
    static final int MIN_REMEMBERED_LENGTH = 4;

    private static final List<String> SECRETS = new CopyOnWriteArrayList<>();
    private static final Pattern URL_PARAMETER = Pattern.compile(
            "(?i)([?&;][^=&;\\s'\"]*(?:password|secret|token)[^=&;\\s'\"]*=)([^&;\\s'\"]*)");
    private static final Pattern URL_USER_INFO = Pattern.compile("(//[^/:@\\s'\"]+:)([^@/\\s'\"]+)(@)");
    private static volatile boolean installed;

    private Redaction() {
    }

    /** Masks {@code secret} in every line printed from now on; null, blank and very short values are ignored. */
    static void remember(String secret) {
        if (secret != null && secret.strip().length() >= MIN_REMEMBERED_LENGTH && !SECRETS.contains(secret)) {
            SECRETS.add(secret);
        }
    }

    /** {@code text} with every remembered secret and every secret part of a URL masked; null stays null. */
    static String redact(String text) {
        if (text == null || text.isEmpty()) {
            return text;
        }
        String out = text;
        for (String s : SECRETS) {
            if (out.contains(s)) {
                out = out.replace(s, MASK);
            }
        }
        if (out.indexOf('=') >= 0) {
            out = URL_PARAMETER.matcher(out).replaceAll(m -> Matcher.quoteReplacement(m.group(1) + MASK));
        }
        if (out.indexOf('@') >= 0) {
            out = URL_USER_INFO.matcher(out).replaceAll(m -> Matcher.quoteReplacement(m.group(1) + MASK + m.group(3)));
        }
        return out;
    }

    /**
     * Puts a redacting filter in front of {@link System#out} and {@link System#err}, before the first logger is
     * created. Idempotent.
     */
    static synchronized void install() {
        if (installed) {
            return;
        }
        installed = true;
        System.setOut(new PrintStream(new Lines(System.out), true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(new Lines(System.err), true, StandardCharsets.UTF_8));
    }

    /** Passes its bytes on a line at a time, each line redacted. */
    private static final class Lines extends FilterOutputStream {
        private final ByteArrayOutputStream line = new ByteArrayOutputStream(256);

        Lines(OutputStream out) {
            super(out);
        }

        @Override
        public synchronized void write(int b) throws IOException {
            line.write(b);
            if (b == '\n') {
                emit();
            }
        }

        @Override
        public synchronized void write(byte[] b, int off, int len) throws IOException {
            for (int i = off; i < off + len; i++) {
                write(b[i]);
            }
        }

        @Override
        public synchronized void flush() throws IOException {
            // A partial line stays until its end (or close): a secret split across two writes must not escape.
            out.flush();
        }

        @Override
        public synchronized void close() throws IOException {
            emit();
            super.close();
        }

        private void emit() throws IOException {
            if (line.size() == 0) {
                return;
            }
            out.write(redact(line.toString(StandardCharsets.UTF_8)).getBytes(StandardCharsets.UTF_8));
            line.reset();
            out.flush();
        }
    }
}
