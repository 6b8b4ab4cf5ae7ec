package dev.outbox.sidecar;

import dev.outbox.spring.OutboxDispatcherProperties;
import dev.outbox.spring.OutboxKafkaProperties;
import dev.outbox.spring.OutboxStoreProperties;
import org.springframework.boot.context.properties.ConfigurationProperties;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The sidecar's configuration file: everything under {@code sidecar:}. Bound strictly: a key the sidecar does not
 * know stops start-up with its name and a suggestion. The per-outbox {@code store}, {@code kafka} and
 * {@code dispatcher} sections are the Spring Boot starter's {@code outbox.store.*}, {@code outbox.kafka.*} and
 * {@code outbox.dispatcher.*}, with the same keys and defaults.
 *
 * <p>A mutable JavaBean for Spring's binder; not thread-safe. The sidecar reads it once, at start-up.
 */
@ConfigurationProperties(prefix = "sidecar", ignoreUnknownFields = false)
public final class SidecarProperties {
    private final Map<String, Outbox> outboxes = new LinkedHashMap<>();
    private final Map<String, Inbox> inboxes = new LinkedHashMap<>();
    private final Kafka kafka = new Kafka();
    private final Http http = new Http();
    private final Management management = new Management();
    private final Operator operator = new Operator();
    private final Readiness readiness = new Readiness();
    private final Logging logging = new Logging();

    /** The outboxes to harvest, by name (the name appears in URLs, metrics tags and log lines). */
    public Map<String, Outbox> getOutboxes() {
        return outboxes;
    }

    /**
     * The inboxes whose failed messages the operator API and console show, by name (the name appears in URLs);
     * none by default.
     */
    public Map<String, Inbox> getInboxes() {
        return inboxes;
    }

    public Kafka getKafka() {
        return kafka;
    }

    public Http getHttp() {
        return http;
    }

    /** Log levels and the log format. */
    public Logging getLogging() {
        return logging;
    }

    public Management getManagement() {
        return management;
    }

    public Operator getOperator() {
        return operator;
    }

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

        public String getBootstrapServers() {
            return bootstrapServers;
        }

        public void setBootstrapServers(String bootstrapServers) {
            this.bootstrapServers = bootstrapServers;
        }

        public Map<String, String> getProperties() {
            return properties;
        }

        public void setProperties(Map<String, String> properties) {
            this.properties = properties;
        }

        public Map<String, String> getProducerProperties() {
            return producerProperties;
        }

        public void setProducerProperties(Map<String, String> producerProperties) {
            this.producerProperties = producerProperties;
        }

        public Duration getStartupTimeout() {
            return startupTimeout;
        }

        public void setStartupTimeout(Duration startupTimeout) {
            this.startupTimeout = startupTimeout;
        }
    }

    /** One outbox: its database, table, leader election and dispatcher. */
    public static final class Outbox {
        private final DataSource datasource = new DataSource();
        private final OutboxStoreProperties store = new OutboxStoreProperties();
        private final OutboxKafkaProperties kafka = new OutboxKafkaProperties();
        private final OutboxDispatcherProperties dispatcher = new OutboxDispatcherProperties();
        /** Prepended to every row's topic when it is published (e.g. "prod."); empty by default. */
        private String topicPrefix = "";

        public DataSource getDatasource() {
            return datasource;
        }

        public OutboxStoreProperties getStore() {
            return store;
        }

        public OutboxKafkaProperties getKafka() {
            return kafka;
        }

        public OutboxDispatcherProperties getDispatcher() {
            return dispatcher;
        }

        public String getTopicPrefix() {
            return topicPrefix;
        }

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
        private final DataSource datasource = new DataSource(2);
        /** postgres or mysql (also MariaDB); detected from the database when not set. */
        private OutboxProperties.StoreType type;
        /** The schema (MySQL: the database) of the inbox tables; the connection's default when not set. */
        private String schema;
        /** The inbox table's name, as given to the inbox's builder; failed messages are in {@code <table>_failed}. */
        private String table = "inbox";
        /** The consumers to show; when empty, every consumer that has failed messages. */
        private List<String> consumers = new ArrayList<>();

        /** The pool of the inbox's database: one connection is enough (default pool size 2). */
        public DataSource getDatasource() {
            return datasource;
        }

        public OutboxProperties.StoreType getType() {
            return type;
        }

        public void setType(OutboxProperties.StoreType type) {
            this.type = type;
        }

        public String getSchema() {
            return schema;
        }

        public void setSchema(String schema) {
            this.schema = schema;
        }

        public String getTable() {
            return table;
        }

        public void setTable(String table) {
            this.table = table;
        }

        public List<String> getConsumers() {
            return consumers;
        }

        public void setConsumers(List<String> consumers) {
            this.consumers = consumers;
        }
    }

    /** The connection pool of one outbox's (or inbox's) database. */
    public static final class DataSource {
        /** JDBC URL, e.g. jdbc:postgresql://db:5432/app or jdbc:mysql://db:3306/app. Required. */
        private String url;
        /** Database user. */
        private String username;
        /** Database password; prefer ${ENV_VAR} or password-file. Never logged. */
        private String password;
        /** A file holding the password (trailing line break ignored), e.g. a mounted Kubernetes secret. */
        private String passwordFile;
        /** Connections in the pool: the dispatcher uses two at a time, the operator API one. */
        private int maximumPoolSize = 4;
        /** How long a call waits for a connection from the pool. */
        private Duration connectionTimeout = Duration.ofSeconds(10);

        /** An outbox's pool: 4 connections by default. */
        public DataSource() {
        }

        DataSource(int maximumPoolSize) {
            this.maximumPoolSize = maximumPoolSize;
        }

        public String getUrl() {
            return url;
        }

        public void setUrl(String url) {
            this.url = url;
        }

        public String getUsername() {
            return username;
        }

        public void setUsername(String username) {
            this.username = username;
        }

        public String getPassword() {
            return password;
        }

        public void setPassword(String password) {
            this.password = password;
        }

        public String getPasswordFile() {
            return passwordFile;
        }

        public void setPasswordFile(String passwordFile) {
            this.passwordFile = passwordFile;
        }

        public int getMaximumPoolSize() {
            return maximumPoolSize;
        }

        public void setMaximumPoolSize(int maximumPoolSize) {
            this.maximumPoolSize = maximumPoolSize;
        }

        public Duration getConnectionTimeout() {
            return connectionTimeout;
        }

        public void setConnectionTimeout(Duration connectionTimeout) {
            this.connectionTimeout = connectionTimeout;
        }
    }

    /** The HTTP server of the operator API and console. */
    public static final class Http {
        /** Port of the operator API and console (and of the management endpoints unless management.port is set). */
        private int port = 8080;
        /** Address to bind; localhost only by default. Set 0.0.0.0 to serve other hosts. */
        private String address = "127.0.0.1";

        public int getPort() {
            return port;
        }

        public void setPort(int port) {
            this.port = port;
        }

        public String getAddress() {
            return address;
        }

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

        public Integer getPort() {
            return port;
        }

        public void setPort(Integer port) {
            this.port = port;
        }

        public String getAddress() {
            return address;
        }

        public void setAddress(String address) {
            this.address = address;
        }
    }

    /**
     * Who may use the operator API and console. With neither a token nor a username configured, both are off.
     */
    public static final class Operator {
        /** User name for the console's login form and for HTTP basic authentication. */
        private String username;
        /** Password of {@code username}; prefer ${ENV_VAR} or password-file. Never logged. */
        private String password;
        /** A file holding the password. */
        private String passwordFile;
        /** A bearer token for the API ({@code Authorization: Bearer <token>}). Never logged. */
        private String token;
        /** A file holding the token. */
        private String tokenFile;

        public String getUsername() {
            return username;
        }

        public void setUsername(String username) {
            this.username = username;
        }

        public String getPassword() {
            return password;
        }

        public void setPassword(String password) {
            this.password = password;
        }

        public String getPasswordFile() {
            return passwordFile;
        }

        public void setPasswordFile(String passwordFile) {
            this.passwordFile = passwordFile;
        }

        public String getToken() {
            return token;
        }

        public void setToken(String token) {
            this.token = token;
        }

        public String getTokenFile() {
            return tokenFile;
        }

        public void setTokenFile(String tokenFile) {
            this.tokenFile = tokenFile;
        }
    }

    /** When the readiness probe says "not ready". */
    public static final class Readiness {
        /** A dispatcher fenced (cut off from Kafka) for longer than this makes the sidecar not ready. */
        private Duration maxFenced = Duration.ofSeconds(30);

        public Duration getMaxFenced() {
            return maxFenced;
        }

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

        public Map<String, String> getLevel() {
            return level;
        }

        public LogFormat getFormat() {
            return format;
        }

        public void setFormat(LogFormat format) {
            this.format = format;
        }
    }
}
