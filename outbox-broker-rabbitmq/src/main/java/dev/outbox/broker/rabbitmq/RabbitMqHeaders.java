package dev.outbox.broker.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.LongString;
import com.rabbitmq.client.impl.LongStringHelper;
import dev.outbox.Header;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.PayloadSerializer;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Date;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;

/**
 * How an outbox message travels as an AMQP message, both ways: {@link RabbitMqMessageBroker} writes it, consumers
 * (and {@link RabbitMqInboxConsumer}) read it back with {@link #headers(AMQP.BasicProperties)},
 * {@link #value(AMQP.BasicProperties, byte[])} and {@link #messageId(AMQP.BasicProperties)}.
 *
 * <ul>
 *   <li>The record's key is the routing key; its value the body.</li>
 *   <li>Each header is an AMQP header of the same name, its value a long string holding the header's bytes (void
 *       for a null value); a name that occurs several times holds an array of its values, in order. AMQP tables
 *       have no order and no repeats, so a message with more than one header also carries
 *       {@value #HEADER_NAMES}: the names in their order, repeats included; {@link #headers} puts them back in that
 *       order.</li>
 *   <li>A tombstone (null value) has an empty body and {@value #TOMBSTONE} {@code = true}: an AMQP body cannot be
 *       null, and an empty value stays an empty body without it.</li>
 *   <li>Properties: {@code message-id} the record's message id (its text form); {@code content-type} the value of
 *       the message's {@value PayloadSerializer#CONTENT_TYPE_HEADER} header, if it has one (the header is kept
 *       too); {@code timestamp} the record's creation time (whole seconds, as AMQP has them);
 *       {@code delivery-mode} 2, persistent.</li>
 * </ul>
 * Names starting with {@code outbox-} are the adapter's; a message's own header of such a name is refused by the
 * broker (a permanent failure naming it).
 *
 * <p>Thread-safe (stateless).
 */
public final class RabbitMqHeaders {
    /** The header listing a message's header names in their order, repeats included: {@value}. */
    public static final String HEADER_NAMES = "outbox-header-names";
    /** The header marking a tombstone (a null value, sent as an empty body): {@value}. */
    public static final String TOMBSTONE = "outbox-tombstone";
    /** The prefix of the adapter's own header names: {@value}. */
    public static final String RESERVED_PREFIX = "outbox-";
    /** AMQP's delivery mode of a persistent message. */
    static final int PERSISTENT = 2;

    private RabbitMqHeaders() {
    }

    /**
     * The AMQP properties of {@code record}, as described on the class.
     *
     * @param record the record to send; not null
     * @return its properties
     * @throws IllegalArgumentException naming the header if the message has a header whose name is reserved
     */
    static AMQP.BasicProperties properties(OutboxRecord record) {
        List<Header> headers = record.message().headers();
        Map<String, Object> table = new LinkedHashMap<>();
        String contentType = null;
        for (Header h : headers) {
            if (h.name().startsWith(RESERVED_PREFIX)) {
                throw new IllegalArgumentException("header '" + h.name() + "' has the prefix '" + RESERVED_PREFIX
                        + "' that the RabbitMQ adapter reserves for its own headers");
            }
            Object value = h.value() == null ? null : LongStringHelper.asLongString(h.value());
            if (table.containsKey(h.name())) {
                Object earlier = table.get(h.name());
                List<Object> values;
                if (earlier instanceof RepeatedValues r) {
                    values = r.values;
                } else {
                    values = new ArrayList<>();
                    values.add(earlier);
                    table.put(h.name(), new RepeatedValues(values));
                }
                values.add(value);
            } else {
                table.put(h.name(), value);
            }
            if (PayloadSerializer.CONTENT_TYPE_HEADER.equalsIgnoreCase(h.name()) && h.value() != null) {
                contentType = new String(h.value(), StandardCharsets.UTF_8);
            }
        }
        table.replaceAll((name, v) -> v instanceof RepeatedValues r ? r.values : v);
        if (headers.size() > 1) {
            List<Object> names = new ArrayList<>(headers.size());
            for (Header h : headers) {
                names.add(LongStringHelper.asLongString(h.name()));
            }
            table.put(HEADER_NAMES, names);
        }
        if (record.message().value() == null) {
            table.put(TOMBSTONE, Boolean.TRUE);
        }
        return new AMQP.BasicProperties.Builder()
                .deliveryMode(PERSISTENT)
                .messageId(record.messageId() == null ? null : record.messageId().toString())
                .contentType(contentType)
                .timestamp(new Date(record.createdAt().toEpochMilli() / 1000 * 1000))
                .headers(table.isEmpty() ? null : table)
                .build();
    }

    /** Values of a header name that occurs more than once, while the table is built. */
    private record RepeatedValues(List<Object> values) {
    }

    /**
     * The outbox headers of a received message, in the order they were written, repeats included; the adapter's
     * own headers ({@value #HEADER_NAMES}, {@value #TOMBSTONE}) left out. A message that another publisher wrote
     * yields its headers in no particular order (an AMQP table has none), each value's bytes (a long string's bytes,
     * another value's text in UTF-8).
     *
     * @param properties the received message's properties; not null
     * @return the headers; never null
     */
    public static List<Header> headers(AMQP.BasicProperties properties) {
        Map<String, Object> table = properties.getHeaders();
        if (table == null || table.isEmpty()) {
            return List.of();
        }
        List<Header> out = new ArrayList<>();
        if (table.get(HEADER_NAMES) instanceof List<?> names) {
            Map<String, Integer> used = new HashMap<>(); // how many values of each name were taken
            for (Object n : names) {
                String name = text(n);
                List<Object> values = valuesOf(table.get(name));
                int i = used.merge(name, 1, Integer::sum) - 1;
                out.add(Header.of(name, i < values.size() ? bytes(values.get(i)) : null));
            }
            return out;
        }
        for (Map.Entry<String, Object> e : table.entrySet()) {
            if (e.getKey().startsWith(RESERVED_PREFIX)) {
                continue;
            }
            for (Object v : valuesOf(e.getValue())) {
                out.add(Header.of(e.getKey(), bytes(v)));
            }
        }
        return out;
    }

    /**
     * The value of a received message: null for a tombstone, otherwise the body.
     *
     * @param properties the received message's properties; not null
     * @param body       its body; null is read as empty
     * @return the value, null for a tombstone
     */
    public static byte[] value(AMQP.BasicProperties properties, byte[] body) {
        Map<String, Object> table = properties.getHeaders();
        if (table != null && Boolean.TRUE.equals(table.get(TOMBSTONE))) {
            return null;
        }
        return body == null ? new byte[0] : body;
    }

    /**
     * The outbox message id of a received message, from its {@code message-id} property.
     *
     * @param properties the received message's properties; not null
     * @return the id, or null if the message has no {@code message-id} or it is not a UUID
     */
    public static UUID messageId(AMQP.BasicProperties properties) {
        String id = properties.getMessageId();
        if (id == null) {
            return null;
        }
        try {
            return UUID.fromString(id);
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    private static List<Object> valuesOf(Object v) {
        if (v instanceof List<?> list) {
            return new ArrayList<>(list);
        }
        List<Object> one = new ArrayList<>(1);
        one.add(v);
        return one;
    }

    private static byte[] bytes(Object v) {
        if (v == null) {
            return null;
        }
        if (v instanceof LongString s) {
            return s.getBytes();
        }
        if (v instanceof byte[] b) {
            return b;
        }
        return v.toString().getBytes(StandardCharsets.UTF_8);
    }

    private static String text(Object v) {
        return new String(Objects.requireNonNullElse(bytes(v), new byte[0]), StandardCharsets.UTF_8);
    }
}
