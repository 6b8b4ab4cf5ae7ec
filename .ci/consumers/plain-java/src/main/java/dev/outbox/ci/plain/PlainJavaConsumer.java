package dev.outbox.ci.plain;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.broker.kafka.KafkaMessageBroker;
import dev.outbox.store.postgres.PostgresStore;

import java.io.PrintWriter;
import java.lang.reflect.Proxy;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.time.Duration;
import javax.sql.DataSource;

/**
 * Wires the reference path from the published jars alone - a PostgresStore, a KafkaMessageBroker and a Dispatcher -
 * without connecting anywhere: the store's builder takes no connection, the dispatcher is built but not started, and
 * the broker's bootstrap server is a closed port on the loopback interface. Exits 0 when everything was built and
 * closed; any missing class or dependency ends it with an exception.
 */
public final class PlainJavaConsumer {

    public static void main(String[] args) throws Exception {
        // The Postgres driver must have come with outbox-store-postgres.
        Class<?> driver = Class.forName("org.postgresql.Driver");
        System.out.println("driver:     " + driver.getName() + " " + driver.getPackage().getImplementationVersion());

        PostgresStore store = PostgresStore.builder(refusingDataSource()).build();
        System.out.println("store:      " + store);

        KafkaMessageBroker broker = KafkaMessageBroker.builder()
                .bootstrapServers("127.0.0.1:9")   // the discard port: nothing listens, nothing is sent
                .build();
        System.out.println("broker:     " + broker);

        Dispatcher dispatcher = Dispatcher.builder(store, broker)
                .config(DispatcherConfig.defaults())
                .build();
        System.out.println("dispatcher: " + dispatcher + " (built, not started)");

        dispatcher.close();                  // closes the broker too
        broker.close(Duration.ofSeconds(5)); // idempotent
        System.out.println("plain-java consumer: OK");
    }

    /** A DataSource that fails the check if anything asks it for a connection. */
    private static DataSource refusingDataSource() {
        return (DataSource) Proxy.newProxyInstance(PlainJavaConsumer.class.getClassLoader(),
                new Class<?>[] {DataSource.class}, (proxy, method, args) -> switch (method.getName()) {
                    case "getConnection" -> throw new SQLException(
                            "the staging check's consumer must not connect to a database, but something asked");
                    case "getLogWriter" -> (PrintWriter) null;
                    case "getLoginTimeout" -> 0;
                    case "getParentLogger" -> throw new SQLFeatureNotSupportedException();
                    case "unwrap" -> throw new SQLException("not a wrapper");
                    case "isWrapperFor" -> false;
                    case "toString" -> "a DataSource that refuses connections";
                    case "hashCode" -> System.identityHashCode(proxy);
                    case "equals" -> proxy == args[0];
                    default -> null;
                });
    }

    private PlainJavaConsumer() {
    }
}
