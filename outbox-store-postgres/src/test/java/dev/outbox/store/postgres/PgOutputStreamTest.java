package dev.outbox.store.postgres;

import dev.outbox.spi.CommitStream.StreamMessage;
import dev.outbox.spi.StoreException;
import dev.outbox.testkit.Await;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import javax.sql.DataSource;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@link PgOutputStream} against the real Postgres of the build (started with {@code wal_level=logical}). */
class PgOutputStreamTest {
    private static final String PREFIX = "outbox";
    private static final String PUBLICATION = "outbox_walread";
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final AtomicInteger SLOTS = new AtomicInteger();

    private static String url;
    private static DataSource admin;

    private final List<PgOutputStream> opened = new ArrayList<>();
    private String slot;

    @BeforeAll
    static void database() {
        url = PostgresTestSupport.database("pg_output_stream");
        admin = PostgresTestSupport.admin(url);
        PostgresTestSupport.execute(admin, "CREATE TABLE other (id bigserial PRIMARY KEY, note text)");
    }

    @AfterEach
    void dropSlot() {
        opened.forEach(PgOutputStream::close);
        if (slot != null) {
            ReplicationSlots.dropSlotAndPublication(admin, slot, PUBLICATION);
            assertThat(PostgresTestSupport.queryLong(admin,
                    "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '" + slot + "'")).isZero();
        }
    }

    // ---- what is delivered, in which order ----

    @Test
    void transactionsArriveInCommitOrderWithTheirEndPositionAndCommitTime() throws SQLException {
        PgOutputStream stream = open(settings());
        Instant before = Instant.now().minusSeconds(5);
        try (Connection t1 = transaction(); Connection t2 = transaction()) {
            emit(t1, "t1-a");
            emit(t2, "t2-a");
            emit(t2, "t2-b");
            t2.commit();
            emit(t1, "t1-b");
            t1.commit();
        }
        List<StreamMessage> got = pollAtLeast(stream, 4);
        assertThat(texts(got)).containsExactly("t2-a", "t2-b", "t1-a", "t1-b");
        assertThat(got.get(0).endPosition()).isEqualTo(got.get(1).endPosition());
        assertThat(got.get(2).endPosition()).isEqualTo(got.get(3).endPosition());
        assertThat(got.get(2).endPosition()).isGreaterThan(got.get(1).endPosition());
        // A message's own position comes before its transaction's end; t1-a was written before t2 committed.
        assertThat(got.get(0).position()).isLessThan(got.get(1).position()).isLessThan(got.get(0).endPosition());
        assertThat(got.get(2).position()).isLessThan(got.get(0).position());
        assertThat(got).allSatisfy(m -> assertThat(m.commitTime()).isBetween(before, Instant.now().plusSeconds(5)));
        assertThat(got.get(0).commitTime()).isBeforeOrEqualTo(got.get(2).commitTime());
        Await.untilOrFail(() -> stream.readPosition() >= got.get(3).endPosition(), TIMEOUT,
                () -> "readPosition " + stream.readPosition() + " reaches the last end " + got.get(3).endPosition());
    }

    @Test
    void rolledBackOtherPrefixesAndNonTransactionalMessagesAreSkipped() throws SQLException {
        PgOutputStream stream = open(settings());
        try (Connection c = transaction()) {
            emit(c, "rolled back");
            c.rollback();
            emit(c, PREFIX + "x", "longer prefix");
            emit(c, "outbo", "shorter prefix");
            emit(c, "other", "other prefix");
            try (Statement s = c.createStatement()) {
                s.execute("SELECT pg_logical_emit_message(false, '" + PREFIX + "', 'not transactional'::bytea)");
                s.execute("INSERT INTO other (note) VALUES ('a row')");
            }
            c.commit();
            emit(c, "last");
            c.commit();
        }
        List<StreamMessage> got = pollAtLeast(stream, 1);
        assertThat(texts(got)).containsExactly("last");
        assertThat(stream.poll(10, Duration.ofMillis(200))).isEmpty();
    }

    @Test
    void aReopenedStreamResumesAfterTheConfirmedTransactionAndRedeliversTheOthers() throws SQLException {
        PgOutputStream first = open(settings());
        for (String text : List.of("a", "b", "c")) {
            emitCommitted(text);
        }
        List<StreamMessage> got = pollAtLeast(first, 3);
        assertThat(texts(got)).containsExactly("a", "b", "c");
        first.confirm(got.get(0).endPosition());
        first.confirm(got.get(0).endPosition() - 1); // lower: ignored
        first.close();
        assertThatThrownBy(() -> first.poll(1, Duration.ZERO)).isInstanceOf(StoreException.class)
                .hasMessageContaining("closed").satisfies(e -> assertThat(((StoreException) e).isRetriable()).isTrue());

        PgOutputStream second = open(settings());
        assertThat(texts(pollAtLeast(second, 2))).containsExactly("b", "c");
        assertThat(second.poll(10, Duration.ofMillis(200))).isEmpty();
    }

    @Test
    void aFullBufferLosesAndReordersNothing() throws SQLException {
        PgOutputStream stream = open(settings().withBufferedMessages(3));
        int expected = 0;
        try (Connection c = transaction()) {
            for (int t = 0; t < 60; t++) {
                for (int m = 0; m <= t % 4; m++) {
                    emit(c, Integer.toString(expected++));
                }
                c.commit();
            }
        }
        List<StreamMessage> got = new ArrayList<>();
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (got.size() < expected && System.nanoTime() < deadline) {
            got.addAll(stream.poll(2, Duration.ofMillis(100)));
        }
        List<String> want = new ArrayList<>();
        for (int i = 0; i < expected; i++) {
            want.add(Integer.toString(i));
        }
        assertThat(texts(got)).containsExactlyElementsOf(want);
        for (int i = 1; i < got.size(); i++) {
            assertThat(Long.compareUnsigned(got.get(i).endPosition(), got.get(i - 1).endPosition()))
                    .isGreaterThanOrEqualTo(0);
        }
    }

    @Test
    void aStalledHarvestDoesNotLetTheServerTimeTheStreamOut() throws SQLException {
        // The server gives up on a silent client after 1 s; the harvest does not poll for 2.5 s.
        Properties props = credentials();
        props.setProperty("options", "-c wal_sender_timeout=1000");
        WalStreamSettings defaults = settings();
        PgOutputStream stream = open(new WalStreamSettings(PgOutputStream.replicationConnections(url, props), admin,
                slot, PUBLICATION, PREFIX, Duration.ofMillis(200), defaults.takeOverTimeout(), 2));
        long created = confirmedFlush();
        PostgresTestSupport.execute(admin,
                "INSERT INTO other (note) SELECT 'row ' || i FROM generate_series(1, 1000) i");
        long unrelated = lsn("SELECT pg_current_wal_lsn()");
        for (int i = 0; i < 20; i++) {
            emitCommitted(Integer.toString(i));
        }
        long pid = activePid();
        // While the buffer is full and nothing polls, positions confirmed (below every message: only unrelated
        // rows lie there) still reach the server: the stream keeps sending status updates.
        long step = (unrelated - created) / 100;
        long startMicros = serverMicros();
        AtomicInteger seen = new AtomicInteger();
        Await.untilOrFail(() -> {
            long target = created + step * Math.min(99, seen.get() + 1);
            stream.confirm(target);
            if (confirmedFlush() >= target) {
                seen.incrementAndGet();
            }
            return seen.get() >= 5 && serverMicros() > startMicros + 2_500_000;
        }, TIMEOUT, () -> "the stalled stream keeps reporting positions for 2.5 s");
        assertThat(activePid()).isEqualTo(pid);
        List<StreamMessage> got = new ArrayList<>();
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (got.size() < 20 && System.nanoTime() < deadline) {
            got.addAll(stream.poll(20, Duration.ofMillis(100)));
        }
        assertThat(got).hasSize(20);
    }

    // ---- positions ----

    @Test
    void readPositionNeverPassesATransactionPollHasNotReturnedInFull() throws SQLException {
        PgOutputStream stream = open(settings());
        try (Connection c = transaction()) {
            emit(c, "1");
            emit(c, "2");
            emit(c, "3");
            c.commit();
        }
        List<StreamMessage> first = new ArrayList<>();
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (first.isEmpty() && System.nanoTime() < deadline) {
            first.addAll(stream.poll(2, Duration.ofMillis(100)));
        }
        assertThat(texts(first)).containsExactly("1", "2");
        long end = first.get(0).endPosition();
        // Unrelated traffic after the transaction moves the log on; the rest of the transaction is still buffered.
        PostgresTestSupport.execute(admin, "INSERT INTO other (note) VALUES ('later')");
        assertThat(Long.compareUnsigned(stream.readPosition(), end)).isNegative();
        assertThat(texts(stream.poll(2, Duration.ZERO))).containsExactly("3");
        Await.untilOrFail(() -> Long.compareUnsigned(stream.readPosition(), end) >= 0, TIMEOUT,
                () -> "readPosition reaches the end of the transaction once all of it was returned");
    }

    @Test
    void readPositionAdvancesOnUnrelatedTrafficSoConfirmingItReleasesWal() {
        PgOutputStream stream = open(settings());
        long restartBefore = lsn("SELECT restart_lsn FROM pg_replication_slots WHERE slot_name = '" + slot + "'");
        PostgresTestSupport.execute(admin,
                "INSERT INTO other (note) SELECT 'row ' || i FROM generate_series(1, 1000) i");
        long written = lsn("SELECT pg_current_wal_lsn()");
        Await.untilOrFail(() -> stream.readPosition() >= written, TIMEOUT,
                () -> "readPosition " + PgOutputStream.lsn(stream.readPosition()) + " passes unrelated writes up to "
                        + PgOutputStream.lsn(written));
        assertThat(stream.poll(10, Duration.ZERO)).isEmpty();
        Await.untilOrFail(() -> {
            // A running-transactions record lets the slot move its restart point once the client confirms past it.
            PostgresTestSupport.execute(admin, "SELECT pg_log_standby_snapshot()");
            stream.confirm(stream.readPosition());
            return lsn("SELECT restart_lsn FROM pg_replication_slots WHERE slot_name = '" + slot + "'")
                    > restartBefore;
        }, TIMEOUT, () -> "restart_lsn moves past " + PgOutputStream.lsn(restartBefore));
    }

    @Test
    void retainedBytesGrowWithUnconfirmedMessagesAndShrinkAfterConfirm() throws SQLException {
        PgOutputStream stream = open(settings());
        long empty = retained();
        try (Connection c = transaction(); PreparedStatement s = c.prepareStatement(
                "SELECT pg_logical_emit_message(true, ?, convert_to(repeat('x', 1000), 'UTF8'))")) {
            for (int t = 0; t < 100; t++) {
                s.setString(1, PREFIX);
                s.execute();
                c.commit();
            }
        }
        List<StreamMessage> got = pollAtLeast(stream, 100);
        long full = retained();
        assertThat(full).isGreaterThan(empty + 100_000);
        stream.confirm(got.get(got.size() - 1).endPosition());
        Await.untilOrFail(() -> {
            PostgresTestSupport.execute(admin, "SELECT pg_log_standby_snapshot()");
            stream.confirm(stream.readPosition());
            return retained() < full - 100_000;
        }, TIMEOUT, () -> "retainedBytes shrink below " + (full - 100_000) + " after confirm");
    }

    // ---- exclusivity and failures ----

    @Test
    void aSecondOpenWaitsThenTerminatesTheFirstAndStreams() throws Exception {
        PgOutputStream first = open(settings());
        long firstPid = activePid();
        Duration takeOver = Duration.ofSeconds(1);
        long start = System.nanoTime();
        CompletableFuture<PgOutputStream> second = CompletableFuture.supplyAsync(
                () -> open(settings().withTakeOverTimeout(takeOver)));
        PgOutputStream taken = second.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(takeOver);
        assertThat(activePid()).isNotEqualTo(firstPid);
        assertThatThrownBy(() -> {
            long deadline = System.nanoTime() + TIMEOUT.toNanos();
            while (System.nanoTime() < deadline) {
                first.poll(1, Duration.ofMillis(50));
            }
        }).isInstanceOf(StoreException.class).hasMessageContaining(slot).hasMessageContaining("failed");
        emitCommitted("after take-over");
        assertThat(texts(pollAtLeast(taken, 1))).containsExactly("after take-over");
    }

    @Test
    void closeReleasesTheSlotAtOnce() {
        PgOutputStream stream = open(settings());
        assertThat(activePid()).isNotZero();
        stream.close();
        stream.close(); // idempotent
        Await.untilOrFail(() -> activePid() == 0, Duration.ofSeconds(1), () -> "the slot is released within 1 s");
        long start = System.nanoTime();
        PgOutputStream next = open(settings().withTakeOverTimeout(Duration.ofMinutes(1)));
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
        assertThat(next.poll(1, Duration.ZERO)).isEmpty();
    }

    @Test
    void aKilledBackendFailsThePollAndANewStreamResumesWithoutLoss() throws SQLException {
        PgOutputStream stream = open(settings());
        emitCommitted("a");
        List<StreamMessage> a = pollAtLeast(stream, 1);
        stream.confirm(a.get(0).endPosition());
        Await.untilOrFail(() -> confirmedFlush() >= a.get(0).endPosition(), TIMEOUT,
                () -> "the server has the confirmed position");
        emitCommitted("b");
        long pid = activePid();
        PostgresTestSupport.execute(admin, "SELECT pg_terminate_backend(" + pid + ", 5000)");
        emitCommitted("c");
        List<String> beforeFailure = new ArrayList<>();
        assertThatThrownBy(() -> {
            long deadline = System.nanoTime() + TIMEOUT.toNanos();
            while (System.nanoTime() < deadline) {
                beforeFailure.addAll(texts(stream.poll(10, Duration.ofMillis(50))));
            }
        }).isInstanceOf(StoreException.class).hasMessageContaining("failed")
                .satisfies(e -> assertThat(((StoreException) e).isRetriable()).isTrue());
        assertThat(beforeFailure).isSubsetOf("b");

        PgOutputStream next = open(settings());
        assertThat(texts(pollAtLeast(next, 2))).containsExactly("b", "c");
    }

    @Test
    void anInvalidatedSlotIsCreatedAgainAndStreams() throws SQLException {
        WalStreamSettings settings = settings();
        emitCommitted("lost with the slot");
        long oldConfirmed = confirmedFlush();
        try {
            PostgresTestSupport.execute(admin, "ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'");
            PostgresTestSupport.execute(admin, "SELECT pg_reload_conf()");
            Await.untilOrFail(() -> {
                PostgresTestSupport.execute(admin, "INSERT INTO other (note) VALUES ('wal'); SELECT pg_switch_wal(); "
                        + "CHECKPOINT");
                return PostgresTestSupport.queryLong(admin, "SELECT count(*) FROM pg_replication_slots "
                        + "WHERE slot_name = '" + slot + "' AND wal_status = 'lost'") == 1;
            }, TIMEOUT, () -> "the slot is invalidated");
        } finally {
            PostgresTestSupport.execute(admin, "ALTER SYSTEM RESET max_slot_wal_keep_size");
            PostgresTestSupport.execute(admin, "SELECT pg_reload_conf()");
        }
        PgOutputStream stream = open(settings);
        assertThat(PostgresTestSupport.queryLong(admin, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '"
                + slot + "' AND wal_status <> 'lost' AND active_pid IS NOT NULL")).isEqualTo(1);
        assertThat(confirmedFlush()).isGreaterThan(oldConfirmed);
        emitCommitted("after");
        assertThat(texts(pollAtLeast(stream, 1))).containsExactly("after");
    }

    @Test
    void openingAMissingSlotOrPublicationNamesIt() {
        WalStreamSettings missing = WalStreamSettings.of(replication(), admin, "walread_missing", PUBLICATION,
                PREFIX);
        assertThatThrownBy(() -> PgOutputStream.open(missing)).isInstanceOf(StoreException.class)
                .hasMessageContaining("walread_missing").hasMessageContaining("does not exist")
                .satisfies(e -> assertThat(((StoreException) e).isRetriable()).isFalse());
        WalStreamSettings noPublication = WalStreamSettings.of(replication(), admin, settings().slot(),
                "walread_no_publication", PREFIX);
        assertThatThrownBy(() -> PgOutputStream.open(noPublication)).isInstanceOf(StoreException.class)
                .hasMessageContaining("publication walread_no_publication").hasMessageContaining("does not exist")
                .satisfies(e -> assertThat(((StoreException) e).isRetriable()).isFalse());
    }

    @Test
    void badSettingsAreRefusedByName() {
        assertThatThrownBy(() -> WalStreamSettings.of(replication(), admin, "Bad-Slot", PUBLICATION, PREFIX))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("Bad-Slot");
        assertThatThrownBy(() -> WalStreamSettings.of(replication(), admin, "ok", PUBLICATION, ""))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("messagePrefix");
        assertThatThrownBy(() -> settings().withBufferedMessages(0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("bufferedMessages 0");
        assertThatThrownBy(() -> settings().withStatusInterval(Duration.ofMillis(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("statusInterval PT0.001S");
        assertThatThrownBy(() -> settings().withTakeOverTimeout(Duration.ofSeconds(-1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("takeOverTimeout");
    }

    // ---- helpers ----

    /** Settings for a fresh slot of this test (created here, dropped after the test). */
    private WalStreamSettings settings() {
        if (slot == null) {
            slot = "walread_" + SLOTS.incrementAndGet();
            ReplicationSlots.createSlotAndPublication(admin, slot, PUBLICATION);
            ReplicationSlots.createSlotAndPublication(admin, slot, PUBLICATION); // idempotent
        }
        return WalStreamSettings.of(replication(), admin, slot, PUBLICATION, PREFIX)
                .withStatusInterval(Duration.ofMillis(100));
    }

    private PgOutputStream open(WalStreamSettings settings) {
        PgOutputStream stream = PgOutputStream.open(settings);
        synchronized (opened) {
            opened.add(stream);
        }
        return stream;
    }

    private static Supplier<Connection> replication() {
        return PgOutputStream.replicationConnections(url, credentials());
    }

    private static Properties credentials() {
        Properties props = new Properties();
        props.setProperty("user", PostgresTestSupport.server().username());
        props.setProperty("password", PostgresTestSupport.server().password());
        return props;
    }

    private static List<StreamMessage> pollAtLeast(PgOutputStream stream, int count) {
        List<StreamMessage> got = new ArrayList<>();
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (got.size() < count && System.nanoTime() < deadline) {
            got.addAll(stream.poll(1000, Duration.ofMillis(100)));
        }
        assertThat(got).as("messages within " + TIMEOUT).hasSizeGreaterThanOrEqualTo(count);
        return got;
    }

    private static List<String> texts(List<StreamMessage> messages) {
        return messages.stream().map(m -> new String(m.payload(), StandardCharsets.UTF_8)).toList();
    }

    private static Connection transaction() throws SQLException {
        Connection c = admin.getConnection();
        c.setAutoCommit(false);
        return c;
    }

    private static void emit(Connection c, String text) throws SQLException {
        emit(c, PREFIX, text);
    }

    private static void emit(Connection c, String prefix, String text) throws SQLException {
        try (PreparedStatement s = c.prepareStatement(
                "SELECT pg_logical_emit_message(true, ?, convert_to(?, 'UTF8'))")) {
            s.setString(1, prefix);
            s.setString(2, text);
            s.execute();
        }
    }

    private static void emitCommitted(String text) throws SQLException {
        try (Connection c = transaction()) {
            emit(c, text);
            c.commit();
        }
    }

    private long activePid() {
        return PostgresTestSupport.queryLong(admin, "SELECT coalesce(max(active_pid), 0) FROM pg_replication_slots "
                + "WHERE slot_name = '" + slot + "'");
    }

    private long confirmedFlush() {
        return lsn("SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '" + slot + "'");
    }

    private long retained() {
        try (Connection c = admin.getConnection()) {
            OptionalLong bytes = ReplicationSlots.retainedBytes(c, slot);
            assertThat(bytes).isPresent();
            return bytes.getAsLong();
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private static long serverMicros() {
        return PostgresTestSupport.queryLong(admin, "SELECT (extract(epoch FROM clock_timestamp()) * 1e6)::bigint");
    }

    private static long replyMicros(long pid) {
        return PostgresTestSupport.queryLong(admin, "SELECT coalesce(max((extract(epoch FROM reply_time) * 1e6)"
                + "::bigint), 0) FROM pg_stat_replication WHERE pid = " + pid);
    }

    private static long lsn(String sql) {
        try (Connection c = admin.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return PgOutputStream.parseLsn(rs.getString(1));
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
