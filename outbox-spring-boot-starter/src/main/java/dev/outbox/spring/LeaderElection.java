package dev.outbox.spring;

import java.util.Locale;

/**
 * How the dispatchers of one outbox elect their leader: the {@code outbox.dispatcher.leader-election} property (and
 * the sidecar's), read by {@link OutboxDispatcherProperties#election(String)}.
 */
public enum LeaderElection {
    /** A Kafka consumer group on the leader topic ({@code KafkaLeaderTransport}); needs Kafka. */
    KAFKA,
    /** A lease in the outbox's own database ({@code SqlLeaderTransport}); needs a SQL store. */
    DATABASE,
    /** None: this instance always leads; only when exactly one instance runs a dispatcher for this outbox. */
    NONE;

    /**
     * The election a {@code leader-election} value chooses.
     *
     * @param key   the property's full name, for the message
     * @param value the value as set: {@code kafka}, {@code database} or {@code none} ({@code true} and {@code false},
     *              its values before it had three, are read as {@code kafka} and {@code none})
     * @return the election
     * @throws OutboxConfigurationException naming {@code key} and the value if it is none of the choices
     */
    public static LeaderElection parse(String key, String value) {
        String v = value == null ? "" : value.trim().toLowerCase(Locale.ROOT);
        return switch (v) {
            case "kafka", "true" -> KAFKA;
            case "database" -> DATABASE;
            case "none", "false" -> NONE;
            default -> throw new OutboxConfigurationException(key, "is '" + value + "'; it takes kafka,"
                    + " database or none", "set it to kafka (a Kafka consumer group), database (a lease in the"
                    + " outbox's database) or none (a single dispatcher)", null);
        };
    }
}
