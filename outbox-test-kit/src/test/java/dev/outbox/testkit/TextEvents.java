package dev.outbox.testkit;

import dev.outbox.spi.PayloadSerializationException;
import dev.outbox.spi.PayloadSerializer;

import java.nio.charset.StandardCharsets;

/**
 * Payloads for the handler tests without a JSON library: records of one {@code String} component, written as that
 * string in UTF-8 and read back through the record's constructor. Stateless and thread-safe.
 */
final class TextEvents implements PayloadSerializer {
    static final TextEvents SERIALIZER = new TextEvents();

    record OrderPlaced(String order) {
    }

    record PaymentFailed(String payment) {
    }

    private TextEvents() {
    }

    @Override
    public String contentType() {
        return "text/plain";
    }

    @Override
    public byte[] serialize(Object payload) {
        String text = payload instanceof Record r ? r.getClass().getRecordComponents()[0].getName() + "=" + text(r)
                : payload.toString();
        return text.getBytes(StandardCharsets.UTF_8);
    }

    private static String text(Record r) {
        try {
            return (String) r.getClass().getRecordComponents()[0].getAccessor().invoke(r);
        } catch (ReflectiveOperationException e) {
            throw new PayloadSerializationException("cannot write a " + r.getClass().getName(), e);
        }
    }

    @Override
    public <T> T deserialize(byte[] value, Class<T> type) {
        String text = new String(value, StandardCharsets.UTF_8);
        if (type == String.class) {
            return type.cast(text);
        }
        String component = type.getRecordComponents() == null ? null : type.getRecordComponents()[0].getName();
        if (component == null || !text.startsWith(component + "=")) {
            throw new PayloadSerializationException("cannot read " + value.length + " bytes as a " + type.getName(),
                    null);
        }
        try {
            return type.cast(type.getDeclaredConstructor(String.class).newInstance(text.substring(component.length() + 1)));
        } catch (ReflectiveOperationException e) {
            throw new PayloadSerializationException("cannot make a " + type.getName(), e);
        }
    }
}
