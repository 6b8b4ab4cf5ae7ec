package dev.outbox.benchmarks;

import dev.outbox.Dispatcher;
import dev.outbox.benchmarks.engineab.EngineAB;
import dev.outbox.benchmarks.engineab.EngineOnlyDrain;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Proves that the engine-alone comparison ({@code ./bench.sh engine-ab}) loads a revision in a class loader of its
 * own and drains through it, on a tiny workload; it measures nothing worth reading.
 */
class EngineABSmokeTest {

    @Test
    void drainsTheSameEngineTwiceInClassLoadersOfTheirOwn() throws Exception {
        String path = location(Dispatcher.class) + File.pathSeparator + location(EngineOnlyDrain.class);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        PrintStream stdout = System.out;
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        try {
            EngineAB.main(new String[] {"2000", "2", "1", path, path, "a", "b"});
        } finally {
            System.setOut(stdout);
        }
        String text = out.toString(StandardCharsets.UTF_8);
        assertThat(text).contains("warm-up   0", "round     1", "round     2", "records/s",
                "median of the per-round ratios b/a", "(2 rounds of 2,000 records after 1 warm-up rounds)");
    }

    private static String location(Class<?> type) throws Exception {
        return Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
    }
}
