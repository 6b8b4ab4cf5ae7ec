package dev.outbox.jackson;

import dev.outbox.spi.PayloadSerializer;
import dev.outbox.spi.PayloadSerializationException;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.json.JsonMapper;

import java.util.Objects;

/**
 * Writes payload objects as JSON with Jackson 3, for messages whose {@code content-type} header is
 * {@code application/json}. Works without Spring:
 *
 * <pre>{@code
 * PayloadSerializer json = JacksonPayloadSerializer.create();            // or of(yourJsonMapper)
 * store.publisher().publish(connection, json.message("orders", customer, new OrderPlaced(orderId, customer)));
 * }</pre>
 *
 * Under Spring Boot the starter builds one from the application's own {@link JsonMapper}, so the application's
 * Jackson settings (naming strategy, modules, date format) apply to outbox messages too.
 *
 * <p>Immutable and thread-safe (Jackson mappers are, once configured).
 */
public final class JacksonPayloadSerializer implements PayloadSerializer {
    /** The content type of every value this serializer writes. */
    public static final String APPLICATION_JSON = "application/json";

    private final ObjectMapper mapper;

    private JacksonPayloadSerializer(ObjectMapper mapper) {
        this.mapper = mapper;
    }

    /**
     * A serializer over a {@link JsonMapper} with Jackson's defaults.
     *
     * @return a new serializer, never {@code null}; it owns its mapper, which nothing else configures
     */
    public static JacksonPayloadSerializer create() {
        return new JacksonPayloadSerializer(JsonMapper.builder().build());
    }

    /**
     * A serializer over {@code mapper}, for example the application's own. The mapper must write JSON (a
     * {@link JsonMapper}, or an {@link ObjectMapper} over a JSON factory): the content type is always
     * {@value #APPLICATION_JSON}.
     *
     * @param mapper the mapper that writes (and {@linkplain #deserialize reads}) the payloads; not {@code null}.
     *               It is used as it is, not copied: configure it before the first message is written.
     * @return a new serializer over {@code mapper}, never {@code null}
     * @throws NullPointerException if {@code mapper} is {@code null}
     */
    public static JacksonPayloadSerializer of(ObjectMapper mapper) {
        return new JacksonPayloadSerializer(Objects.requireNonNull(mapper, "mapper must not be null"));
    }

    @Override
    public String contentType() {
        return APPLICATION_JSON;
    }

    @Override
    public byte[] serialize(Object payload) {
        Objects.requireNonNull(payload, "payload must not be null (use a tombstone)");
        try {
            return mapper.writeValueAsBytes(payload);
        } catch (JacksonException e) {
            throw new PayloadSerializationException("cannot write a " + payload.getClass().getName()
                    + " as JSON: " + e.getOriginalMessage(), e);
        }
    }

    /**
     * Reads a value written by {@link #serialize} back as a {@code type}, for handlers, consumers and tests.
     *
     * @param <T>  the type of the value read
     * @param json the UTF-8 JSON bytes of one value, as a message's payload holds them; not {@code null}
     * @param type the class to read the value as (Jackson binds the JSON to it); not {@code null}
     * @return the value read; {@code null} only if {@code json} is the JSON literal {@code null}
     * @throws NullPointerException if {@code json} or {@code type} is {@code null}
     * @throws PayloadSerializationException if {@code json} is not a {@code type} in JSON
     */
    @Override
    public <T> T deserialize(byte[] json, Class<T> type) {
        Objects.requireNonNull(json, "json must not be null");
        Objects.requireNonNull(type, "type must not be null");
        try {
            return mapper.readValue(json, type);
        } catch (JacksonException e) {
            throw new PayloadSerializationException("cannot read " + json.length + " bytes of JSON as a "
                    + type.getName() + ": " + e.getOriginalMessage(), e);
        }
    }

    @Override
    public String toString() {
        return "JacksonPayloadSerializer{" + mapper.getClass().getSimpleName() + '}';
    }
}
