package dev.outbox.store.postgres;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.Header;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.MessageBroker;
import dev.outbox.testkit.Await;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The child JVM of {@link PostgresBoundedMemoryTest}: runs a dispatcher over the Postgres store with the heap it was
 * given, until the outbox is empty, and prints {@code DELIVERED <records> ORDER <violations> MAX_BYTES_IN_BROKER
 * <most value bytes sent and not yet acknowledged> MILLIS <from start to drained>}. The broker keeps no
 * payload (a broker's memory is not the dispatcher's): it acknowledges each record 20 ms after the send and
 * remembers only its key and sequence number, to check per-key order.
 *
 * <p>Arguments: JDBC URL, user, expected records, {@code default} or a {@code maxInFlightBytes} ({@code off} for
 * none). The password comes in the environment variable {@link #PASSWORD_VARIABLE}, never on the command line.
 */
public final class BoundedMemoryChild {
    static final String PASSWORD_VARIABLE = "OUTBOX_TEST_CHILD_DB_PASSWORD";

    private BoundedMemoryChild() {
    }

    public static void main(String[] args) throws Exception {
        String url = args[0];
        String user = args[1];
        int expected = Integer.parseInt(args[2]);
        DispatcherConfig.Builder config = DispatcherConfig.builder()
                .pollInterval(Duration.ofMillis(20))
                .markBackoff(Duration.ofMillis(5))
                .heartbeatTimeout(Duration.ofSeconds(2));
        if (args[3].equals("off")) {
            config.maxInFlightBytes(Long.MAX_VALUE);
        } else if (!args[3].equals("default")) {
            config.maxInFlightBytes(Long.parseLong(args[3]));
        }
        HikariConfig pool = new HikariConfig();
        pool.setJdbcUrl(url);
        pool.setUsername(user);
        pool.setPassword(System.getenv().getOrDefault(PASSWORD_VARIABLE, ""));
        pool.setMaximumPoolSize(3);
        DroppingBroker broker = new DroppingBroker();
        DispatcherConfig built = config.build();
        System.out.println("HEAP " + Runtime.getRuntime().maxMemory() + " MAX_IN_FLIGHT_BYTES "
                + built.maxInFlightBytes());
        long start = System.nanoTime();
        try (HikariDataSource ds = new HikariDataSource(pool)) {
            PostgresStore store = PostgresStore.builder(ds).statementTimeout(Duration.ofSeconds(20)).build();
            try (Dispatcher dispatcher = Dispatcher.builder(store, broker).config(built).name("bounded").build()) {
                dispatcher.start();
                Await.untilOrFail(() -> store.backlog() == 0 || dispatcher.state() != Dispatcher.State.RUNNING,
                        Duration.ofSeconds(60), () -> "backlog " + store.backlog());
                if (dispatcher.state() != Dispatcher.State.RUNNING) {
                    System.out.println("DISPATCHER " + dispatcher.state() + " " + dispatcher.health());
                    System.exit(1);
                }
            }
        } finally {
            broker.close();
        }
        System.out.println("DELIVERED " + broker.acknowledged.get() + " ORDER " + broker.violations.get()
                + " MAX_BYTES_IN_BROKER " + broker.maxPendingBytes.get() + " MILLIS "
                + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
        System.exit(broker.acknowledged.get() >= expected && broker.violations.get() == 0 ? 0 : 1);
    }

    /** A broker that forgets payloads: acknowledges after 20 ms, checks that each key's sequence never decreases. */
    static final class DroppingBroker implements MessageBroker {
        final AtomicLong acknowledged = new AtomicLong();
        final AtomicLong violations = new AtomicLong();
        final AtomicLong pending = new AtomicLong();
        final AtomicLong pendingBytes = new AtomicLong();
        final AtomicLong maxPendingBytes = new AtomicLong();
        private final Map<String, Integer> lastOfKey = new HashMap<>();
        private final ScheduledExecutorService acks = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "dropping-broker");
            t.setDaemon(true);
            return t;
        });

        @Override
        public CompletionStage<Void> send(OutboxRecord record) {
            String key = record.key();
            int sequence = 0;
            for (Header h : record.message().headers()) {
                if (h.name().equals("seq")) {
                    sequence = ByteBuffer.wrap(h.value()).getInt();
                }
            }
            synchronized (lastOfKey) {
                Integer last = lastOfKey.put(key, sequence);
                if (last != null && last > sequence) {
                    violations.incrementAndGet();
                }
            }
            long size = record.message().valueSize();
            pending.incrementAndGet();
            maxPendingBytes.accumulateAndGet(pendingBytes.addAndGet(size), Math::max);
            CompletableFuture<Void> done = new CompletableFuture<>();
            acks.schedule(() -> {
                pendingBytes.addAndGet(-size);
                acknowledged.incrementAndGet();
                pending.decrementAndGet();
                done.complete(null);
            }, 20, TimeUnit.MILLISECONDS);
            return done;
        }

        @Override
        public boolean flush(Duration timeout) {
            return Await.until(() -> pending.get() == 0, timeout);
        }

        @Override
        public void close(Duration timeout) {
            acks.shutdown();
        }
    }
}
