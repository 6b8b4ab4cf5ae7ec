package dev.outbox.sidecar;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code sidecar.inboxes}, bound in process: the guide's example (the file its copy in docs/sidecar.md is checked
 * against) binds as it says, no inbox is the default, and a misspelt key or value is refused naming it and the
 * nearest known one, as every other key.
 */
class SidecarInboxConfigTest {
    /** The guide's example: docs/sidecar.md holds a copy, which ReadmeSnippetsTest compares with this file. */
    static final Path EXAMPLE = Path.of("src", "test", "resources", "dev", "outbox", "sidecar", "inbox-example.yaml");

    @TempDir
    Path dir;

    @Test
    void theGuidesExampleBindsAsItSays() {
        System.setProperty("SHARED_DB_PASSWORD", "example-password");
        try {
            SidecarProperties p = SidecarConfig.load(EXAMPLE).properties();

            assertThat(p.getInboxes()).containsOnlyKeys("billing", "shared");
            SidecarProperties.Inbox billing = p.getInboxes().get("billing");
            assertThat(billing.getDatasource().getUrl()).isEqualTo("jdbc:postgresql://billing-db:5432/billing");
            assertThat(billing.getDatasource().getPasswordFile()).isEqualTo("/run/secrets/billing-db");
            assertThat(billing.getDatasource().getMaximumPoolSize()).as("an inbox's default pool").isEqualTo(2);
            assertThat(billing.getTable()).isEqualTo("inbox");
            assertThat(billing.getType()).as("detected").isNull();
            assertThat(billing.getConsumers()).as("every consumer with failures").isEmpty();
            SidecarProperties.Inbox shared = p.getInboxes().get("shared");
            assertThat(shared.getSchema()).isEqualTo("app");
            assertThat(shared.getTable()).as("the default").isEqualTo("inbox");
            assertThat(shared.getConsumers()).containsExactly("refunds", "invoices");
            assertThat(shared.getDatasource().getPassword()).isEqualTo("example-password");
        } finally {
            System.clearProperty("SHARED_DB_PASSWORD");
        }
    }

    @Test
    void noInboxIsTheDefault() throws IOException {
        SidecarProperties p = load("""
                sidecar:
                  kafka:
                    bootstrap-servers: kafka:9092
                """).properties();

        assertThat(p.getInboxes()).isEmpty();
        assertThat(p.getOutboxes().isEmpty()).isTrue();
    }

    @Test
    void aMisspeltInboxKeyIsNamedWithTheNearestKnownOne() {
        assertThatThrownBy(() -> load("""
                sidecar:
                  inboxes:
                    billing:
                      tabel: inbox
                """)).isInstanceOf(SidecarConfigException.class).hasMessage("configuration error:"
                + " sidecar.inboxes.billing.tabel = 'inbox': unknown key (did you mean"
                + " 'sidecar.inboxes.billing.table'?)");
        assertThatThrownBy(() -> load("""
                sidecar:
                  inboxes:
                    billing:
                      datasource:
                        ulr: jdbc:postgresql://db/app
                """)).isInstanceOf(SidecarConfigException.class).hasMessage("configuration error:"
                + " sidecar.inboxes.billing.datasource.ulr = 'jdbc:postgresql://db/app': unknown key (did you mean"
                + " 'sidecar.inboxes.billing.datasource.url'?)");
        assertThatThrownBy(() -> load("""
                sidecar:
                  inbox:
                    billing:
                      table: inbox
                """)).isInstanceOf(SidecarConfigException.class).hasMessageStartingWith("configuration error:"
                + " sidecar.inbox.billing.table = 'inbox': unknown key (did you mean 'sidecar.inboxes'?)");
    }

    @Test
    void aMisspeltDatabaseTypeIsNamedWithTheChoices() {
        assertThatThrownBy(() -> load("""
                sidecar:
                  inboxes:
                    billing:
                      type: postgress
                """)).isInstanceOf(SidecarConfigException.class).hasMessage("configuration error:"
                + " sidecar.inboxes.billing.type = 'postgress': not a store type; write postgres or mysql");
    }

    private SidecarConfig.Loaded load(String yaml) throws IOException {
        Path file = dir.resolve("outbox.yaml");
        Files.writeString(file, yaml);
        return SidecarConfig.load(file);
    }
}
