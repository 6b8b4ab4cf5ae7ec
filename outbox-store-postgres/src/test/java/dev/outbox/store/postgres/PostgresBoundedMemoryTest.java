package dev.outbox.store.postgres;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.OutboxMessage;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Memory bounded in bytes ({@code maxInFlightBytes}): a dispatcher in a child JVM with a 64 MiB heap drains rows of
 * 3 MiB each, 72 MiB in all, with the default bound (an eighth of the heap), and does not die of an
 * OutOfMemoryError. With the bound off the first read takes every row at once, which the heap cannot hold: the same
 * child, on the same rows, dies of {@code OutOfMemoryError: Java heap space} before it delivers any, and leaves them
 * all in the table (a restart would read the same rows and die again). 72 MiB of values cannot fit a 64 MiB heap
 * whatever the JVM's accounting, so that death is certain, not a matter of tuning.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PostgresBoundedMemoryTest {
    private static final int ROWS = 24;
    private static final int ROW_BYTES = 3 << 20;
    private static final int KEYS = 4;
    /** The status of a JVM ended by {@code -XX:+ExitOnOutOfMemoryError}. */
    private static final int OUT_OF_MEMORY_EXIT = 3;

    @Test
    void aSmallHeapDrainsRowsOfSeveralMegabytesWithoutRunningOutOfMemory() throws Exception {
        String url = PostgresTestSupport.database("outbox_bounded_memory");
        try (HikariDataSource app = PostgresTestSupport.pool(url, "bounded_memory_app", 1)) {
            PostgresStore store = writeRows(app);

            long started = System.nanoTime();
            Child child = runChild(url, "default");
            long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
            List<String> output = child.output();
            output.stream().filter(l -> !l.contains(" INFO ")).forEach(l -> System.out.println("child: " + l));
            assertThat(String.join("\n", output)).doesNotContain("OutOfMemoryError");
            assertThat(child.status()).as("child's exit status; its output: %s", output).isZero();
            String delivered = output.stream().filter(l -> l.startsWith("DELIVERED ")).findFirst().orElseThrow();
            assertThat(delivered).as("all delivered, in key order").startsWith("DELIVERED " + ROWS + " ORDER 0 ");
            long maxBytes = Long.parseLong(field(output, "MAX_IN_FLIGHT_BYTES"));
            assertThat(maxBytes).as("an eighth of the child's heap").isEqualTo((64L << 20) / 8);
            assertThat(Long.parseLong(field(output, "MAX_BYTES_IN_BROKER")))
                    .as("bytes sent and not yet acknowledged, at most").isLessThanOrEqualTo(maxBytes);
            assertThat(store.backlog()).isZero();
            assertThat(store.parked(10)).isEmpty();
            System.out.printf("bounded memory: the child (64 MiB heap, maxInFlightBytes %d) drained %d rows of %d MiB"
                    + " in %d ms (its whole run), at most %s bytes unacknowledged%n", maxBytes, ROWS, ROW_BYTES >> 20,
                    millis, field(output, "MAX_BYTES_IN_BROKER"));
        }
    }

    @Test
    void withTheBoundOffTheSameChildDiesOfOutOfMemoryErrorAndDeliversNothing() throws Exception {
        String url = PostgresTestSupport.database("outbox_unbounded_memory");
        try (HikariDataSource app = PostgresTestSupport.pool(url, "unbounded_memory_app", 1)) {
            PostgresStore store = writeRows(app);

            long started = System.nanoTime();
            Child child = runChild(url, "off");
            long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
            List<String> output = child.output();
            output.stream().filter(l -> !l.contains(" INFO ")).forEach(l -> System.out.println("child: " + l));
            assertThat(field(output, "MAX_IN_FLIGHT_BYTES")).as("the bound, off").isEqualTo(
                    String.valueOf(Long.MAX_VALUE));
            assertThat(child.status()).as("child's exit status (ExitOnOutOfMemoryError); its output: %s", output)
                    .isEqualTo(OUT_OF_MEMORY_EXIT);
            assertThat(output).as("the child's output")
                    .anyMatch(l -> l.contains("java.lang.OutOfMemoryError: Java heap space"))
                    .noneMatch(l -> l.startsWith("DELIVERED "));
            assertThat(store.backlog()).as("every row still in the table").isEqualTo(ROWS);
            assertThat(store.parked(10)).isEmpty();
            System.out.printf("unbounded memory: the child (64 MiB heap, maxInFlightBytes off) died of"
                    + " OutOfMemoryError %d ms after its start, %d rows of %d MiB left in the table%n", millis,
                    store.backlog(), ROW_BYTES >> 20);
        }
    }

    /** Writes {@value #ROWS} rows of {@value #ROW_BYTES} random bytes, over {@value #KEYS} keys; returns the store. */
    private static PostgresStore writeRows(HikariDataSource app) throws Exception {
        PostgresStore store = PostgresStore.builder(app).build();
        store.createSchema();
        Random random = new Random(20);
        byte[] value = new byte[ROW_BYTES];
        for (int i = 0; i < ROWS; i++) {
            random.nextBytes(value); // incompressible: TOAST does not shrink it
            OutboxMessage m = OutboxMessage.builder("large", "key-" + (i % KEYS)).value(value)
                    .header("seq", ByteBuffer.allocate(4).putInt(i).array()).build();
            try (Connection c = app.getConnection()) {
                c.setAutoCommit(false);
                store.publisher().publish(c, m);
                c.commit();
            }
        }
        assertThat(store.backlog()).isEqualTo(ROWS);
        return store;
    }

    /** A finished child: its exit status and output. */
    private record Child(int status, List<String> output) {
    }

    /** Runs {@link BoundedMemoryChild} with a 64 MiB heap and {@code maxInFlightBytes} {@code bound} to its end. */
    private static Child runChild(String url, String bound) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx64m", "-XX:+ExitOnOutOfMemoryError", "-cp", System.getProperty("java.class.path"),
                BoundedMemoryChild.class.getName(), url, PostgresTestSupport.server().username(),
                String.valueOf(ROWS), bound).redirectErrorStream(true);
        pb.environment().put(BoundedMemoryChild.PASSWORD_VARIABLE, PostgresTestSupport.server().password());
        Process child = pb.start();
        try {
            List<String> output = readAll(child);
            assertThat(child.waitFor(90, TimeUnit.SECONDS)).as("child exited: %s", output).isTrue();
            return new Child(child.exitValue(), output);
        } finally {
            child.destroyForcibly();
        }
    }

    /** The word after {@code name} in the child's output. */
    private static String field(List<String> output, String name) {
        for (String line : output) {
            String[] words = line.split(" ");
            for (int i = 0; i + 1 < words.length; i++) {
                if (words[i].equals(name)) {
                    return words[i + 1];
                }
            }
        }
        throw new AssertionError(name + " not in the child's output: " + output);
    }

    private static List<String> readAll(Process child) throws IOException {
        List<String> lines = new ArrayList<>();
        try (var in = new java.io.BufferedReader(new java.io.InputStreamReader(child.getInputStream(),
                StandardCharsets.UTF_8))) {
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                lines.add(line);
            }
        }
        return lines;
    }
}
