package dev.outbox.store.sql;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.ParkedRecord;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.StoreException;
import dev.outbox.testservers.Jdbc;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

import javax.sql.DataSource;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * What every SQL store does beyond the contract, the same way, since {@link SqlStore} and {@link SqlPublisher}
 * hold it once: the publisher in the caller's transaction, failures translated with the database's code, timeouts,
 * argument checks. A subclass starts the database and sets {@link #admin} and {@link #pool} in a
 * {@code @BeforeAll} method, and adds the tests of what only its store does.
 *
 * @param <S> the store
 * @param <B> its builder
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 60, unit = TimeUnit.SECONDS)
public abstract class SqlStoreTests<S extends SqlStore, B extends SqlStore.Builder<B, S>> {
    private final AtomicInteger tables = new AtomicInteger();
    /** A non-pooling connection source for raw SQL. */
    protected DataSource admin;
    /** The pool the stores under test take their connections from. */
    protected HikariDataSource pool;

    private final Database<S, B> database;

    /**
     * What a store's tests differ in.
     *
     * @param dialect               the store's dialect
     * @param quote                 the database's identifier quote
     * @param builders              a builder of the store under test on a data source
     * @param missingTableCode      the code the database reports for a missing table, as the error message names it
     * @param shortStatementTimeout a statement timeout short enough for a test, long enough for the database
     * @param timeoutMessage        what the message of a statement that ran into its timeout contains
     * @param <S>                   the store
     * @param <B>                   its builder
     */
    public record Database<S extends SqlStore, B extends SqlStore.Builder<B, S>>(
            SqlDialect dialect, char quote, Function<DataSource, B> builders, String missingTableCode,
            Duration shortStatementTimeout, String timeoutMessage) {
    }

    protected SqlStoreTests(Database<S, B> database) {
        this.database = database;
    }

    @AfterAll
    final void closePool() {
        pool.close();
    }

    /** A table name no other test of the class uses. */
    protected final String newTableName() {
        return "t_" + tables.incrementAndGet();
    }

    /** A builder on {@link #pool} for a table of the test's own (not created yet). */
    protected final B builder() {
        return database.builders().apply(pool).table(newTableName());
    }

    /** A store on a table of the test's own, created. */
    protected final S newStore() {
        S store = builder().build();
        store.createSchema();
        return store;
    }

    /** Runs {@code sql} on a connection of {@link #admin}. */
    protected final void sql(String sql) {
        Jdbc.execute(admin, sql);
    }

    /** Writes {@code messages} with the store's publisher on a connection in auto-commit mode. */
    protected final void commit(S store, OutboxMessage... messages) {
        try (Connection c = pool.getConnection()) {
            store.publisher().publish(c, List.of(messages));
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The record's value as UTF-8 text. */
    protected static String valueOf(OutboxRecord record) {
        return new String(record.message().value(), StandardCharsets.UTF_8);
    }

    /**
     * Marks every row of {@code store}: the {@code good} keys come back as records and the keys of {@code bad} as
     * rejected rows, in id order, each with a reason that contains the expected text; parks the rejected rows and
     * checks that only the good ones are left.
     */
    protected final void markAndParkTheRejected(SqlStore store, List<String> good, Map<String, String> bad) {
        List<String> badKeys = List.copyOf(bad.keySet());
        MarkResult result = store.mark(UUID.randomUUID(), 100);
        assertThat(result.records()).extracting(OutboxRecord::key).containsExactlyElementsOf(good);
        assertThat(result.rejected()).extracting(MarkResult.Rejected::key).containsExactlyElementsOf(badKeys);
        Map<Long, String> park = new HashMap<>();
        for (MarkResult.Rejected r : result.rejected()) {
            assertThat(r.reason()).as("the reason for %s", r.key()).contains(bad.get(r.key()));
            park.put(r.id(), "unreadable: " + r.reason());
        }
        store.park(park);
        List<ParkedRecord> parked = store.parked(100);
        assertThat(parked).extracting(ParkedRecord::key).containsExactlyElementsOf(badKeys);
        assertThat(parked.get(0).reason()).isEqualTo("unreadable: " + result.rejected().get(0).reason());
        assertThat(store.backlog()).isEqualTo(good.size());
    }

    @Test
    void tableAndSchemaNamesAreValidatedAndTheErrorNamesTheBadValue() {
        String quote = String.valueOf(database.quote());
        B builder = database.builders().apply(pool);
        for (String bad : List.of("Outbox", "out-box", "outbox; DROP TABLE users", "1outbox", "out box",
                quote + "outbox" + quote, "outbox\u0000", "outbox" + quote + "; DROP TABLE x; --")) {
            assertThatThrownBy(() -> builder.table(bad)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("table name '" + bad + "'");
            assertThatThrownBy(() -> builder.schema(bad)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("schema name '" + bad + "'");
        }
        int longest = database.dialect().tableNames().maxTableLength();
        String tooLong = "t".repeat(longest + 1);
        assertThatThrownBy(() -> builder.table(tooLong)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(tooLong).hasMessageContaining(Integer.toString(longest))
                .hasMessageContaining("_parked");
        SqlStore longestStore = builder.table("t".repeat(longest)).build();
        assertThat(longestStore.parkedTable()).isEqualTo(quote + "t".repeat(longest) + "_parked" + quote);
        longestStore.createSchema();
        sql("DROP TABLE " + longestStore.table() + ", " + longestStore.parkedTable());
        int identifier = database.dialect().tableNames().maxIdentifierLength();
        assertThatThrownBy(() -> builder.schema("s".repeat(identifier + 1)))
                .hasMessageContaining(Integer.toString(identifier));
        assertThatThrownBy(() -> builder.table("")).hasMessageContaining("empty");
        assertThatThrownBy(() -> builder.table(null)).hasMessageContaining("null");
        assertThatThrownBy(() -> builder.statementTimeout(Duration.ZERO)).hasMessageContaining("PT0S");
        assertThatThrownBy(() -> builder.statementTimeout(Duration.ofMillis(-5))).hasMessageContaining("-0.005");
        assertThatThrownBy(() -> builder.statementTimeout(null)).hasMessageContaining("statementTimeout");
        assertThatThrownBy(() -> builder.maxKeyLength(0)).hasMessageContaining("0");
        assertThatThrownBy(() -> database.builders().apply(null)).hasMessageContaining("dataSource");
    }

    @Test
    void defaultsAndQuotedNames() {
        String quote = String.valueOf(database.quote());
        SqlStore store = database.builders().apply(pool).build();
        assertThat(store.table()).isEqualTo(quote + "outbox" + quote);
        assertThat(store.parkedTable()).isEqualTo(quote + "outbox_parked" + quote);
        assertThat(store.statementTimeout()).isEqualTo(Duration.ofSeconds(30));
        assertThat(store.maxKeyLength()).isEqualTo(database.dialect().defaultMaxKeyLength());
        SqlStore qualified = database.builders().apply(pool).schema("app").table("events").build();
        String events = quote + "app" + quote + "." + quote + "events";
        assertThat(qualified.table()).isEqualTo(events + quote);
        assertThat(qualified.schemaSql()).contains("CREATE TABLE IF NOT EXISTS " + events + quote + " (")
                .contains("CREATE TABLE IF NOT EXISTS " + events + "_parked" + quote + " (")
                .doesNotContain("${");
    }

    @Test
    void createSchemaIsIdempotentAndSafeConcurrently() throws Exception {
        S store = builder().build();
        ExecutorService threads = Executors.newFixedThreadPool(4);
        try {
            List<Future<?>> calls = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                calls.add(threads.submit(store::createSchema));
            }
            for (Future<?> call : calls) {
                call.get(30, TimeUnit.SECONDS);
            }
        } finally {
            threads.shutdownNow();
        }
        store.createSchema();
        commit(store, OutboxMessage.of("topic", "k", "v"));

        assertThat(store.mark(UUID.randomUUID(), 10).records()).extracting(SqlStoreTests::valueOf)
                .containsExactly("v");
    }

    @Test
    void publisherChecksEveryKeyBeforeWritingAnyInCodePoints() throws SQLException {
        S store = builder().maxKeyLength(8).build();
        store.createSchema();
        SqlPublisher publisher = (SqlPublisher) store.publisher();
        try (Connection c = pool.getConnection()) {
            c.setAutoCommit(false);
            assertThatThrownBy(() -> publisher.publish(c, List.of(OutboxMessage.of("t", "ok", "v"),
                    OutboxMessage.of("t", "much-too-long", "v"))))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("message 1").hasMessageContaining("13 characters")
                    .hasMessageContaining("maxKeyLength 8").hasMessageContaining("much-too-long");
            // 8 characters, 16 UTF-16 units: fits, because keys are counted in code points
            publisher.publish(c, OutboxMessage.of("t", "🔑🔑🔑🔑🔑🔑🔑🔑", "emoji"));
            assertThatThrownBy(() -> publisher.publish((Connection) null, List.of()))
                    .hasMessageContaining("connection");
            c.commit();
        }
        assertThat(store.mark(UUID.randomUUID(), 10).records()).extracting(OutboxRecord::key)
                .as("only the valid message was written").containsExactly("🔑🔑🔑🔑🔑🔑🔑🔑");
    }

    @Test
    void publisherWritesInTheCallersTransactionOnAConnectionOrAJdbiHandle() throws SQLException {
        S store = newStore();
        SqlPublisher publisher = (SqlPublisher) store.publisher();
        try (Connection c = pool.getConnection()) {
            c.setAutoCommit(false);
            publisher.publish(c, OutboxMessage.of("t", "k", "rolled back"));
            c.rollback();
            publisher.publish(c, List.of(OutboxMessage.of("t", "k", "one"), OutboxMessage.of("t", "k", "two")));
            assertThat(store.backlog()).as("not committed yet").isZero();
            c.commit();
            assertThat(c.getAutoCommit()).as("auto-commit untouched").isFalse();
            assertThat(c.isClosed()).as("connection left open").isFalse();
        }
        Jdbi.create(pool).useTransaction(handle -> {
            publisher.publish(handle, OutboxMessage.of("t", "k", "three"));
            publisher.publish(handle, List.of(OutboxMessage.of("t", "k", "four")));
        });
        Jdbi.create(pool).useTransaction(handle -> {
            publisher.publish(handle, OutboxMessage.of("t", "k", "rolled back too"));
            handle.rollback();
        });

        assertThat(store.mark(UUID.randomUUID(), 10).records()).extracting(SqlStoreTests::valueOf)
                .containsExactly("one", "two", "three", "four");
    }

    @Test
    void publisherReportsADatabaseFailureAsAStoreException() throws SQLException {
        SqlStore store = builder().build(); // no createSchema: the table is missing
        try (Connection c = pool.getConnection()) {
            assertThatThrownBy(() -> store.publisher().publish(c, OutboxMessage.of("t", "k", "v")))
                    .isInstanceOfSatisfying(StoreException.class, e -> assertThat(e.isRetriable()).isFalse())
                    .hasMessageContaining(database.missingTableCode()).hasMessageContaining(store.table());
        }
    }

    @Test
    void aMissingTableIsAnErrorThatIsNotRetriable() {
        SqlStore store = builder().build();

        assertThatThrownBy(() -> store.mark(UUID.randomUUID(), 10))
                .isInstanceOfSatisfying(StoreException.class, e -> {
                    assertThat(e.isRetriable()).isFalse();
                    assertThat(e.getCause()).isInstanceOf(Exception.class);
                })
                .hasMessageContaining(database.missingTableCode())
                .hasMessageContaining("marking up to 10 rows of " + store.table());
        assertThatThrownBy(() -> store.purge(List.of(1L))).isInstanceOf(StoreException.class);
        assertThatThrownBy(store::backlog).isInstanceOf(StoreException.class);
        assertThatThrownBy(() -> store.parked(1)).isInstanceOf(StoreException.class);
    }

    @Test
    void aStatementThatExceedsTheTimeoutFailsRetriablyInsteadOfHanging() throws Exception {
        S store = builder().statementTimeout(database.shortStatementTimeout()).build();
        store.createSchema();
        commit(store, OutboxMessage.of("t", "k", "v"));
        try (Connection locker = admin.getConnection()) {
            locker.setAutoCommit(false);
            locker.createStatement().execute("SELECT id FROM " + store.table() + " FOR UPDATE");
            long started = System.nanoTime();

            assertThatThrownBy(() -> store.mark(UUID.randomUUID(), 10))
                    .isInstanceOfSatisfying(StoreException.class, e -> assertThat(e.isRetriable()).isTrue())
                    .hasMessageContaining(database.timeoutMessage());
            assertThatThrownBy(() -> store.purge(List.of(1L)))
                    .isInstanceOfSatisfying(StoreException.class, e -> assertThat(e.isRetriable()).isTrue());
            assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(10));
            locker.rollback();
        }
        assertThat(store.mark(UUID.randomUUID(), 10).records()).hasSize(1);
        assertThat(store.backlog()).isEqualTo(1);
    }

    @Test
    void argumentsAreValidated() {
        S store = newStore();
        assertThatThrownBy(() -> store.purge(null)).hasMessageContaining("ids");
        assertThatThrownBy(() -> store.purge(Arrays.asList(1L, null))).hasMessageContaining("position 1");
        assertThatThrownBy(() -> store.reset(null, List.of(1L))).hasMessageContaining("leaderId");
        assertThatThrownBy(() -> store.mark(null, 1)).hasMessageContaining("leaderId");
        assertThatThrownBy(() -> store.mark(UUID.randomUUID(), 0)).hasMessageContaining("limit");
        assertThatThrownBy(() -> store.park(null)).hasMessageContaining("reasons");
        Map<Long, String> nullId = new HashMap<>();
        nullId.put(null, "x");
        assertThatThrownBy(() -> store.park(nullId)).hasMessageContaining("null id");
        assertThatThrownBy(() -> store.parked(0)).hasMessageContaining("0");
        assertThatThrownBy(() -> store.replay(null)).hasMessageContaining("ids");
    }
}
