package dev.outbox.benchmarks;

import dev.outbox.benchmarks.peers.PeerLoad;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * The peers' writers in the peers' run ({@link PeerBenchmark}), on {@link PeerLoad}'s open loop with the run's
 * writer threads, batch size, {@link PeerBenchmark#KEYS_PER_WRITER keys}, value size and seed: Spring Modulith's in
 * its child JVM (asked over its line protocol, the commit times handed back in a file), Debezium's in this JVM (a
 * row of the outbox table and a business row per record). Each writes from {@code start} to {@code end}
 * ({@code System.nanoTime()}) at {@code rate}, sequence numbers from {@code base}, each record's commit time into
 * {@code committed} at {@code seq - base}, and returns how many records it committed.
 */
final class PeerWriters {
    private final BenchEnvironment env;
    private final BenchmarkOptions options;

    PeerWriters(BenchEnvironment env, BenchmarkOptions options) {
        this.env = env;
        this.options = options;
    }

    /** The size of a commit-time array for {@code rate} records/s over {@code nanos}, with room to spare. */
    static int capacity(int rate, long nanos) {
        return (int) Math.min(Integer.MAX_VALUE - 8, (long) Math.ceil(rate * (nanos / 1e9) * 1.2) + 10_000);
    }

    /**
     * The line that asks the Modulith child to write: commit times of {@code slots} sequence numbers from
     * {@code base} go to {@code file} when it is done.
     */
    String modulithRun(String topic, int rate, long start, long end, long base, int slots, Path file) {
        return String.join(" ", "RUN", topic, Integer.toString(rate),
                Integer.toString(options.recordsPerTx(rate)), Integer.toString(options.writers),
                Long.toString(start), Long.toString(end), Integer.toString(PeerBenchmark.KEYS_PER_WRITER),
                Integer.toString(options.valueBytes), Long.toString(options.seed), Long.toString(base),
                Integer.toString(slots), file.toString());
    }

    /** Runs the Modulith child's writers and returns how many records they committed. */
    long modulith(PeerChild child, String topic, int rate, long start, long end, long base,
                  AtomicLongArray committed) throws Exception {
        Path file = Files.createTempFile("peer-modulith-commits", ".bin");
        try {
            child.send(modulithRun(topic, rate, start, end, base, committed.length(), file));
            long n = Long.parseLong(child.await("DONE", Duration.ofNanos(end - System.nanoTime())
                    .plusMinutes(2)).substring(5).trim());
            try (DataInputStream in = new DataInputStream(new BufferedInputStream(Files.newInputStream(file)))) {
                for (int i = 0; i < committed.length(); i++) {
                    committed.set(i, in.readLong());
                }
            }
            return n;
        } finally {
            Files.deleteIfExists(file);
        }
    }

    /** The Debezium run's writers, in this JVM: a row of the outbox table and a business row per record. */
    long debezium(String topic, int rate, long start, long end, long base, AtomicLongArray committed)
            throws Exception {
        AtomicLong sequences = new AtomicLong(base);
        Throwable failure = PeerLoad.run(w -> {
            try {
                Connection c = env.pool().getConnection();
                c.setAutoCommit(false);
                PreparedStatement outbox = c.prepareStatement("INSERT INTO peer_outbox(id, aggregatetype,"
                        + " aggregateid, type, payload) VALUES (?, ?, ?, 'bench', ?)");
                PreparedStatement business = c.prepareStatement("INSERT INTO peer_commits(system, seq)"
                        + " VALUES ('debezium', ?)");
                return new PeerLoad.Tx() {
                    @Override
                    public void close() throws Exception {
                        c.close();
                    }

                    @Override
                    public void commit(String[] keys, long[] seqs, byte[][] values) throws Exception {
                        for (int i = 0; i < seqs.length; i++) {
                            outbox.setObject(1, UUID.randomUUID());
                            outbox.setString(2, topic);
                            outbox.setString(3, keys[i]);
                            outbox.setBytes(4, values[i]);
                            outbox.addBatch();
                            business.setLong(1, seqs[i]);
                            business.addBatch();
                        }
                        business.executeBatch();
                        outbox.executeBatch();
                        c.commit();
                    }
                };
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }, options.writers, rate, options.recordsPerTx(rate), start, end, PeerBenchmark.KEYS_PER_WRITER,
                options.valueBytes, options.seed, sequences, base, committed);
        if (failure != null) {
            throw new IllegalStateException("writer failed: " + failure, failure);
        }
        return sequences.get() - base;
    }
}
