package dev.outbox.store.postgres;

import dev.outbox.Header;
import dev.outbox.OutboxMessage;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Messages that exercise every field of the WAL encoding, by name, for the codec's and the SQL function's tests. */
final class WalTestMessages {
    private WalTestMessages() {
    }

    static Map<String, OutboxMessage> all() {
        Map<String, OutboxMessage> messages = new LinkedHashMap<>();
        messages.put("plain", OutboxMessage.of("orders", "order-17", "hello"));
        messages.put("tombstone", OutboxMessage.tombstone("orders", "order-17"));
        messages.put("empty value", OutboxMessage.of("orders", "order-17", new byte[0]));
        messages.put("empty key", OutboxMessage.of("orders", "", "no key"));
        messages.put("every byte value", OutboxMessage.of("bytes", "k", everyByte()));
        messages.put("unicode", OutboxMessage.builder("commandes-été", "clé-🔑-键")
                .value("žluťoučký kůň 🐎".getBytes(StandardCharsets.UTF_8))
                .header("trace-ünïcode-😀", "värde")
                .header("日本語", new byte[0])
                .build());
        messages.put("null and repeated header values", OutboxMessage.builder("orders", "order-18")
                .value("v")
                .header("flag", (byte[]) null)
                .header("flag", "again")
                .header("empty", new byte[0])
                .header("flag", (byte[]) null)
                .build());
        List<Header> many = new ArrayList<>();
        for (int i = 0; i < 1000; i++) {
            many.add(Header.of("h" + i, i % 3 == 0 ? null : ("value " + i).getBytes(StandardCharsets.UTF_8)));
        }
        messages.put("1000 headers", OutboxMessage.of("orders", "order-19", "many".getBytes(StandardCharsets.UTF_8),
                many));
        messages.put("large value", OutboxMessage.of("orders", "order-20", new byte[100_000]));
        return messages;
    }

    private static byte[] everyByte() {
        byte[] bytes = new byte[256];
        for (int i = 0; i < bytes.length; i++) {
            bytes[i] = (byte) i;
        }
        return bytes;
    }
}
