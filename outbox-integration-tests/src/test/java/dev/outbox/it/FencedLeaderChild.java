package dev.outbox.it;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.Dispatcher;
import dev.outbox.DispatcherHealth;
import dev.outbox.DispatcherListener;
import dev.outbox.DispatcherObserver;
import dev.outbox.Header;
import dev.outbox.OutboxRecord;
import dev.outbox.broker.kafka.KafkaLeaderTransport;
import dev.outbox.broker.kafka.KafkaMessageBroker;
import dev.outbox.spi.DeliveryException;
import dev.outbox.spi.MessageBroker;
import dev.outbox.spi.StoreFencedException;
import dev.outbox.store.postgres.PostgresStore;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;

/**
 * The leader of {@link FencedLeaderEndToEndTest}, in a JVM of its own so that the test can freeze it (SIGSTOP): a
 * dispatcher over a {@code PostgresStore} (storage fencing on, the default), a {@code KafkaMessageBroker} with a
 * transactional id (broker fencing on) and a {@code KafkaLeaderTransport} or a {@code SqlLeaderTransport} (the
 * lease in the database), with the test's tuning. It reads commands
 * on standard input: {@code HOLD} — from now on hold back the broker's acknowledgements (the records are on the
 * broker; the dispatcher hears of it only on {@code RELEASE}), as a leader paused between an acknowledgement and its
 * purge would; {@code HOLD_SENDS} — from now on hold back the sends themselves (the dispatcher believes them under
 * way; Kafka sees them only on {@code RELEASE}), as a leader paused between reading records and sending them would;
 * {@code RELEASE} (the held sends go on to Kafka first, then the held acknowledgements); {@code STOP}. It reports on
 * standard output, each line starting with {@value #PREFIX}: {@code LEADER}, {@code HOLDING}, {@code HOLDING_SENDS},
 * {@code SEND_HELD} for each send held, {@code RELEASED n}, {@code HELD_SENDS <held> <refused> <acknowledged>
 * <failed>} once Kafka has answered every send held back by {@code HOLD_SENDS} (how many were held, how many Kafka
 * refused as fenced, acknowledged, or failed otherwise), {@code FENCED <operation>} for every write the database
 * refused as fenced, {@code PURGED n} for every purge it accepted, {@code REFUSED_SENDS n} (the records Kafka refused so far as fenced) when sends are refused,
 * {@code STOOD_DOWN}, {@code STATUS <status>} on each change of its health status. The sends held back go to Kafka with the header {@value #HELD_HEADER}, so that a consumer can
 * tell them from the successor's copies of the same records.
 * The database password comes from the environment ({@value #PASSWORD_VARIABLE}).
 */
public final class FencedLeaderChild {
    static final String PREFIX = "@@ ";
    static final String PASSWORD_VARIABLE = "OUTBOX_TEST_DB_PASSWORD";
    /** The header marking a send that was held back (its value: the record's id). */
    static final String HELD_HEADER = "e2e-held-send";

    private FencedLeaderChild() {
    }

    static synchronized void report(String line) {
        System.out.println(PREFIX + line);
        System.out.flush();
    }

    /**
     * Arguments: JDBC URL, database user, Kafka bootstrap servers, data topic (names the transactional id), leader
     * topic, election ({@link Scenario.Election}'s name).
     */
    public static void main(String[] args) throws Exception {
        HikariConfig hc = new HikariConfig();
        hc.setJdbcUrl(args[0]);
        hc.setUsername(args[1]);
        hc.setPassword(System.getenv(PASSWORD_VARIABLE));
        hc.setMaximumPoolSize(4);
        hc.setConnectionTimeout(5_000);
        try (HikariDataSource pool = new HikariDataSource(hc)) {
            Dispatcher dispatcher = FencedLeaderEndToEndTest.dispatcher("zombie", pool, args[2],
                    Scenario.Election.valueOf(args[5]), args[4], FencedLeaderEndToEndTest.transactionalId(args[3]), kafka -> new HoldingBroker(kafka),
                    new DispatcherListener() {
                        @Override
                        public void leaderAcquired(UUID leaderId) {
                            report("LEADER");
                        }

                        @Override
                        public void leaderFenced() {
                            report("STOOD_DOWN");
                        }

                        @Override
                        public void failure(String operation, Throwable error) {
                            if (error instanceof StoreFencedException) {
                                report("FENCED " + operation);
                            } else if (error instanceof DeliveryException d && d.isFenced()) {
                                report("REFUSED_SENDS " + HoldingBroker.last.delegate.fencedRecords());
                            }
                        }
                    });
            HoldingBroker broker = HoldingBroker.last;
            dispatcher.addObserver(new DispatcherObserver() {
                @Override
                public void statusChanged(DispatcherHealth.Status status) {
                    report("STATUS " + status);
                }

                @Override
                public void purged(int rows, Duration duration) {
                    report("PURGED " + rows);
                }
            });
            dispatcher.start();
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            for (String line = in.readLine(); line != null && !line.equals("STOP"); line = in.readLine()) {
                if (line.equals("HOLD")) {
                    broker.hold();
                    report("HOLDING");
                } else if (line.equals("HOLD_SENDS")) {
                    broker.holdSends();
                    report("HOLDING_SENDS");
                } else if (line.equals("RELEASE")) {
                    report("RELEASED " + broker.release());
                }
            }
            dispatcher.close();
        }
    }

    /** The Kafka broker, whose sends or acknowledgements can be held back. Thread-safe. */
    static final class HoldingBroker implements MessageBroker {
        static volatile HoldingBroker last;
        private final KafkaMessageBroker delegate;
        private final List<Runnable> held = new ArrayList<>();
        private final List<Runnable> heldSends = new ArrayList<>();
        private boolean holding;
        private boolean holdingSends;
        /** The sends released from {@code HOLD_SENDS}, -1 before; then Kafka's answers to them. */
        private int heldSendsReleased = -1;
        private int heldSendsRefused;
        private int heldSendsAcknowledged;
        private int heldSendsFailed;

        HoldingBroker(KafkaMessageBroker delegate) {
            this.delegate = delegate;
            last = this;
        }

        synchronized void hold() {
            holding = true;
        }

        synchronized void holdSends() {
            holdingSends = true;
        }

        /**
         * Stops holding and passes on what was held, the sends first (so that Kafka sees them before anything the
         * dispatcher does once it hears of the acknowledgements); returns how many acknowledgements.
         */
        int release() {
            List<Runnable> sends;
            List<Runnable> out;
            synchronized (this) {
                holding = false;
                holdingSends = false;
                sends = new ArrayList<>(heldSends);
                heldSends.clear();
                out = new ArrayList<>(held);
                held.clear();
            }
            heldSendsAnswered(sends.size(), 0, 0, 0);
            sends.forEach(Runnable::run);
            out.forEach(Runnable::run);
            return out.size();
        }

        /**
         * Counts Kafka's answers to the sends released from {@code HOLD_SENDS} ({@code released}, once, when they
         * are: -1 for an answer) and reports {@code HELD_SENDS} once each has its answer.
         */
        private void heldSendsAnswered(int released, int refused, int acknowledged, int failed) {
            String line;
            synchronized (this) {
                if (released >= 0) {
                    if (heldSendsReleased >= 0) {
                        return; // released before (close releases again)
                    }
                    heldSendsReleased = released;
                }
                heldSendsRefused += refused;
                heldSendsAcknowledged += acknowledged;
                heldSendsFailed += failed;
                if (heldSendsReleased < 0
                        || heldSendsRefused + heldSendsAcknowledged + heldSendsFailed != heldSendsReleased) {
                    return;
                }
                line = "HELD_SENDS " + heldSendsReleased + " " + heldSendsRefused + " " + heldSendsAcknowledged
                        + " " + heldSendsFailed;
            }
            report(line);
        }

        @Override
        public CompletionStage<Void> send(OutboxRecord record) {
            CompletableFuture<Void> answer = new CompletableFuture<>();
            synchronized (this) {
                if (holdingSends) {
                    OutboxRecord marked = new OutboxRecord(record.id(), record.createdAt(),
                            record.message().withHeader(Header.of(HELD_HEADER, Long.toString(record.id()))),
                            record.attempts(), record.leaderId(), record.messageId(), record.nextAttemptAt());
                    heldSends.add(() -> pass(marked, answer, true));
                    report("SEND_HELD");
                    return answer;
                }
            }
            pass(record, answer, false);
            return answer;
        }

        private void pass(OutboxRecord record, CompletableFuture<Void> answer, boolean wasHeld) {
            delegate.send(record).whenComplete((ok, error) -> {
                if (wasHeld) {
                    Throwable e = error instanceof CompletionException c && c.getCause() != null ? c.getCause() : error;
                    boolean refused = e instanceof DeliveryException d && d.isFenced();
                    heldSendsAnswered(-1, refused ? 1 : 0, e == null ? 1 : 0, e != null && !refused ? 1 : 0);
                }
                Runnable pass = () -> {
                    if (error == null) {
                        answer.complete(null);
                    } else {
                        answer.completeExceptionally(error);
                    }
                };
                synchronized (this) {
                    if (holding) {
                        held.add(pass);
                        return;
                    }
                }
                pass.run();
            });
        }

        @Override
        public boolean flush(Duration timeout) {
            return delegate.flush(timeout);
        }

        @Override
        public void close(Duration timeout) {
            release();
            delegate.close(timeout);
        }
    }
}
