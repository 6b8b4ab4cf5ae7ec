package dev.outbox.internal;

import java.time.Clock;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantLock;

/** The production {@link EngineRuntime}: daemon threads, {@link ReentrantLock}s, {@link System#nanoTime()}. */
final class SystemRuntime implements EngineRuntime {
    private final Clock clock;

    SystemRuntime(Clock clock) {
        this.clock = Objects.requireNonNull(clock, "clock");
    }

    @Override
    public long nanoTime() {
        return System.nanoTime();
    }

    @Override
    public Clock clock() {
        return clock;
    }

    @Override
    public double random() {
        return ThreadLocalRandom.current().nextDouble();
    }

    @Override
    public UUID randomUuid() {
        return UUID.randomUUID();
    }

    @Override
    public Worker start(String name, Runnable body) {
        Thread t = new Thread(body, name);
        t.setDaemon(true);
        t.start();
        return new Worker() {
            @Override
            public void interrupt() {
                t.interrupt();
            }

            @Override
            public boolean join(long nanos) throws InterruptedException {
                t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(nanos)));
                return !t.isAlive();
            }

            @Override
            public boolean isCurrent() {
                return Thread.currentThread() == t;
            }
        };
    }

    @Override
    public Lock newLock() {
        return new ReentrantLock();
    }
}
