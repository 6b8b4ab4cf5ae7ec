package dev.outbox.spring;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.DispatcherListener;
import dev.outbox.DispatcherObserver;
import dev.outbox.MessageDecorator;
import dev.outbox.broker.kafka.KafkaMessageBroker;
import dev.outbox.handlers.HandlerMessageBroker;
import dev.outbox.jackson.JacksonPayloadSerializer;
import dev.outbox.spi.MessageBroker;
import dev.outbox.spi.PayloadSerializer;
import dev.outbox.spi.Store;
import org.flywaydb.core.api.configuration.FluentConfiguration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanFactoryPostProcessor;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.flyway.autoconfigure.FlywayConfigurationCustomizer;
import org.springframework.boot.kafka.autoconfigure.KafkaProperties;
import org.springframework.boot.sql.init.dependency.DatabaseInitializationDependencyConfigurer;
import org.springframework.boot.sql.init.dependency.DependsOnDatabaseInitialization;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.Environment;
import org.springframework.util.ClassUtils;
import tools.jackson.databind.json.JsonMapper;

import javax.sql.DataSource;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Auto-configures the outbox in a Spring Boot application that has a {@code DataSource}: the {@link Store} on it,
 * the {@link OutboxPublisher} bound to Spring transactions, JSON payloads with the application's
 * {@link JsonMapper}, and (unless {@code outbox.dispatcher.enabled=false}) a {@link Dispatcher} publishing to the
 * Kafka cluster of {@code spring.kafka.*} — or, with {@code outbox.broker=rabbitmq}, to the RabbitMQ node of
 * {@code spring.rabbitmq.*} ({@link OutboxRabbitMqConfiguration}), or, with {@code outbox.broker=handlers}, to the
 * application's {@link OutboxHandler} methods — run by an {@link OutboxDispatcherLifecycle}. Every bean backs off
 * when the application defines its own of the same type.
 */
@AutoConfiguration(afterName = {
        "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
        "org.springframework.boot.jackson.autoconfigure.JacksonAutoConfiguration",
        "org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration",
        "org.springframework.boot.amqp.autoconfigure.RabbitAutoConfiguration",
        "org.springframework.boot.hibernate.autoconfigure.HibernateJpaAutoConfiguration"})
@ConditionalOnSingleCandidate(DataSource.class)
@EnableConfigurationProperties({OutboxProperties.class, KafkaProperties.class})
@Import({DatabaseInitializationDependencyConfigurer.class, OutboxRabbitMqConfiguration.class})
public class OutboxAutoConfiguration {
    private static final Logger log = LoggerFactory.getLogger(OutboxAutoConfiguration.class);

    /**
     * Stops start-up on an {@code outbox.*} key that no property binds (a misspelling would otherwise be silently
     * ignored), naming it and the nearest known key; runs before any bean is created.
     */
    @Bean
    static BeanFactoryPostProcessor outboxPropertyKeysCheck(Environment environment) {
        return beanFactory -> {
            if (environment instanceof ConfigurableEnvironment configurable) {
                OutboxPropertyKeys.check(configurable);
            }
        };
    }

    /** The store with its table names (built without touching the tables). */
    @Bean
    @ConditionalOnMissingBean(Store.class)
    OutboxStoreFactory.Built outboxStoreDefinition(DataSource dataSource, OutboxProperties properties,
                                                   ObjectProvider<MessageDecorator> decorators) {
        return OutboxStoreFactory.build(dataSource, properties.getStore(), decorators.orderedStream().toList());
    }

    @Bean
    @ConditionalOnMissingBean(Store.class)
    Store outboxStore(OutboxStoreFactory.Built definition) {
        return definition.store();
    }

    /**
     * Creates the tables if {@code outbox.store.create-schema=true} and checks the table's shard count, after the
     * application's Flyway, Liquibase and SQL initialization (never before: Flyway refuses to baseline a schema the
     * outbox tables were created in first).
     */
    @Bean
    @DependsOnDatabaseInitialization
    OutboxSchemaInitializer outboxSchemaInitializer(Store store, ObjectProvider<OutboxStoreFactory.Built> definition,
                                                    OutboxProperties properties,
                                                    ObjectProvider<MessageDecorator> decorators) {
        OutboxStoreFactory.Built built = definition.getIfAvailable();
        if (built == null && decorators.orderedStream().findAny().isPresent()) {
            log.warn("The application defines its own outbox Store bean: the MessageDecorator beans are not applied"
                    + " by the starter; add them to your store's builder (decorator(...))");
        }
        Runnable create = built != null && built.store() == store && properties.getStore().isCreateSchema()
                ? built.createSchema() : null;
        return new OutboxSchemaInitializer(store, create, "outbox.store.shards");
    }

    @Bean
    @ConditionalOnMissingBean
    PayloadSerializer outboxPayloadSerializer(ObjectProvider<JsonMapper> jsonMapper) {
        return JacksonPayloadSerializer.of(jsonMapper.getIfAvailable(() -> JsonMapper.builder().build()));
    }

    @Bean
    @ConditionalOnMissingBean
    OutboxPublisher outboxPublisher(DataSource dataSource, Store store, PayloadSerializer serializer,
                                    OutboxProperties properties, OutboxSchemaInitializer schema) {
        return new OutboxPublisher(dataSource, store.publisher(), serializer,
                properties.getPublisher().isRequireTransaction());
    }

    /** The dispatcher, on every instance unless {@code outbox.dispatcher.enabled=false}. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnProperty(name = "outbox.dispatcher.enabled", matchIfMissing = true)
    static class DispatcherConfiguration {

        @Bean
        @ConditionalOnMissingBean
        OutboxDispatcherLifecycle outboxDispatcher(Store store, OutboxProperties properties,
                                                   KafkaProperties kafkaProperties, Environment env,
                                                   OutboxSchemaInitializer schema,
                                                   ObjectProvider<DispatcherListener> listeners,
                                                   ObjectProvider<DispatcherObserver> observers,
                                                   PayloadSerializer serializer,
                                                   ObjectProvider<OutboxBrokerFactory> rabbitMq,
                                                   ConfigurableListableBeanFactory beanFactory) {
            OutboxDispatcherProperties d = properties.getDispatcher();
            OutboxKafkaProperties k = properties.getKafka();
            OutboxProperties.Broker choice = properties.getBroker();
            boolean handlers = choice == OutboxProperties.Broker.HANDLERS;
            LeaderElection election = d.election("outbox.dispatcher.leader-election");
            requireKafka(choice, election, env, beanFactory.getBeanClassLoader());
            DispatcherConfig config = dispatcherConfig(d);
            MessageBroker broker;
            Duration deliveryTimeout;
            if (handlers) {
                broker = OutboxHandlerMethods.broker(beanFactory, serializer, properties.getHandlers(), d.getName());
                deliveryTimeout = properties.getHandlers().getTimeout();
            } else if (choice == OutboxProperties.Broker.RABBITMQ) {
                OutboxBrokerFactory factory = rabbitMq.getIfAvailable();
                if (factory == null) {
                    throw new OutboxConfigurationException("outbox.broker", "is rabbitmq, but the class path lacks "
                            + OutboxBrokerFactory.missingForRabbitMq(beanFactory.getBeanClassLoader()),
                            "add it to the application's dependencies, or choose another broker", null);
                }
                broker = factory.create();
                deliveryTimeout = properties.getRabbitmq().getConfirmTimeout();
            } else {
                KafkaMessageBroker kafka = OutboxKafkaClients.broker(
                        OutboxKafkaClients.producerProperties(kafkaProperties, k), k, env);
                broker = kafka;
                deliveryTimeout = kafka.deliveryTimeout();
            }
            try {
                Dispatcher.Builder b = Dispatcher.builder(store, broker).config(config);
                set("outbox.dispatcher.name", d.getName(), b::name);
                if (election == LeaderElection.DATABASE) {
                    OutboxDatabaseElection.apply(b, store, config, deliveryTimeout,
                            "outbox.dispatcher.leader-election");
                } else if (election == LeaderElection.KAFKA
                        && dev.outbox.spi.Sharding.of(store) > 1) {
                    b.leaderTransport(OutboxKafkaClients.shardedLeaderTransport(
                            OutboxKafkaClients.connectionProperties(kafkaProperties), leaderTopic(k, env),
                            dev.outbox.spi.Sharding.of(store), k, config, deliveryTimeout, env));
                } else if (election == LeaderElection.KAFKA) {
                    b.leaderTransport(OutboxKafkaClients.leaderTransport(
                            OutboxKafkaClients.connectionProperties(kafkaProperties), leaderTopic(k, env), k, config,
                            deliveryTimeout, env));
                }
                List<DispatcherListener> all = listeners.orderedStream().toList();
                if (!all.isEmpty()) {
                    b.listener(DispatcherListeners.of(all));
                }
                if (broker instanceof HandlerMessageBroker h) {
                    b.observer(h); // the fallbacks of parked records
                }
                observers.orderedStream().forEach(b::observer);
                return new OutboxDispatcherLifecycle(build(b));
            } catch (RuntimeException e) {
                broker.close(Duration.ofSeconds(1));
                throw e;
            }
        }

        /**
         * Fails unless the Kafka cluster the choices need is named: the broker's (Kafka) or the election's. With
         * RabbitMQ and the default election (Kafka), the property to change is the election; with Kafka chosen by
         * default while {@code outbox-broker-rabbitmq} is on the class path, it is the broker.
         */
        private static void requireKafka(OutboxProperties.Broker broker, LeaderElection election, Environment env,
                                         ClassLoader loader) {
            boolean kafkaBroker = broker == OutboxProperties.Broker.KAFKA;
            if (!kafkaBroker && election != LeaderElection.KAFKA || OutboxKafkaClients.hasBootstrapServers(env)) {
                return;
            }
            if (broker == OutboxProperties.Broker.RABBITMQ) {
                throw new OutboxConfigurationException("outbox.dispatcher.leader-election", "is kafka (the default),"
                        + " which needs spring.kafka.bootstrap-servers, and outbox.broker is rabbitmq", "set it to"
                        + " database (a lease in the outbox's database) or none (a single dispatcher), or name your"
                        + " Kafka cluster in spring.kafka.bootstrap-servers", null);
            }
            if (kafkaBroker && env.getProperty("outbox.broker") == null
                    && ClassUtils.isPresent(OutboxBrokerFactory.RABBITMQ_BROKER_CLASS, loader)) {
                throw new OutboxConfigurationException("outbox.broker", "not set, so kafka (the default), and"
                        + " spring.kafka.bootstrap-servers is not set either, while outbox-broker-rabbitmq is on the"
                        + " class path", "set outbox.broker=rabbitmq to publish to RabbitMQ, or name your Kafka"
                        + " cluster in spring.kafka.bootstrap-servers", null);
            }
            OutboxKafkaClients.requireBootstrapServers(env);
        }

        /** Builds the dispatcher; a combination the engine refuses is reported naming the outbox's properties. */
        private static Dispatcher build(Dispatcher.Builder b) {
            try {
                return b.build();
            } catch (IllegalArgumentException e) {
                throw new OutboxConfigurationException("outbox", OutboxSchemaInitializer.oneLine(e), "change the"
                        + " outbox.store.* / outbox.dispatcher.* settings the message names, or the Store bean"
                        + " you defined", e);
            }
        }

        private static String leaderTopic(OutboxKafkaProperties k, Environment env) {
            if (k.getLeaderTopic() != null) {
                return k.getLeaderTopic();
            }
            String app = env.getProperty("spring.application.name");
            if (app == null || app.isBlank()) {
                throw new OutboxConfigurationException("outbox.kafka.leader-topic", "not set, and there is no"
                        + " spring.application.name to derive it from", "set outbox.kafka.leader-topic to a topic"
                        + " shared by every instance harvesting this outbox (and by no other outbox), or set"
                        + " spring.application.name", null);
            }
            return app.strip() + "-outbox-leader";
        }

        static DispatcherConfig dispatcherConfig(OutboxDispatcherProperties d) {
            return d.toConfig("outbox.dispatcher");
        }

        private static <T> void set(String property, T value, Consumer<T> setter) {
            OutboxProperties.set(property, value, setter);
        }
    }

    /**
     * Fills in the placeholders of the shipped Flyway migrations ({@code classpath:dev/outbox/migrations/<db>} and
     * {@code classpath:dev/outbox/migrations/versioned/<db>[-inbox|-wal|-key-sequence|-scheduling|-idempotency]}) from
     * {@code outbox.store.*}, unless the application sets them itself.
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = {"org.flywaydb.core.Flyway",
            "org.springframework.boot.flyway.autoconfigure.FlywayConfigurationCustomizer"})
    static class FlywayPlaceholdersConfiguration {

        @Bean
        FlywayConfigurationCustomizer outboxFlywayPlaceholders(ObjectProvider<OutboxStoreFactory.Built> definition) {
            return configuration -> definition.ifAvailable(d -> addPlaceholders(configuration, d));
        }

        private static void addPlaceholders(FluentConfiguration configuration, OutboxStoreFactory.Built d) {
            Map<String, String> placeholders = new LinkedHashMap<>(configuration.getPlaceholders());
            placeholders.putIfAbsent("outbox_table", d.table());
            placeholders.putIfAbsent("outbox_parked_table", d.parkedTable());
            placeholders.putIfAbsent("outbox_leader_table", d.leaderTable());
            // MySQL's id guard (R__outbox_tables_id_guard.sql) is named after the table: "<table>_ids", quoted alike.
            String table = d.table();
            placeholders.putIfAbsent("outbox_id_guard", suffixed(table, "_ids"));
            // The versioned migrations' inbox (…/postgresql-inbox, …/mysql-inbox): the inbox's default tables,
            // quoted as the outbox is.
            String quote = table.substring(table.length() - 1);
            placeholders.putIfAbsent("outbox_inbox_table", quote + "inbox" + quote);
            placeholders.putIfAbsent("outbox_inbox_failed_table", quote + "inbox_failed" + quote);
            placeholders.putIfAbsent("outbox_inbox_index", quote + "inbox_processed_at" + quote);
            // …/postgresql-wal: the WAL harvest's writer functions "<table>_wal_encode", "<table>_emit" and its
            // logical messages' prefix "dev.outbox:[<schema>.]<table>", as the store names them.
            placeholders.putIfAbsent("outbox_wal_encode", suffixed(table, "_wal_encode"));
            placeholders.putIfAbsent("outbox_emit", suffixed(table, "_emit"));
            placeholders.putIfAbsent("outbox_wal_prefix", "dev.outbox:" + table.replace("\"", "").replace("`", ""));
            // …/<db>-key-sequence: the per-key sequence's counter table "<table>_key_seq", as the store names it.
            placeholders.putIfAbsent("outbox_key_seq_table", suffixed(table, "_key_seq"));
            // …/<db>-scheduling and …/<db>-idempotency: the delivery options' tables "<table>_scheduled" (with its
            // indexes "<table>_scheduled_due" and "_key", quoted, not qualified) and "<table>_idempotency".
            placeholders.putIfAbsent("outbox_scheduled_table", suffixed(table, "_scheduled"));
            String bare = table.substring(table.lastIndexOf('.') + 1);
            placeholders.putIfAbsent("outbox_scheduled_due_index", suffixed(bare, "_scheduled_due"));
            placeholders.putIfAbsent("outbox_scheduled_key_index", suffixed(bare, "_scheduled_key"));
            placeholders.putIfAbsent("outbox_idempotency_table", suffixed(table, "_idempotency"));
            configuration.placeholders(placeholders);
        }

        /** {@code "schema"."table"} with {@code suffix} appended to the table's name, inside its quotes. */
        private static String suffixed(String quoted, String suffix) {
            char last = quoted.charAt(quoted.length() - 1);
            return last == '"' || last == '`' ? quoted.substring(0, quoted.length() - 1) + suffix + last
                    : quoted + suffix;
        }
    }
}
