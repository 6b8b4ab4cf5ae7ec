package dev.outbox.benchmarks.peers.modulith;

import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.task.TaskExecutor;
import org.springframework.scheduling.concurrent.ThreadPoolTaskExecutor;
import org.springframework.transaction.support.TransactionTemplate;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Makes Spring Modulith's backlog the way a crash leaves one: publications committed in the event publication
 * registry whose externalization has not run. The application's task executor (Boot's, from whose threads the
 * {@code @Async} externalizer sends) is first filled with as many blocking tasks as it has threads, so every
 * externalization queues behind them; then {@code writers} threads publish {@code rows} events, {@code perTx} per
 * transaction; the parent then SIGKILLs the application. The registry's rows are Modulith's own (its serializer, its
 * listener id), not written by hand; the queued externalizations die with the JVM.
 */
final class ModulithFill {
    private ModulithFill() {
    }

    /**
     * Blocks the executor, then publishes events with sequence numbers {@code base} to {@code base + rows - 1} (key
     * {@code w<writer>-<seq % keysPerWriter>}, value {@code valueBytes} bytes starting with the sequence number).
     * Returns the first failure, or null.
     */
    static Throwable fill(ConfigurableApplicationContext context, String topic, long rows, int writers, int perTx,
                          int keysPerWriter, int valueBytes, long base) throws InterruptedException {
        TaskExecutor executor = context.getBean("applicationTaskExecutor", TaskExecutor.class);
        if (!(executor instanceof ThreadPoolTaskExecutor pool)) {
            throw new IllegalStateException("applicationTaskExecutor is a " + executor.getClass().getName()
                    + ", not Boot's ThreadPoolTaskExecutor: cannot hold its externalizations back");
        }
        CountDownLatch never = new CountDownLatch(1);
        CountDownLatch blocked = new CountDownLatch(pool.getCorePoolSize());
        for (int i = 0; i < pool.getCorePoolSize(); i++) {
            pool.execute(() -> {
                blocked.countDown();
                try {
                    never.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
        }
        blocked.await();
        TransactionTemplate tx = context.getBean(TransactionTemplate.class);
        ApplicationEventPublisher events = context;
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (int w = 0; w < writers; w++) {
            int writer = w;
            Thread t = new Thread(() -> {
                SplittableRandom random = new SplittableRandom(base + writer);
                try {
                    for (long first = base + writer * (long) perTx; first < base + rows && failure.get() == null;
                         first += (long) writers * perTx) {
                        long from = first;
                        tx.executeWithoutResult(status -> {
                            for (long seq = from; seq < Math.min(from + perTx, base + rows); seq++) {
                                byte[] value = new byte[valueBytes];
                                random.nextBytes(value);
                                ByteBuffer.wrap(value).putLong(seq);
                                events.publishEvent(new ModulithPeer.BenchEvent(topic,
                                        "w" + writer + "-" + (seq % keysPerWriter), seq, value));
                            }
                        });
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }, "modulith-fill-" + w);
            threads.add(t);
        }
        threads.forEach(Thread::start);
        for (Thread t : threads) {
            t.join();
        }
        return failure.get();
    }
}
