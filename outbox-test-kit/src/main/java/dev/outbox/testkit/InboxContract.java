package dev.outbox.testkit;

import dev.outbox.FailedMessage;
import dev.outbox.Inbox;
import dev.outbox.InboxHandlerException;
import dev.outbox.MessageIds;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import javax.sql.DataSource;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The contract of an {@link Inbox}, as a JUnit 5 suite every SQL inbox runs against a real database: a new id runs
 * the handler once and commits with its effect, a repeat does nothing, a failed handler or a rollback leaves the id
 * new, two transactions racing for one id apply it once, failures are recorded once and read back (by consumer, one
 * by its id, and the consumers that have any), expired entries are purged and fresh ones kept.
 *
 * <p>Each test gets a fresh inbox over fresh tables from {@link #createInbox()} and an effects table
 * ({@code effects (message_id VARCHAR(36), consumer VARCHAR(200))}) created by the suite.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
public abstract class InboxContract {
    /** The inbox under test. */
    protected Inbox inbox;
    private String effects;

    /**
     * A fresh inbox over fresh, empty tables, with its schema created. Called before each test.
     *
     * @return the inbox under test, over tables no other test uses (a unique table name, for example), in
     *         {@link #dataSource()}'s database
     */
    protected abstract Inbox createInbox();

    /**
     * The database the inbox's tables are in; the suite's transactions take connections from it.
     *
     * @return the data source; it must allow two connections at once (two transactions race for one id)
     */
    protected abstract DataSource dataSource();

    /**
     * Makes every entry of {@code inbox} look processed {@code age} earlier than it was: for example
     * {@code UPDATE <table> SET processed_at = processed_at - <age>}.
     *
     * @param inbox the inbox {@link #createInbox()} returned
     * @param age   how far to move the entries back, beyond the inbox's retention (seconds are precise enough)
     */
    protected abstract void age(Inbox inbox, Duration age);

    /**
     * Drops what {@link #createInbox()} created. Called after each test. Default: nothing.
     *
     * @param inbox the inbox {@link #createInbox()} returned for the test
     */
    protected void disposeInbox(Inbox inbox) {
    }

    @BeforeEach
    final void createFresh() throws SQLException {
        inbox = createInbox();
        effects = "effects_" + Long.toHexString(System.nanoTime());
        execute("CREATE TABLE " + effects + " (message_id VARCHAR(36) NOT NULL, consumer VARCHAR(200) NOT NULL)");
    }

    @AfterEach
    final void disposeFresh() throws SQLException {
        execute("DROP TABLE " + effects);
        disposeInbox(inbox);
    }

    @Test
    void aNewIdRunsTheHandlerAndARepeatDoesNothing() throws SQLException {
        UUID id = MessageIds.next();
        assertThat(processAndCommit("billing", id)).isTrue();
        assertThat(processAndCommit("billing", id)).as("the same id again").isFalse();
        assertThat(processAndCommit("shipping", id)).as("another consumer has its own entries").isTrue();
        assertThat(processAndCommit("billing", MessageIds.next())).isTrue();
        assertThat(effects(id)).containsExactlyInAnyOrder("billing", "shipping");
    }

    @Test
    void aHandlerThatThrowsOrARollbackLeavesTheIdNew() throws SQLException {
        UUID id = MessageIds.next();
        try (Connection c = begin()) {
            assertThatThrownBy(() -> inbox.process(c, "billing", id, tx -> {
                effect(tx, "billing", id);
                throw new IllegalStateException("boom");
            })).isInstanceOf(InboxHandlerException.class).hasRootCauseMessage("boom")
                    .hasMessageContaining(id.toString());
            c.rollback();
        }
        try (Connection c = begin()) {
            assertThat(inbox.process(c, "billing", id, tx -> effect(tx, "billing", id))).isTrue();
            c.rollback();
        }
        assertThat(effects(id)).isEmpty();
        assertThat(processAndCommit("billing", id)).as("after two rollbacks").isTrue();
        assertThat(effects(id)).containsExactly("billing");
    }

    @Test
    void twoTransactionsRacingForOneIdApplyItOnce() throws Exception {
        UUID id = MessageIds.next();
        CountDownLatch firstInserted = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            Future<Boolean> first = pool.submit(() -> {
                try (Connection c = begin()) {
                    boolean ran = inbox.process(c, "billing", id, tx -> {
                        effect(tx, "billing", id);
                        firstInserted.countDown();
                        assertThat(release.await(30, TimeUnit.SECONDS)).isTrue();
                    });
                    c.commit();
                    return ran;
                }
            });
            assertThat(firstInserted.await(30, TimeUnit.SECONDS)).isTrue();
            Future<Boolean> second = pool.submit(() -> processAndCommit("billing", id));
            assertThat(Await.until(second::isDone, Duration.ofMillis(500)))
                    .as("the second waits while the first's entry is uncommitted").isFalse();
            release.countDown();
            assertThat(first.get(30, TimeUnit.SECONDS)).isTrue();
            assertThat(second.get(30, TimeUnit.SECONDS)).as("the second sees the first's commit").isFalse();
        } finally {
            release.countDown();
            pool.shutdownNow();
        }
        assertThat(effects(id)).containsExactly("billing");
    }

    @Test
    void aFailureIsRecordedOnceWithItsReasonAndIsNotAProcessedEntry() throws SQLException {
        UUID id = MessageIds.next();
        FailedMessage failed = new FailedMessage("billing", id, "orders", 3, 42, "k-1",
                "v".getBytes(StandardCharsets.UTF_8), 5, "IllegalStateException: no such account", null);
        for (int i = 0; i < 2; i++) {
            try (Connection c = begin()) {
                inbox.recordFailure(c, failed);
                c.commit();
            }
        }
        List<FailedMessage> listed = inbox.failed("billing", 10);
        assertThat(listed).hasSize(1);
        FailedMessage f = listed.get(0);
        assertThat(f.messageId()).isEqualTo(id);
        assertThat(f.topic()).isEqualTo("orders");
        assertThat(f.partition()).isEqualTo(3);
        assertThat(f.offset()).isEqualTo(42);
        assertThat(f.key()).isEqualTo("k-1");
        assertThat(f.value()).isEqualTo("v".getBytes(StandardCharsets.UTF_8));
        assertThat(f.attempts()).isEqualTo(5);
        assertThat(f.reason()).isEqualTo("IllegalStateException: no such account");
        assertThat(f.failedAt()).isNotNull();
        assertThat(inbox.failed("shipping", 10)).isEmpty();
        assertThat(processAndCommit("billing", id)).as("a failed message is not a processed one").isTrue();
    }

    @Test
    void theConsumersWithFailuresAndOneFailedMessageAreRead() throws SQLException {
        assertThat(inbox.failedConsumers(10)).as("no failure yet").isEmpty();
        UUID first = MessageIds.next();
        UUID second = MessageIds.next();
        UUID shipped = MessageIds.next();
        byte[] value = {0, 1, (byte) 0xff};
        try (Connection c = begin()) {
            inbox.recordFailure(c, new FailedMessage("shipping", shipped, "orders", 0, 7, null, null, 1,
                    "no address", null));
            inbox.recordFailure(c, new FailedMessage("billing", first, "orders", 1, 8, "k-1", value, 5,
                    "IllegalStateException: no such account", null));
            inbox.recordFailure(c, new FailedMessage("billing", second, "orders", 1, 9, "k-2", null, 5, "again", null));
            c.commit();
        }
        processAndCommit("audit", MessageIds.next());

        assertThat(inbox.failedConsumers(10)).as("each once, by name; a processed entry is no failure")
                .containsExactly("billing", "shipping");
        assertThat(inbox.failedConsumers(1)).containsExactly("billing");

        FailedMessage read = inbox.failedMessage("billing", first).orElseThrow();
        assertThat(read).isEqualTo(inbox.failed("billing", 10).get(0));
        assertThat(read.value()).isEqualTo(value);
        assertThat(read.key()).isEqualTo("k-1");
        assertThat(read.offset()).isEqualTo(8);
        assertThat(read.failedAt()).isNotNull();
        FailedMessage tombstone = inbox.failedMessage("shipping", shipped).orElseThrow();
        assertThat(tombstone.value()).isNull();
        assertThat(tombstone.key()).isNull();
        assertThat(inbox.failedMessage("shipping", first)).as("another consumer's failure").isEmpty();
        assertThat(inbox.failedMessage("billing", MessageIds.next())).isEmpty();

        assertThatThrownBy(() -> inbox.failedConsumers(0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("limit");
        assertThatThrownBy(() -> inbox.failedMessage(" ", first)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("consumer");
        assertThatThrownBy(() -> inbox.failedMessage("billing", null)).isInstanceOf(NullPointerException.class)
                .hasMessageContaining("messageId");
    }

    @Test
    void purgeDeletesExpiredEntriesInBatchesAndKeepsFreshOnes() throws SQLException {
        List<UUID> old = new ArrayList<>();
        for (int i = 0; i < 23; i++) {
            old.add(MessageIds.next());
        }
        try (Connection c = begin()) {
            for (UUID id : old) {
                inbox.process(c, "billing", id, tx -> {
                });
            }
            c.commit();
        }
        age(inbox, inbox.retention().plusMinutes(5));
        UUID fresh = MessageIds.next();
        processAndCommit("billing", fresh);

        assertThat(inbox.purgeExpired()).isEqualTo(old.size());
        assertThat(inbox.purgeExpired()).as("nothing left to purge").isZero();
        assertThat(processAndCommit("billing", fresh)).as("a fresh entry is kept").isFalse();
        assertThat(processAndCommit("billing", old.get(0))).as("an expired entry is gone").isTrue();
    }

    @Test
    void badArgumentsAreRejectedNamingThem() throws SQLException {
        try (Connection c = begin()) {
            assertThatThrownBy(() -> inbox.process(c, " ", MessageIds.next(), tx -> {
            })).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("consumer");
            assertThatThrownBy(() -> inbox.process(c, "x".repeat(201), MessageIds.next(), tx -> {
            })).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("200");
            assertThatThrownBy(() -> inbox.process(c, "billing", null, tx -> {
            })).isInstanceOf(NullPointerException.class).hasMessageContaining("messageId");
            c.rollback();
        }
        assertThatThrownBy(() -> inbox.failed("billing", 0)).hasMessageContaining("limit");
    }

    // ------------------------------------------------------------------------------------------ helpers

    private boolean processAndCommit(String consumer, UUID id) throws SQLException {
        try (Connection c = begin()) {
            boolean ran = inbox.process(c, consumer, id, tx -> effect(tx, consumer, id));
            c.commit();
            return ran;
        }
    }

    private Connection begin() throws SQLException {
        Connection c = dataSource().getConnection();
        c.setAutoCommit(false);
        return c;
    }

    private void effect(Connection c, String consumer, UUID id) throws SQLException {
        try (PreparedStatement s = c.prepareStatement("INSERT INTO " + effects + " (message_id, consumer)"
                + " VALUES (?, ?)")) {
            s.setString(1, id.toString());
            s.setString(2, consumer);
            s.executeUpdate();
        }
    }

    private List<String> effects(UUID id) throws SQLException {
        List<String> consumers = new ArrayList<>();
        try (Connection c = dataSource().getConnection();
             PreparedStatement s = c.prepareStatement("SELECT consumer FROM " + effects + " WHERE message_id = ?")) {
            s.setString(1, id.toString());
            try (ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    consumers.add(rs.getString(1));
                }
            }
        }
        return consumers;
    }

    private void execute(String sql) throws SQLException {
        try (Connection c = dataSource().getConnection(); Statement s = c.createStatement()) {
            if (!c.getAutoCommit()) {
                s.execute(sql);
                c.commit();
            } else {
                s.execute(sql);
            }
        }
    }
}
