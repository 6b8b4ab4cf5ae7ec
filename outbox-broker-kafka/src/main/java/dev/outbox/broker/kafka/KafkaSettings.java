package dev.outbox.broker.kafka;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Helpers shared by the producer and consumer configuration: a mutable map of client properties with typed
 * reads that reject a malformed value naming the setting, and name validation. Not thread-safe; used by the
 * builders only.
 */
final class KafkaSettings {
    /** Kafka's longest topic name. */
    static final int MAX_TOPIC_LENGTH = 249;

    private final Map<String, Object> props = new LinkedHashMap<>();

    KafkaSettings() {
    }

    KafkaSettings(KafkaSettings other) {
        props.putAll(other.props);
    }

    /** Adds every entry of {@code source}; keys are converted with {@code toString()}. */
    void putAll(Map<?, ?> source) {
        Objects.requireNonNull(source, "properties");
        for (Map.Entry<?, ?> e : source.entrySet()) {
            put(String.valueOf(e.getKey()), e.getValue());
        }
    }

    void put(String name, Object value) {
        if (name == null || name.isBlank()) {
            throw new IllegalArgumentException("Kafka property name must not be blank: '" + name + "'");
        }
        if (value == null) {
            throw new IllegalArgumentException("Kafka property '" + name + "' must not be null");
        }
        props.put(name, value);
    }

    boolean has(String name) {
        return props.containsKey(name);
    }

    /** The value as a trimmed string, or null if not set. */
    String string(String name) {
        Object v = props.get(name);
        return v == null ? null : v.toString().trim();
    }

    void putIfAbsent(String name, Object value) {
        props.putIfAbsent(name, value);
    }

    /** The value as a long, or {@code fallback} if not set. */
    long longValue(String name, long fallback) {
        Object v = props.get(name);
        if (v == null) {
            return fallback;
        }
        if (v instanceof Number n) {
            return n.longValue();
        }
        try {
            return Long.parseLong(v.toString().trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("Kafka property '" + name + "' must be a number, was '" + v + "'", e);
        }
    }

    /** The value as a boolean, or {@code fallback} if not set; only "true" and "false" are accepted. */
    boolean booleanValue(String name, boolean fallback) {
        Object v = props.get(name);
        if (v == null) {
            return fallback;
        }
        if (v instanceof Boolean b) {
            return b;
        }
        String s = v.toString().trim().toLowerCase(Locale.ROOT);
        if (s.equals("true")) {
            return true;
        }
        if (s.equals("false")) {
            return false;
        }
        throw new IllegalArgumentException("Kafka property '" + name + "' must be true or false, was '" + v + "'");
    }

    /** Rejects {@code name} if the user set it to anything else than {@code required}. */
    void require(String name, String required, String why) {
        String v = string(name);
        if (v != null && !v.equalsIgnoreCase(required)) {
            throw new IllegalArgumentException("Kafka property '" + name + "' must be '" + required + "', was '"
                    + v + "': " + why);
        }
        props.put(name, required);
    }

    /** Rejects {@code name} if the user set it at all. */
    void forbid(String name, String why) {
        if (props.containsKey(name)) {
            throw new IllegalArgumentException("Kafka property '" + name + "' must not be set (was '"
                    + props.get(name) + "'): " + why);
        }
    }

    /** A copy of the properties restricted to {@code names} (for example the admin client's). */
    Map<String, Object> only(Set<String> names) {
        Map<String, Object> out = new LinkedHashMap<>();
        props.forEach((k, v) -> {
            if (names.contains(k)) {
                out.put(k, v);
            }
        });
        return out;
    }

    /** A copy of every property. */
    Map<String, Object> toMap() {
        return new LinkedHashMap<>(props);
    }

    static long millis(String name, Duration d) {
        Objects.requireNonNull(d, name);
        if (d.isNegative() || d.isZero()) {
            throw new IllegalArgumentException(name + " must be positive, was " + d);
        }
        return d.toMillis();
    }

    /**
     * Validates a topic name as Kafka does: 1 to 249 characters of {@code [a-zA-Z0-9._-]}, not "." or "..".
     *
     * @return null if valid, otherwise why not
     */
    static String topicProblem(String topic) {
        if (topic == null) {
            return "topic must not be null";
        }
        if (topic.isEmpty()) {
            return "topic must not be empty";
        }
        if (topic.equals(".") || topic.equals("..")) {
            return "topic must not be '.' or '..'";
        }
        if (topic.length() > MAX_TOPIC_LENGTH) {
            return "topic '" + topic + "' is " + topic.length() + " characters, longer than " + MAX_TOPIC_LENGTH;
        }
        for (int i = 0; i < topic.length(); i++) {
            char c = topic.charAt(i);
            boolean legal = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                    || c == '.' || c == '_' || c == '-';
            if (!legal) {
                return "topic '" + topic + "' contains '" + c + "' at index " + i
                        + "; Kafka allows only ASCII letters, digits, '.', '_' and '-'";
            }
        }
        return null;
    }
}
