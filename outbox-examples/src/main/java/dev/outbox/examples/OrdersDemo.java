package dev.outbox.examples;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.DispatcherListener;
import dev.outbox.OutboxRecord;
import dev.outbox.ParkedRecord;
import dev.outbox.broker.kafka.KafkaLeaderTransport;
import dev.outbox.broker.rabbitmq.RabbitMqMessageBroker;
import dev.outbox.broker.rabbitmq.RabbitMqTopology;
import dev.outbox.spi.LeaderTransport;
import dev.outbox.store.sql.SqlLeaderTransport;
import dev.outbox.broker.kafka.KafkaMessageBroker;
import dev.outbox.spi.MessageBroker;
import dev.outbox.store.postgres.PostgresStore;
import picocli.CommandLine;

import java.io.PrintStream;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * The orders demo: an orders service commits orders and their outbox messages in one transaction, from several
 * threads, over many customers (the message keys); several {@link Dispatcher}s elect a leader over Kafka (or by a
 * lease in Postgres) and the leader publishes the outbox to a Kafka topic (or, with {@code --broker rabbitmq}, to a
 * RabbitMQ exchange over single-active-consumer queues); halfway through, the leader is closed and another takes
 * over; a consumer checks that every order event arrived, in order per customer.
 *
 * <p>By default it starts an embedded PostgreSQL 17 and an in-process Kafka broker (no Docker, nothing to
 * install); flags or environment variables point it at real servers instead ({@code ./demo.sh --help}). Run it
 * with {@code ./demo.sh} from the repository root.
 */
public final class OrdersDemo {
    /** Database schema of every table the demo creates. */
    static final String SCHEMA = "outbox_demo";

    private final DemoOptions options;
    private final PrintStream out;
    private final long startNanos = System.nanoTime();
    private final String runId = UUID.randomUUID().toString();
    private final LongAdder published = new LongAdder();
    private final AtomicInteger failuresShown = new AtomicInteger();
    private final AtomicReference<String> leader = new AtomicReference<>("-");
    private volatile long leaderSinceNanos;

    OrdersDemo(DemoOptions options, PrintStream out) {
        this.options = options;
        this.out = out;
    }

    /**
     * Runs the demo; exits with 0 when every record arrived in order, 1 when not, 2 for bad options (picocli
     * prints what is wrong, or the usage help for {@code --help}), 3 on other errors.
     */
    public static void main(String[] args) {
        DemoCommand command = new DemoCommand();
        int code = DemoCommand.commandLine(command).setExecutionStrategy(parsed -> {
            Integer help = CommandLine.executeHelpRequest(parsed);
            if (help != null) {
                return help;
            }
            DemoOptions options;
            try {
                options = command.options(System.getenv());
            } catch (IllegalArgumentException e) {
                throw new CommandLine.ParameterException(parsed.commandSpec().commandLine(), e.getMessage());
            }
            try {
                return new OrdersDemo(options, System.out).run().passed() ? 0 : 1;
            } catch (Exception e) {
                System.err.println("The demo could not run: " + e);
                e.printStackTrace();
                return 3;
            }
        }).execute(args);
        System.out.flush();
        System.exit(code); // also stops the embedded servers (a shutdown hook of TestServers)
    }

    /** Runs the whole demo and prints its summary. */
    DemoSummary run() throws Exception {
        boolean rabbitMq = options.broker().equals("rabbitmq");
        String brokerName = rabbitMq ? "RabbitMQ" : "Kafka";
        say("Outbox demo: orders -> Postgres outbox -> " + options.dispatchers() + " dispatchers ("
                + (options.election().equals("database") ? "a lease in Postgres" : "NELI over Kafka") + ") -> "
                + brokerName + " -> consumer");
        DemoServers servers = new DemoServers(options, this::say);
        String[] postgres = servers.postgres();
        String bootstrap = rabbitMq ? null : servers.kafka();
        String rabbitMqUri = rabbitMq ? servers.rabbitMq() : null;

        HikariConfig pool = new HikariConfig();
        pool.setJdbcUrl(postgres[0]);
        pool.setUsername(postgres[1]);
        pool.setPassword(postgres[2]);
        pool.setMaximumPoolSize(options.writers() + 2 * options.dispatchers() + 2);
        pool.setPoolName("demo");
        try (HikariDataSource dataSource = new HikariDataSource(pool)) {
            try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
                s.execute("CREATE SCHEMA IF NOT EXISTS " + SCHEMA);
            }
            // One store for the whole process: it is immutable and thread-safe. (Three service instances would
            // each have their own; they would all point at the same table.)
            PostgresStore store = PostgresStore.builder(dataSource).schema(SCHEMA).build();
            store.createSchema();
            OrderService.createTables(dataSource, SCHEMA, options.customers());
            RabbitMqTopology topology = rabbitMq ? servers.declareTopology(rabbitMqUri) : null;
            boolean created = !rabbitMq && servers.createTopic(bootstrap);
            say("Schema " + SCHEMA + " ready (customers, orders, " + store.table() + ", " + store.parkedTable()
                    + "); " + (rabbitMq ? "exchange " + options.topic() + " (consistent hash) over "
                    + topology.queues().size() + " single-active-consumer queues declared" : "topic "
                    + options.topic() + (created ? " created with " + options.partitions() + " partitions"
                    : " exists")));

            LatencyClock clock = new LatencyClock();
            OrderService orders = new OrderService(dataSource, store.publisher(), SCHEMA, options.topic(), runId,
                    clock);
            OrderEventsVerifier verifier = rabbitMq
                    ? OrderEventsVerifier.startRabbitMq(rabbitMqUri, topology.queues(), runId, clock)
                    : OrderEventsVerifier.start(bootstrap, options.topic(), runId, clock);
            return runWith(store, orders, verifier, clock, bootstrap, rabbitMqUri);
        }
    }

    private DemoSummary runWith(PostgresStore store, OrderService orders, OrderEventsVerifier verifier,
                                LatencyClock clock, String bootstrap, String rabbitMqUri) throws Exception {
        List<Dispatcher> dispatchers = new ArrayList<>();
        List<String> names = new ArrayList<>();
        ScheduledExecutorService ticker = Executors.newSingleThreadScheduledExecutor(r -> daemon(r, "demo-progress"));
        AtomicInteger writerNumber = new AtomicInteger();
        ExecutorService writers = Executors.newFixedThreadPool(options.writers(),
                r -> daemon(r, "demo-writer-" + writerNumber.incrementAndGet()));
        long takeoverMillis = -1;
        String takeoverText;
        double writeSeconds;
        try {
            DispatcherConfig config = DispatcherConfig.builder()
                    .markBatchSize(500)
                    .metricsInterval(Duration.ofSeconds(1))
                    .build();
            for (int i = 1; i <= options.dispatchers(); i++) {
                String name = "dispatcher-" + i;
                names.add(name);
                dispatchers.add(dispatcher(name, store, bootstrap, rabbitMqUri, config));
            }
            dispatchers.forEach(Dispatcher::start);
            say("Started " + names + "; waiting for the leader election");
            if (!await(Duration.ofSeconds(60), () -> dispatchers.stream().anyMatch(Dispatcher::isLeader))) {
                throw new IllegalStateException("no dispatcher became the leader within 60 s");
            }

            ticker.scheduleAtFixedRate(new Progress(store, orders, verifier, dispatchers), 1, 1, TimeUnit.SECONDS);
            say(String.format("Placing orders for %s: %d writer threads, %s over %,d customers", human(
                    options.duration()), options.writers(), options.rate() == 0 ? "flat out"
                    : String.format("%,d orders/s", options.rate()), options.customers()));
            long writeStart = System.nanoTime();
            long writeEnd = writeStart + options.duration().toNanos();
            for (int w = 0; w < options.writers(); w++) {
                writers.execute(() -> write(orders, writeEnd));
            }

            boolean takeover = options.takeover() && options.dispatchers() > 1;
            if (takeover) {
                sleepUntil(writeStart + options.duration().toNanos() / 2);
                int index = indexOfLeader(dispatchers);
                if (index < 0) {
                    takeoverText = "not measured: no dispatcher was leading halfway through";
                } else {
                    Dispatcher old = dispatchers.get(index);
                    String oldName = names.get(index);
                    say(oldName + " is the leader: closing it to show the take-over");
                    long closing = System.nanoTime();
                    old.close();
                    long closed = System.nanoTime();
                    leader.compareAndSet(oldName, "-"); // a closing dispatcher reports no revocation
                    say(String.format("%s closed in %d ms (stopped marking, drained in-flight records, %s)", oldName,
                            millis(closed - closing), options.election().equals("database") ? "released its lease"
                            : "left the group"));
                    if (await(Duration.ofSeconds(60),
                            () -> leaderSinceNanos > closing && !leader.get().equals(oldName))) {
                        takeoverMillis = millis(leaderSinceNanos - closing);
                        takeoverText = String.format("%d ms from closing %s to %s leading (close() took %d ms)",
                                takeoverMillis, oldName, leader.get(), millis(closed - closing));
                    } else {
                        takeoverText = "no other dispatcher took over within 60 s";
                    }
                }
            } else {
                takeoverText = "not measured (" + (options.dispatchers() > 1 ? "--no-takeover" : "one dispatcher")
                        + ")";
            }

            writers.shutdown();
            if (!writers.awaitTermination(options.duration().toMillis() + 60_000, TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException("writers did not stop");
            }
            writeSeconds = (System.nanoTime() - writeStart) / 1e9;
            say(String.format("Writers stopped: %,d orders committed; waiting for the last records", orders.committed()));
            await(options.drainTimeout(), () -> verifier.distinct() >= orders.committed()
                    && dispatchers.stream().allMatch(d -> d.inFlightRecords() == 0));
        } finally {
            ticker.shutdownNow();
            writers.shutdownNow();
            for (Dispatcher d : dispatchers) {
                d.close();
            }
            verifier.close();
        }
        return summarize(store, orders, verifier, clock, takeoverText, takeoverMillis, writeSeconds);
    }

    /** A dispatcher publishing to RabbitMQ if {@code rabbitMqUri} is set, else to Kafka at {@code bootstrap}. */
    private Dispatcher dispatcher(String name, PostgresStore store, String bootstrap, String rabbitMqUri,
                                  DispatcherConfig config) {
        MessageBroker broker;
        Duration deliveryTimeout; // how long a send of a deposed leader may still land: the election waits it out
        if (rabbitMqUri != null) {
            RabbitMqMessageBroker rabbitMq = RabbitMqMessageBroker.builder()
                    .uri(rabbitMqUri) // topic = exchange, customer = routing key; publisher confirms
                    .connectionName("outbox-demo-" + name)
                    .build();
            broker = rabbitMq;
            deliveryTimeout = rabbitMq.confirmTimeout();
        } else {
            KafkaMessageBroker kafka = KafkaMessageBroker.builder()
                    .bootstrapServers(bootstrap)
                    .build();
            broker = kafka;
            deliveryTimeout = kafka.deliveryTimeout();
        }
        LeaderTransport election = options.election().equals("database")
                // A lease row next to the outbox table, on the database's clock; its take-over of the epoch fences.
                ? SqlLeaderTransport.builder(store)
                        .dispatcherConfig(config)
                        .deliveryTimeout(deliveryTimeout)
                        .build()
                : KafkaLeaderTransport.builder()
                        .bootstrapServers(bootstrap)
                        .topic("outbox-demo-leader") // one leader topic (and group) per outbox
                        .dispatcherConfig(config)
                        .deliveryTimeout(deliveryTimeout)
                        .build();
        return Dispatcher.builder(store, new CountingBroker(broker, published))
                .config(config)
                .leaderTransport(election)
                .listener(new Events(name))
                .name(name)
                .build();
    }

    private void write(OrderService orders, long endNanos) {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        long period = options.rate() == 0 ? 0 : (long) (1e9 * options.writers() / options.rate());
        long next = System.nanoTime();
        while (System.nanoTime() < endNanos && !Thread.currentThread().isInterrupted()) {
            if (period > 0) {
                next += period;
                long wait = next - System.nanoTime();
                if (wait > 0) {
                    LockSupport.parkNanos(wait);
                } else if (wait < -1_000_000_000L) {
                    next = System.nanoTime(); // more than a second behind: do not burst to catch up
                }
            } else {
                next = System.nanoTime(); // flat out: each order is due when its writer gets to it
            }
            orders.placeOrder(1 + random.nextInt(options.customers()), 100 + random.nextInt(100_000), next);
        }
    }

    private DemoSummary summarize(PostgresStore store, OrderService orders, OrderEventsVerifier verifier,
                                  LatencyClock clock, String takeoverText, long takeoverMillis, double writeSeconds) {
        long missing = 0;
        int keysMissing = 0;
        Map<String, long[]> seen = verifier.perKey();
        for (Map.Entry<String, OrderService.KeyRange> e : orders.written().entrySet()) {
            long[] s = seen.get(e.getKey());
            long got = s == null ? 0 : Math.min(s[2], e.getValue().count());
            if (got < e.getValue().count()) {
                missing += e.getValue().count() - got;
                keysMissing++;
            }
        }
        List<ParkedRecord> parked = store.parked(1000);
        DemoSummary summary = new DemoSummary(orders.committed(), orders.rolledBack(), orders.written().size(),
                writeSeconds, verifier.received(), verifier.distinct(), missing, keysMissing,
                verifier.violationCount(), verifier.violations(), takeoverText, takeoverMillis,
                clock.commitToConsume(), clock.dueToConsume(),
                parked.size(), store.backlog(), verifier.failure());
        summary.print(out);
        return summary;
    }

    // ---- events and progress --------------------------------------------------------------------------------

    /** Prints one dispatcher's events; callbacks run on the dispatcher's threads, so they only print and count. */
    private final class Events implements DispatcherListener {
        private final String name;

        Events(String name) {
            this.name = name;
        }

        @Override
        public void leaderAcquired(UUID leaderId) {
            leaderSinceNanos = System.nanoTime();
            leader.set(name);
            say(name + " is now the LEADER (leader id " + leaderId.toString().substring(0, 8) + "…)");
        }

        @Override
        public void leaderRefreshed(UUID leaderId) {
            say(name + " took a fresh leader id after a failed mark, to re-mark in order");
        }

        @Override
        public void leaderRevoked() {
            leader.compareAndSet(name, "-");
            say(name + " handed leadership over (its in-flight records were drained first)");
        }

        @Override
        public void leaderFenced() {
            leader.compareAndSet(name, "-");
            say(name + " FENCED itself: it stopped publishing at once");
        }

        @Override
        public void recordParked(ParkedRecord record) {
            say(name + " parked record " + record.id() + " (key " + record.key() + "): " + record.reason());
        }

        @Override
        public void failure(String operation, Throwable error) {
            if (failuresShown.incrementAndGet() <= 10) {
                say(name + ": " + operation + " failed, will retry: " + error);
            }
        }
    }

    /** The progress line, once a second. */
    private final class Progress implements Runnable {
        private final PostgresStore store;
        private final OrderService orders;
        private final OrderEventsVerifier verifier;
        private final List<Dispatcher> dispatchers;
        private long lastWritten;
        private long lastPublished;
        private long lastNanos = System.nanoTime();

        Progress(PostgresStore store, OrderService orders, OrderEventsVerifier verifier, List<Dispatcher> dispatchers) {
            this.store = store;
            this.orders = orders;
            this.verifier = verifier;
            this.dispatchers = dispatchers;
        }

        @Override
        public void run() {
            try {
                long now = System.nanoTime();
                double seconds = Math.max(1e-3, (now - lastNanos) / 1e9);
                long written = orders.committed();
                long published = OrdersDemo.this.published.sum();
                int inFlight = dispatchers.stream().mapToInt(Dispatcher::inFlightRecords).sum();
                say(String.format("written %,8d (%,6.0f/s) | published %,8d (%,6.0f/s) | consumed %,8d"
                                + " | backlog %,6d | in flight %,5d | leader %s", written,
                        (written - lastWritten) / seconds, published, (published - lastPublished) / seconds,
                        verifier.distinct(), store.backlog(), inFlight, leader.get()));
                lastWritten = written;
                lastPublished = published;
                lastNanos = now;
            } catch (RuntimeException e) {
                say("progress: " + e);
            }
        }
    }

    /**
     * Counts the records Kafka acknowledged, for the progress line: a decorator is all it takes to observe a
     * {@link MessageBroker}. Thread-safe, like the broker it wraps.
     */
    private static final class CountingBroker implements MessageBroker {
        private final MessageBroker delegate;
        private final LongAdder acknowledged;

        CountingBroker(MessageBroker delegate, LongAdder acknowledged) {
            this.delegate = delegate;
            this.acknowledged = acknowledged;
        }

        @Override
        public CompletionStage<Void> send(OutboxRecord record) {
            return delegate.send(record).whenComplete((ok, error) -> {
                if (error == null) {
                    acknowledged.increment();
                }
            });
        }

        @Override
        public boolean flush(Duration timeout) {
            return delegate.flush(timeout);
        }

        @Override
        public void sendPending() {
            delegate.sendPending();
        }

        @Override
        public void close(Duration timeout) {
            delegate.close(timeout);
        }
    }

    // ---- helpers --------------------------------------------------------------------------------------------

    private void say(String line) {
        synchronized (out) {
            out.printf("[%5.1fs] %s%n", (System.nanoTime() - startNanos) / 1e9, line);
        }
    }

    private static int indexOfLeader(List<Dispatcher> dispatchers) {
        for (int i = 0; i < dispatchers.size(); i++) {
            if (dispatchers.get(i).isLeader()) {
                return i;
            }
        }
        return -1;
    }

    private static boolean await(Duration timeout, BooleanSupplier condition) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                return false;
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
        }
        return true;
    }

    private static void sleepUntil(long nanos) throws InterruptedException {
        long wait;
        while ((wait = nanos - System.nanoTime()) > 0) {
            TimeUnit.NANOSECONDS.sleep(wait);
        }
    }

    private static long millis(long nanos) {
        return TimeUnit.NANOSECONDS.toMillis(nanos);
    }

    private static String human(Duration d) {
        return d.toMillis() % 1000 == 0 ? d.toSeconds() + " s" : d.toMillis() + " ms";
    }

    private static Thread daemon(Runnable r, String name) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        return t;
    }
}
