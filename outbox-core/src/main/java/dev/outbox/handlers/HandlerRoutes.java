package dev.outbox.handlers;

import dev.outbox.Header;
import dev.outbox.OutboxRecord;
import dev.outbox.ParkedRecord;
import dev.outbox.spi.DeliveryException;
import dev.outbox.spi.PayloadSerializationException;
import dev.outbox.spi.PayloadSerializer;

import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Which handler and which fallback take a record, and its payload decoded for them: a route by the record's type
 * header wins over one by its topic. Immutable and thread-safe once built (the maps are copies).
 */
final class HandlerRoutes {

    /** A handler or fallback with the type its payload is decoded as; {@code name} says where it is registered. */
    record Route<H>(String name, Class<?> type, H target) {
    }

    private final PayloadSerializer serializer;
    private final String typeHeader;
    private final Map<String, Route<MessageHandler<Object>>> byTopic;
    private final Map<String, Route<MessageHandler<Object>>> byType;
    private final Map<String, Route<FallbackHandler<Object>>> fallbackByTopic;
    private final Map<String, Route<FallbackHandler<Object>>> fallbackByType;
    private final FallbackHandler<Object> defaultFallback;

    HandlerRoutes(PayloadSerializer serializer, String typeHeader,
                  Map<String, Route<MessageHandler<Object>>> byTopic,
                  Map<String, Route<MessageHandler<Object>>> byType,
                  Map<String, Route<FallbackHandler<Object>>> fallbackByTopic,
                  Map<String, Route<FallbackHandler<Object>>> fallbackByType,
                  FallbackHandler<Object> defaultFallback) {
        this.serializer = Objects.requireNonNull(serializer, "serializer");
        this.typeHeader = typeHeader;
        this.byTopic = Map.copyOf(byTopic);
        this.byType = Map.copyOf(byType);
        this.fallbackByTopic = Map.copyOf(fallbackByTopic);
        this.fallbackByType = Map.copyOf(fallbackByType);
        this.defaultFallback = defaultFallback;
    }

    /**
     * The handler of {@code record}: by its type header if one is registered for the header's value, else by its
     * topic.
     *
     * @throws DeliveryException permanent, naming the topic (and the type), if no handler takes the record
     */
    Route<MessageHandler<Object>> handler(OutboxRecord record) {
        String type = type(record.message().headers());
        Route<MessageHandler<Object>> route = type == null ? null : byType.get(type);
        if (route == null) {
            route = byTopic.get(record.topic());
        }
        if (route == null) {
            throw DeliveryException.permanent("no handler in this process for topic '" + record.topic() + "'"
                    + (type == null ? "" : " or type '" + type + "' (header '" + typeHeader + "')")
                    + "; handlers are registered for topics " + byTopic.keySet() + " and types " + byType.keySet(),
                    null);
        }
        return route;
    }

    /**
     * The fallback of a parked record: the one registered for its type, else for its topic, else the default; null
     * if none is.
     *
     * @param record the record as this process last tried it, or null if it never tried it
     */
    Route<FallbackHandler<Object>> fallback(OutboxRecord record, ParkedRecord parked) {
        String type = record == null ? null : type(record.message().headers());
        Route<FallbackHandler<Object>> route = type == null ? null : fallbackByType.get(type);
        if (route == null && parked.topic() != null) {
            route = fallbackByTopic.get(parked.topic());
        }
        if (route == null && defaultFallback != null) {
            Route<MessageHandler<Object>> handler = record == null ? null : handlerOrNull(record);
            route = new Route<>("default fallback", handler == null ? byte[].class : handler.type(), defaultFallback);
        }
        return route;
    }

    private Route<MessageHandler<Object>> handlerOrNull(OutboxRecord record) {
        try {
            return handler(record);
        } catch (DeliveryException e) {
            return null;
        }
    }

    /**
     * The record's value as a {@code type}: null for a tombstone, the bytes themselves for {@code byte[]}, else what
     * the serializer reads.
     *
     * @throws DeliveryException permanent if the value is of another content type or cannot be read as a
     *                           {@code type}, naming both
     */
    Object decode(OutboxRecord record, Class<?> type) {
        byte[] value = record.message().value();
        if (value == null) {
            return null;
        }
        if (type == byte[].class) {
            return value;
        }
        String contentType = header(record.message().headers(), PayloadSerializer.CONTENT_TYPE_HEADER);
        if (contentType != null && !contentType.equalsIgnoreCase(serializer.contentType())) {
            throw DeliveryException.permanent("record " + record.id() + " of topic '" + record.topic() + "' has"
                    + " content type '" + contentType + "', but the handlers' serializer reads '"
                    + serializer.contentType() + "'", null);
        }
        try {
            return serializer.deserialize(value, type);
        } catch (PayloadSerializationException | IllegalArgumentException | ClassCastException e) {
            throw DeliveryException.permanent("record " + record.id() + " of topic '" + record.topic()
                    + "' cannot be read as a " + type.getName() + ": " + e.getMessage(), e);
        }
    }

    /** The value of the type header, or null. */
    private String type(List<Header> headers) {
        return typeHeader == null ? null : header(headers, typeHeader);
    }

    /** The last value of header {@code name}, or null. */
    private static String header(List<Header> headers, String name) {
        String value = null;
        for (Header h : headers) {
            if (h.name().equals(name)) {
                value = h.valueAsString();
            }
        }
        return value;
    }

    @Override
    public String toString() {
        return "topics " + byTopic.keySet() + ", types " + byType.keySet() + " (header '" + typeHeader + "')";
    }
}
