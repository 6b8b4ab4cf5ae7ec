package dev.outbox.testkit.sim;

/**
 * Bugs the simulation plants in its transactional broker's progress record ({@link SimulationBuilder#exactlyOnce()},
 * {@link SimulationBuilder#plant(ProgressBug)}), to prove that it finds them: each breaks one rule of exactly-once
 * publishing as {@code outbox-broker-kafka}'s {@code KafkaTransactions} keeps it. They live in the simulated broker
 * ({@link SimProducer}), not in the engine, whose {@link PlantedBug}s are another matter. Test tooling, not API.
 */
public enum ProgressBug {
    /**
     * The progress entry is written as a write of its own when the producer requests its transaction's commit,
     * visible at once whether or not the transaction then commits: a transaction that aborts leaves its records
     * listed as published, and the next producer acknowledges them without sending them (a loss).
     */
    PROGRESS_OUTSIDE_TRANSACTION,
    /**
     * A new producer reads the last committed progress before it fences its predecessor, instead of after: a
     * predecessor's transaction whose commit was requested completes at the fence, after the read, and its records
     * are sent again (a duplicate).
     */
    PROGRESS_READ_BEFORE_FENCE
}
