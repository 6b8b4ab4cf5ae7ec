package dev.outbox.testkit;

import java.util.List;
import java.util.stream.Collectors;

/** Finds live threads by name prefix, to prove that a closed dispatcher left none behind. */
final class Threads {
    private Threads() {
    }

    static List<String> alive(String prefix) {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(Thread::isAlive)
                .map(Thread::getName)
                .filter(n -> n.startsWith(prefix))
                .sorted()
                .collect(Collectors.toList());
    }
}
