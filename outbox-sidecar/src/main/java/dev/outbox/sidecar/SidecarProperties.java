package dev.outbox.sidecar;

import dev.outbox.spring.OutboxDispatcherProperties;
import dev.outbox.spring.OutboxKafkaProperties;
import dev.outbox.spring.OutboxProperties;
import dev.outbox.spring.OutboxRabbitMqProperties;
import dev.outbox.spring.OutboxStoreProperties;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.NestedConfigurationProperty;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The sidecar's configuration file: everything under {@code sidecar:}. Bound strictly: a key the sidecar does not
 * know stops start-up with its name and a suggestion. The per-outbox {@code store}, {@code kafka},
 * {@code rabbitmq} and {@code dispatcher} sections are the Spring Boot starter's {@code outbox.store.*},
 * {@code outbox.kafka.*}, {@code outbox.rabbitmq.*} and {@code outbox.dispatcher.*}, with the same keys and defaults.
 * The broker is Kafka ({@code sidecar.kafka}) or RabbitMQ ({@code sidecar.rabbitmq}), whichever is configured.
 *
 * <p>A mutable JavaBean for Spring's binder; not thread-safe. The sidecar reads it once, at start-up.
 */
@ConfigurationProperties(prefix = "sidecar", ignoreUnknownFields = false)
public final class SidecarProperties {
    private final Map<String, Outbox> outboxes = new LinkedHashMap<>();
    private final Map<String, Inbox> inboxes = new LinkedHashMap<>();
    private final Kafka kafka = new Kafka();
    @NestedConfigurationProperty
    private final SidecarRabbitMqProperties rabbitmq = new SidecarRabbitMqProperties();
    private final Http http = new Http();
    private final Management management = new Management();
    private final SidecarOperatorProperties operator = new SidecarOperatorProperties();
    private final Readiness readiness = new Readiness();
    private final Logging logging = new Logging();

    /**
     * The outboxes to harvest, by name (the name appears in URLs, metrics tags and log lines).
     *
     * @return the {@code sidecar.outboxes.<name>.*} settings by name, in the file's order; bound in place, never
     *         {@code null} (start-up stops when it is empty)
     */
    public Map<String, Outbox> getOutboxes() {
        return outboxes;
    }

    /**
     * {@return the inboxes whose failed messages the operator API and console show, by name (the name appears in
     * URLs); none by default; never {@code null}}
     */
    public Map<String, Inbox> getInboxes() {
        return inboxes;
    }

    /**
     * {@return the {@code sidecar.kafka.*} settings: the Kafka cluster every outbox publishes to; never {@code null}}
     */
    public Kafka getKafka() {
        return kafka;
    }

    /**
     * {@return the {@code sidecar.rabbitmq.*} settings: the RabbitMQ node every outbox publishes to, when it is the
     * broker (its {@code uri} or {@code host} set); never {@code null}}
     */
    public SidecarRabbitMqProperties getRabbitmq() {
        return rabbitmq;
    }

    /**
     * {@return the {@code sidecar.http.*} settings: the operator API's and console's HTTP server; never {@code null}}
     */
    public Http getHttp() {
        return http;
    }

    /**
     * Log levels and the log format.
     *
     * @return the {@code sidecar.logging.*} settings; never {@code null}
     */
    public Logging getLogging() {
        return logging;
    }

    /**
     * {@return the {@code sidecar.management.*} settings: where health and Prometheus are served; never {@code null}}
     */
    public Management getManagement() {
        return management;
    }

    /**
     * {@return the {@code sidecar.operator.*} settings: who may use the operator API and console; never {@code null}}
     */
    public SidecarOperatorProperties getOperator() {
        return operator;
    }

    /**
     * {@return the {@code sidecar.readiness.*} settings: when the readiness probe says not ready; never {@code null}}
     */
    public Readiness getReadiness() {
        return readiness;
    }

    /** The Kafka cluster every outbox publishes to. */
    public static final class Kafka {
        /** Comma-separated host:port list. Required. */
        private String bootstrapServers;
        /** Kafka client properties shared by the producers and leader election (TLS, SASL, client.dns.lookup, ...). */
        private Map<String, String> properties = new LinkedHashMap<>();
        /** Producer properties for every outbox's producer, over {@code properties}; an outbox's own win over them. */
        private Map<String, String> producerProperties = new LinkedHashMap<>();
        /** How long start-up waits for the cluster to answer before giving up. */
        private Duration startupTimeout = Duration.ofSeconds(30);

        /**
         * {@return the cluster's comma-separated {@code host:port} list; required (start-up stops, naming it, when it
         * is missing)} Bound from the {@code bootstrap-servers} property.
         */
        public String getBootstrapServers() {
            return bootstrapServers;
        }

        /**
         * Sets the {@code bootstrap-servers} property.
         *
         * @param bootstrapServers the list, for example {@code kafka-1:9092,kafka-2:9092}
         */
        public void setBootstrapServers(String bootstrapServers) {
            this.bootstrapServers = bootstrapServers;
        }

        /**
         * {@return Kafka client properties the producers and leader election share (TLS, SASL,
         * {@code client.dns.lookup}, ...); empty by default, never {@code null} as bound} Bound from the
         * {@code properties} property.
         */
        public Map<String, String> getProperties() {
            return properties;
        }

        /**
         * Sets the {@code properties} property.
         *
         * @param properties the properties by Kafka name; the settings the outbox enforces cannot be contradicted here
         */
        public void setProperties(Map<String, String> properties) {
            this.properties = properties;
        }

        /**
         * {@return producer properties for every outbox's producer, over {@code properties}; an outbox's own
         * {@code kafka.producer-properties} win over them. Empty by default} Bound from the {@code producer-properties}
         * property.
         */
        public Map<String, String> getProducerProperties() {
            return producerProperties;
        }

        /**
         * Sets the {@code producer-properties} property.
         *
         * @param producerProperties the properties by Kafka name; the settings the outbox enforces ({@code acks=all},
         *                           idempotence, ...) cannot be contradicted here
         */
        public void setProducerProperties(Map<String, String> producerProperties) {
            this.producerProperties = producerProperties;
        }

        /**
         * {@return how long start-up waits for the cluster to answer before it gives up; 30 seconds by default} Bound
         * from the {@code startup-timeout} property.
         */
        public Duration getStartupTimeout() {
            return startupTimeout;
        }

        /**
         * Sets the {@code startup-timeout} property.
         *
         * @param startupTimeout a positive duration
         */
        public void setStartupTimeout(Duration startupTimeout) {
            this.startupTimeout = startupTimeout;
        }
    }

    /** One outbox: its database, table, leader election and dispatcher. */
    public static final class Outbox {
        private final SidecarDataSourceProperties datasource = new SidecarDataSourceProperties();
        private final OutboxStoreProperties store = new OutboxStoreProperties();
        private final OutboxKafkaProperties kafka = new OutboxKafkaProperties();
        private final OutboxRabbitMqProperties rabbitmq = new OutboxRabbitMqProperties();
        private final OutboxDispatcherProperties dispatcher = new OutboxDispatcherProperties();
        /** Prepended to every row's topic when it is published (e.g. "prod."); empty by default. */
        private String topicPrefix = "";

        /**
         * {@return the outbox's {@code datasource.*} settings: its database's connection pool; never {@code null}}
         */
        public SidecarDataSourceProperties getDatasource() {
            return datasource;
        }

        /**
         * {@return the outbox's {@code store.*} settings, the starter's {@code outbox.store.*} with the same keys and
         * defaults; never {@code null}}
         */
        public OutboxStoreProperties getStore() {
            return store;
        }

        /**
         * {@return the outbox's {@code kafka.*} settings (leader topic and group, delivery timeout, producer
         * properties), the starter's {@code outbox.kafka.*}; never {@code null}}
         */
        public OutboxKafkaProperties getKafka() {
            return kafka;
        }

        /**
         * {@return the outbox's {@code rabbitmq.*} settings (exchange mapping, confirm timeout, ...), the starter's
         * {@code outbox.rabbitmq.*}, used when {@code sidecar.rabbitmq} is the broker; never {@code null}}
         */
        public OutboxRabbitMqProperties getRabbitmq() {
            return rabbitmq;
        }

        /**
         * {@return the outbox's {@code dispatcher.*} settings, the starter's {@code outbox.dispatcher.*} with the same
         * keys and defaults; never {@code null}}
         */
        public OutboxDispatcherProperties getDispatcher() {
            return dispatcher;
        }

        /**
         * {@return prepended to every row's topic when it is published (for example {@code prod.}); empty by default}
         * Bound from the {@code topic-prefix} property.
         */
        public String getTopicPrefix() {
            return topicPrefix;
        }

        /**
         * Sets the {@code topic-prefix} property.
         *
         * @param topicPrefix the prefix, empty for none; the prefixed topics must be valid Kafka topic names
         */
        public void setTopicPrefix(String topicPrefix) {
            this.topicPrefix = topicPrefix;
        }
    }

    /**
     * One inbox ({@code PostgresInbox} or {@code MySqlInbox}) whose failed-messages table the operator API and
     * console show, read-only: its database, the inbox table's name (failed messages are in
     * {@code <table>_failed}), and optionally which consumers to show.
     */
    public static final class Inbox {
        private final SidecarDataSourceProperties datasource = new SidecarDataSourceProperties(2);
        /** postgres or mysql (also MariaDB); detected from the database when not set. */
        private OutboxProperties.StoreType type;
        /** The schema (MySQL: the database) of the inbox tables; the connection's default when not set. */
        private String schema;
        /** The inbox table's name, as given to the inbox's builder; failed messages are in {@code <table>_failed}. */
        private String table = "inbox";
        /** The consumers to show; when empty, every consumer that has failed messages. */
        private List<String> consumers = new ArrayList<>();

        /**
         * {@return the inbox's {@code datasource.*} settings: its database's connection pool, where one connection
         * is enough (2 by default); never {@code null}}
         */
        public SidecarDataSourceProperties getDatasource() {
            return datasource;
        }

        /**
         * {@return which database the inbox is on, or {@code null} (the default) to detect it from the database} Bound
         * from the {@code type} property.
         */
        public OutboxProperties.StoreType getType() {
            return type;
        }

        /**
         * Sets the {@code type} property.
         *
         * @param type {@code POSTGRES} or {@code MYSQL} (bound from {@code postgres} or {@code mysql}, MariaDB
         *             included), or {@code null} to detect it
         */
        public void setType(OutboxProperties.StoreType type) {
            this.type = type;
        }

        /**
         * {@return the schema (MySQL: the database) of the inbox tables, or {@code null} (the default) for the
         * connection's default} Bound from the {@code schema} property.
         */
        public String getSchema() {
            return schema;
        }

        /**
         * Sets the {@code schema} property.
         *
         * @param schema an identifier the inbox accepts, or {@code null}; checked at start-up, where a bad one stops
         *               the sidecar naming the key
         */
        public void setSchema(String schema) {
            this.schema = schema;
        }

        /**
         * {@return the inbox table's name, as given to the inbox's builder, {@code inbox} by default; failed messages
         * are in {@code <table>_failed}} Bound from the {@code table} property.
         */
        public String getTable() {
            return table;
        }

        /**
         * Sets the {@code table} property.
         *
         * @param table an identifier the inbox accepts; not {@code null}. Checked at start-up, where a bad one, or a
         *              failed-messages table that cannot be read, stops the sidecar naming the key.
         */
        public void setTable(String table) {
            this.table = table;
        }

        /**
         * {@return the consumers whose failed messages are shown, in this order; empty (the default) for every consumer
         * that has failed messages} Bound from the {@code consumers} property.
         */
        public List<String> getConsumers() {
            return consumers;
        }

        /**
         * Sets the {@code consumers} property.
         *
         * @param consumers valid consumer names (checked at start-up, naming the bad one's index), or empty for all
         */
        public void setConsumers(List<String> consumers) {
            this.consumers = consumers;
        }
    }


    /** The HTTP server of the operator API and console. */
    public static final class Http {
        /** Port of the operator API and console (and of the management endpoints unless management.port is set). */
        private int port = 8080;
        /** Address to bind; localhost only by default. Set 0.0.0.0 to serve other hosts. */
        private String address = "127.0.0.1";

        /**
         * {@return the port of the operator API and console, and of the management endpoints unless
         * {@code management.port} is set; 8080 by default} Bound from the {@code port} property.
         */
        public int getPort() {
            return port;
        }

        /**
         * Sets the {@code port} property.
         *
         * @param port a TCP port, 0 for any free one
         */
        public void setPort(int port) {
            this.port = port;
        }

        /**
         * {@return the address the HTTP server binds, {@code 127.0.0.1} (this host only) by default} Bound from the
         * {@code address} property.
         */
        public String getAddress() {
            return address;
        }

        /**
         * Sets the {@code address} property.
         *
         * @param address an IP address or host name of this host; {@code 0.0.0.0} to serve other hosts
         */
        public void setAddress(String address) {
            this.address = address;
        }
    }

    /** Where health and Prometheus are served. */
    public static final class Management {
        /** Port of /actuator/health and /actuator/prometheus; the HTTP port when not set. */
        private Integer port;
        /** Address of the management port; localhost only by default. */
        private String address = "127.0.0.1";

        /**
         * {@return the port of {@code /actuator/health} and {@code /actuator/prometheus}, or {@code null} (the default)
         * to serve them on the HTTP port} Bound from the {@code port} property.
         */
        public Integer getPort() {
            return port;
        }

        /**
         * Sets the {@code port} property.
         *
         * @param port a TCP port, or {@code null}
         */
        public void setPort(Integer port) {
            this.port = port;
        }

        /**
         * {@return the address of the management port (used only when {@code port} is set), {@code 127.0.0.1} by
         * default} Bound from the {@code address} property.
         */
        public String getAddress() {
            return address;
        }

        /**
         * Sets the {@code address} property.
         *
         * @param address an IP address or host name of this host
         */
        public void setAddress(String address) {
            this.address = address;
        }
    }


    /** When the readiness probe says "not ready". */
    public static final class Readiness {
        /** A dispatcher fenced (cut off from Kafka) for longer than this makes the sidecar not ready. */
        private Duration maxFenced = Duration.ofSeconds(30);

        /**
         * {@return a dispatcher fenced (cut off from Kafka) for longer than this makes the sidecar not ready; 30
         * seconds by default} Bound from the {@code max-fenced} property.
         */
        public Duration getMaxFenced() {
            return maxFenced;
        }

        /**
         * Sets the {@code max-fenced} property.
         *
         * @param maxFenced a duration
         */
        public void setMaxFenced(Duration maxFenced) {
            this.maxFenced = maxFenced;
        }
    }

    /** How log lines are written: plain text, or one JSON object a line in one of Spring Boot's structured formats. */
    public enum LogFormat {
        /** Plain text (the default). */
        TEXT,
        /** Elastic Common Schema JSON. */
        ECS,
        /** Logstash JSON. */
        LOGSTASH,
        /** Graylog Extended Log Format JSON. */
        GELF
    }

    /**
     * {@code sidecar.logging}: levels by logger name ({@code level.root}, {@code level.dev.outbox},
     * {@code level.org.apache.kafka}: trace, debug, info, warn, error, off) on top of the sidecar's defaults, and the
     * format of the lines ({@code text}, or JSON: {@code ecs}, {@code logstash}, {@code gelf}).
     */
    public static final class Logging {
        private final Map<String, String> level = new LinkedHashMap<>();
        private LogFormat format = LogFormat.TEXT;

        /**
         * {@return log levels by logger name ({@code root}, {@code dev.outbox}, ...), over the sidecar's defaults;
         * empty by default, the map itself bound in place} Bound from the {@code level.*} property.
         */
        public Map<String, String> getLevel() {
            return level;
        }

        /**
         * {@return the format of log lines, {@code TEXT} (the default) or one of the JSON formats} Bound from the
         * {@code format} property.
         */
        public LogFormat getFormat() {
            return format;
        }

        /**
         * Sets the {@code format} property.
         *
         * @param format the format; bound from {@code text}, {@code ecs}, {@code logstash} or {@code gelf}
         */
        public void setFormat(LogFormat format) {
            this.format = format;
        }
    }
}
