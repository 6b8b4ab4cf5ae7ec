package dev.outbox.benchmarks;

import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine.ParameterException;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The database password never travels on a command line nor lands in a result: it comes from the environment or a
 * file, results show {@code ***}, and the take-over benchmark's child JVM gets it in its environment.
 */
class BenchmarkSecretsTest {
    private static final String SECRET = "s3cr3t-Pa55";
    private static final String[] EXISTING_DB = {"--db-url", "jdbc:postgresql://db.example:5432/app", "--db-user",
            "bench"};

    @Test
    void aPasswordOnTheCommandLineIsRefusedWithoutRepeatingIt() {
        assertThatThrownBy(() -> BenchmarkOptions.parse(concat(EXISTING_DB, "--db-password", SECRET), Map.of()))
                .isInstanceOf(ParameterException.class)
                .hasMessageContaining("--db-password is not accepted")
                .hasMessageContaining(BenchmarkOptions.PASSWORD_VARIABLE)
                .hasMessageContaining("--db-password-file")
                .hasMessageNotContaining(SECRET);
    }

    @Test
    void aPasswordInTheUrlIsRefusedWithoutRepeatingIt() {
        for (String url : new String[]{"jdbc:postgresql://db.example/app?sslmode=require&password=" + SECRET,
                "jdbc:mysql://bench:" + SECRET + "@db.example:3306/app"}) {
            assertThatThrownBy(() -> BenchmarkOptions.parse(new String[]{"--db-url", url, "--db-user", "bench"},
                    Map.of()))
                    .isInstanceOf(ParameterException.class)
                    .hasMessageContaining("--db-url carries a password")
                    .hasMessageContaining(BenchmarkOptions.PASSWORD_VARIABLE)
                    .hasMessageNotContaining(SECRET);
        }
    }

    @Test
    void thePasswordComesFromTheEnvironmentAndResultsShowStars() {
        BenchmarkOptions options = BenchmarkOptions.parse(EXISTING_DB,
                Map.of(BenchmarkOptions.PASSWORD_VARIABLE, SECRET));

        assertThat(options.dbPassword).isEqualTo(SECRET);
        assertThat(options.command).doesNotContain(SECRET);
        Report report = report(options);
        assertThat(report.text()).contains("user bench, password ***").doesNotContain(SECRET);
        @SuppressWarnings("unchecked")
        Map<String, Object> meta = (Map<String, Object>) report.json().get("meta");
        assertThat(meta).containsEntry("databasePassword", "***").containsEntry("databaseUser", "bench");
        assertThat(String.valueOf(report.json())).doesNotContain(SECRET);
    }

    @Test
    void theResultFilesHoldNoSecret(@TempDir Path dir) throws Exception {
        Path file = Files.writeString(dir.resolve("db-password"), SECRET + "\n");
        BenchmarkOptions options = BenchmarkOptions.parse(concat(EXISTING_DB, "--db-password-file", file.toString(),
                "--out", dir.resolve("results").toString()), Map.of());
        assertThat(options.dbPassword).isEqualTo(SECRET);

        report(options).write(options.out);

        try (var files = Files.list(options.out)) {
            List<Path> written = files.toList();
            assertThat(written).extracting(p -> p.getFileName().toString())
                    .containsExactlyInAnyOrder("results.txt", "results.csv", "results.json");
            for (Path p : written) {
                assertThat(Files.readString(p)).as(p.toString()).doesNotContain(SECRET);
            }
        }
        assertThat(Files.readString(options.out.resolve("results.txt"))).contains("password ***");
        assertThat(Files.readString(options.out.resolve("results.json"))).contains("\"databasePassword\" : \"***\"");
    }

    @Test
    void aPasswordFileWinsOverTheEnvironment(@TempDir Path dir) throws Exception {
        Path file = Files.writeString(dir.resolve("db-password"), SECRET + "\n");
        BenchmarkOptions options = BenchmarkOptions.parse(concat(EXISTING_DB, "--db-password-file", file.toString()),
                Map.of(BenchmarkOptions.PASSWORD_VARIABLE, "from-env"));

        assertThat(options.dbPassword).isEqualTo(SECRET);
        assertThat(options.maskedPassword()).isEqualTo("***");
        assertThat(report(options).text()).doesNotContain(SECRET);

        Path missing = dir.resolve("missing");
        assertThatThrownBy(() -> BenchmarkOptions.parse(concat(EXISTING_DB, "--db-password-file", missing.toString()),
                Map.of())).isInstanceOf(ParameterException.class).hasMessageContaining(missing.toString());
    }

    @Test
    void noPasswordIsNoStars() {
        BenchmarkOptions options = BenchmarkOptions.parse(EXISTING_DB, Map.of());
        assertThat(options.dbPassword).isEmpty();
        assertThat(report(options).text()).contains("user bench, no password");
    }

    @Test
    void theChildJvmGetsNoPasswordAsASystemProperty() throws Exception {
        try (PostgresDatabase db = new PostgresDatabase(TestServers.postgres(), "on", 2)) {
            assertThat(db.childProperties().keySet()).noneMatch(k -> k.toLowerCase().contains("password"));
            assertThat(db.childProperties()).containsKeys("bench.jdbc.url", "bench.jdbc.user");
        }
    }

    /** The report of a run that has not started: what its header and metadata say about the options. */
    private static Report report(BenchmarkOptions options) {
        Report report = new Report(options);
        report.dispatcher = dev.outbox.DispatcherConfig.builder().build();
        return report;
    }

    private static String[] concat(String[] head, String... tail) {
        String[] all = new String[head.length + tail.length];
        System.arraycopy(head, 0, all, 0, head.length);
        System.arraycopy(tail, 0, all, head.length, tail.length);
        return all;
    }
}
