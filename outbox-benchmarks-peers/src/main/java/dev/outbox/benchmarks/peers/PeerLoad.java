package dev.outbox.benchmarks.peers;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntFunction;
import java.util.concurrent.locks.LockSupport;

/**
 * The peers' writers: the same open loop as the benchmark's latency writers ({@code LatencyScenario}): each
 * transaction has its scheduled time, a writer that falls behind commits at once rather than skipping; each record's
 * value is {@code valueBytes} random bytes whose first eight are its sequence number. Keys belong to one writer each
 * ({@code w<writer>-<n>}), so that a key's records are committed in sequence order and the checker can count per-key
 * order. Commit times ({@code System.nanoTime()}, CLOCK_MONOTONIC on Linux, the same clock in every process of the
 * machine) are noted per sequence number.
 */
public final class PeerLoad {
    /** One transaction of records: commits them with the peer's own API. */
    @FunctionalInterface
    public interface Tx extends AutoCloseable {
        void commit(String[] keys, long[] seqs, byte[][] values) throws Exception;

        /** Releases what the writer held (its connection); called once its loop ends. */
        @Override
        default void close() throws Exception {
        }
    }

    private PeerLoad() {
    }

    /**
     * Runs {@code writers} threads from {@code start} until {@code end} (nanoTime) at {@code rate} records/s,
     * {@code perTx} per transaction; sequence numbers from {@code sequences}; commit times into {@code committed}
     * at {@code seq - base} (nanoTime, 0 = not committed). Returns the first failure, or null.
     */
    public static Throwable run(IntFunction<Tx> txPerWriter, int writers, int rate, int perTx, long start, long end,
                                int keysPerWriter, int valueBytes, long seed, AtomicLong sequences, long base,
                                AtomicLongArray committed) throws InterruptedException {
        long interval = (long) (1e9 * perTx * writers / rate);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (int w = 0; w < writers; w++) {
            int writer = w;
            long first = start + interval * w / writers;
            Thread t = new Thread(() -> {
                try (Tx tx = txPerWriter.apply(writer)) {
                    SplittableRandom random = new SplittableRandom(seed + writer);
                    String[] keys = new String[perTx];
                    long[] seqs = new long[perTx];
                    byte[][] values = new byte[perTx][];
                    for (long due = first; due - end < 0 && failure.get() == null; due += interval) {
                        long wait = due - System.nanoTime();
                        if (wait > 0) {
                            LockSupport.parkNanos(wait);
                        }
                        for (int i = 0; i < perTx; i++) {
                            long seq = sequences.getAndIncrement();
                            seqs[i] = seq;
                            keys[i] = "w" + writer + "-" + random.nextInt(keysPerWriter);
                            byte[] value = new byte[valueBytes];
                            random.nextBytes(value);
                            ByteBuffer.wrap(value).putLong(seq);
                            values[i] = value;
                        }
                        tx.commit(keys, seqs, values);
                        long now = System.nanoTime();
                        for (long seq : seqs) {
                            if (seq - base >= 0 && seq - base < committed.length()) {
                                committed.set((int) (seq - base), now);
                            }
                        }
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }, "peer-writer-" + w);
            t.setDaemon(true);
            threads.add(t);
        }
        threads.forEach(Thread::start);
        for (Thread t : threads) {
            t.join();
        }
        return failure.get();
    }

    /** The sequence number in a value's first eight bytes, or -1. */
    public static long sequence(byte[] value) {
        return value == null || value.length < 8 ? -1 : ByteBuffer.wrap(value).getLong();
    }
}
