package dev.outbox.testservers;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Servers of one JVM that start at the same time are never given the same port. (A CI run on 2026-11-27 gave MySQL
 * and MariaDB the same just-freed port: MySQL lost the bind, and its start-up found MariaDB listening there.)
 */
class FreePortTest {

    @Test
    void noPortIsHandedOutTwiceInAJvmEvenToConcurrentCallers() throws Exception {
        Set<Integer> seen = ConcurrentHashMap.newKeySet();
        List<Integer> duplicates = new ArrayList<>();
        CountDownLatch go = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 8; t++) {
            Thread thread = new Thread(() -> {
                try {
                    go.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
                for (int i = 0; i < 50; i++) {
                    int port = ServerProcess.freePort();
                    if (!seen.add(port)) {
                        synchronized (duplicates) {
                            duplicates.add(port);
                        }
                    }
                }
            });
            threads.add(thread);
            thread.start();
        }
        go.countDown();
        for (Thread thread : threads) {
            thread.join();
        }
        assertThat(duplicates).as("ports handed out twice").isEmpty();
        assertThat(new HashSet<>(seen)).hasSize(400);
    }
}
