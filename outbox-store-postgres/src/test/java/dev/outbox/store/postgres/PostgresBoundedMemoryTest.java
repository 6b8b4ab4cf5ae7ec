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
 * OutOfMemoryError. With the bound off ({@code -Doutbox.test.boundedMemory.maxInFlightBytes=off} on this test's JVM)
 * the first read takes every row at once and the same child dies of one: proven by hand, not kept as a test, since
 * a test that needs an OutOfMemoryError to pass depends on the JVM's heap accounting.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PostgresBoundedMemoryTest {
    private static final int ROWS = 24;
    private static final int ROW_BYTES = 3 << 20;
    private static final int KEYS = 4;

    @Test
    void aSmallHeapDrainsRowsOfSeveralMegabytesWithoutRunningOutOfMemory() throws Exception {
        String url = PostgresTestSupport.database("outbox_bounded_memory");
        try (HikariDataSource app = PostgresTestSupport.pool(url, "bounded_memory_app", 1)) {
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

            String bound = System.getProperty("outbox.test.boundedMemory.maxInFlightBytes", "default");
            ProcessBuilder pb = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-Xmx64m", "-XX:+ExitOnOutOfMemoryError", "-cp", System.getProperty("java.class.path"),
                    BoundedMemoryChild.class.getName(), url, PostgresTestSupport.server().username(),
                    String.valueOf(ROWS), bound).redirectErrorStream(true);
            pb.environment().put(BoundedMemoryChild.PASSWORD_VARIABLE, PostgresTestSupport.server().password());
            Process child = pb.start();
            List<String> output = readAll(child);
            assertThat(child.waitFor(90, TimeUnit.SECONDS)).as("child exited: %s", output).isTrue();
            output.stream().filter(l -> !l.contains(" INFO ")).forEach(l -> System.out.println("child: " + l));
            assertThat(String.join("\n", output)).doesNotContain("OutOfMemoryError");
            assertThat(child.exitValue()).as("child's exit status; its output: %s", output).isZero();
            String delivered = output.stream().filter(l -> l.startsWith("DELIVERED ")).findFirst().orElseThrow();
            assertThat(delivered).as("all delivered, in key order").startsWith("DELIVERED " + ROWS + " ORDER 0 ");
            long maxBytes = Long.parseLong(field(output, "MAX_IN_FLIGHT_BYTES"));
            assertThat(maxBytes).as("an eighth of the child's heap").isEqualTo((64L << 20) / 8);
            assertThat(Long.parseLong(field(output, "MAX_BYTES_IN_BROKER")))
                    .as("bytes sent and not yet acknowledged, at most").isLessThanOrEqualTo(maxBytes);
            assertThat(store.backlog()).isZero();
            assertThat(store.parked(10)).isEmpty();
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
