package dev.outbox.store.postgres;

import org.junit.jupiter.api.Test;

import javax.sql.DataSource;
import java.io.IOException;
import java.lang.reflect.Proxy;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The guide's DDL (docs/stores/postgres.md, the SQL block after {@code <!-- ddl: schemaSql -->}) is exactly what
 * {@link PostgresStore#schemaSql()} returns with the default names, which is what {@code createSchema()} runs and what the
 * sidecar's {@code schema} command prints: a reader who copies it gets the complete schema, functions included. On a
 * mismatch the expected text is written to {@code target/schemaSql.sql}, to paste into the page.
 */
class PostgresStoreSchemaDocumentationTest {
    private static final Path PAGE = Path.of(System.getProperty("basedir", ".")).resolve("../docs/stores/postgres.md")
            .normalize();

    @Test
    void theGuidesDdlIsWhatTheStoreRuns() throws IOException {
        DataSource unused = (DataSource) Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[]{DataSource.class}, (proxy, method, args) -> {
                    throw new UnsupportedOperationException("building a store must not connect");
                });
        String expected = PostgresStore.builder(unused).build().schemaSql().strip();
        String documented = documented();
        if (!expected.equals(documented)) {
            Files.writeString(Path.of(System.getProperty("basedir", ".")).resolve("target/schemaSql.sql"),
                    expected + "\n");
        }
        assertThat(documented).as("the DDL in %s (expected text in target/schemaSql.sql)", PAGE).isEqualTo(expected);
    }

    private static String documented() throws IOException {
        List<String> lines = Files.readAllLines(PAGE);
        int marker = lines.indexOf("<!-- ddl: schemaSql -->");
        assertThat(marker).as("the marker <!-- ddl: schemaSql --> in %s", PAGE).isNotNegative();
        int open = marker + 1;
        while (lines.get(open).isBlank()) {
            open++;
        }
        assertThat(lines.get(open)).as("a fenced block after the marker").startsWith("```");
        int close = open + 1;
        while (!lines.get(close).startsWith("```")) {
            close++;
        }
        return String.join("\n", lines.subList(open + 1, close)).strip();
    }
}
