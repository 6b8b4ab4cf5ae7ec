package dev.outbox.benchmarks;

import java.time.LocalTime;
import java.time.format.DateTimeFormatter;

/** Progress lines on standard error, so that standard output carries only the report. Thread-safe. */
final class Progress {
    private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("HH:mm:ss");

    private Progress() {
    }

    static void say(String format, Object... args) {
        System.err.println("[bench " + LocalTime.now().format(TIME) + "] " + String.format(format, args));
        System.err.flush();
    }
}
