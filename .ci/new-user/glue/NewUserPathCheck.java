package com.example.orders;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.springframework.boot.SpringApplication;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The new-user path's check (glue of .ci/new-user-path.sh): starts the application as its main would, places an
 * order through the README's method, and reads the topic until the order's event is there (key = the customer, a
 * JSON value with the order's id), within 60 s. Exits 0 then; 1, naming what it read, otherwise.
 */
public final class NewUserPathCheck {
    private NewUserPathCheck() {
    }

    public static void main(String[] args) {
        long started = System.nanoTime();
        int status = 1;
        try (ConfigurableApplicationContext context = SpringApplication.run(OrdersApplication.class, args)) {
            long id = context.getBean(Orders.class).place("new-user", new BigDecimal("12.50"));
            System.out.println("new-user-path: placed order " + id + " " + ms(started) + " ms after start");
            String bootstrap = context.getEnvironment().getRequiredProperty("spring.kafka.bootstrap-servers");
            Properties p = new Properties();
            p.putAll(Map.of("bootstrap.servers", bootstrap, "key.deserializer", StringDeserializer.class.getName(),
                    "value.deserializer", StringDeserializer.class.getName()));
            try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
                List<TopicPartition> partitions = consumer.partitionsFor("order-events", Duration.ofSeconds(30))
                        .stream().map(i -> new TopicPartition(i.topic(), i.partition())).toList();
                consumer.assign(partitions);
                consumer.seekToBeginning(partitions);
                long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
                while (status != 0 && System.nanoTime() < deadline) {
                    for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                        System.out.println("new-user-path: read " + r.topic() + "/" + r.partition() + "@"
                                + r.offset() + " key=" + r.key() + " value=" + r.value());
                        if ("new-user".equals(r.key()) && r.value() != null && r.value().contains("\"id\":" + id)) {
                            status = 0;
                        }
                    }
                }
            }
            System.out.println(status == 0
                    ? "new-user-path: OK: the order's event arrived, " + ms(started) + " ms after start"
                    : "new-user-path: FAILED: no event of order " + id + " in order-events within 60 s");
        }
        System.exit(status);
    }

    private static long ms(long since) {
        return (System.nanoTime() - since) / 1_000_000;
    }
}
