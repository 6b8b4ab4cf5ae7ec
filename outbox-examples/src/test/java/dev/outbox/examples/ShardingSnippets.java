package dev.outbox.examples;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.broker.kafka.KafkaMessageBroker;
import dev.outbox.broker.kafka.KafkaShardedLeaderTransport;
import dev.outbox.store.postgres.PostgresStore;

import javax.sql.DataSource;
import java.util.Properties;

/**
 * The README's shard-leadership snippet, in compiled code that {@code ShardingSnippetsTest} runs; the region between
 * {@code tag::} and {@code end::} is what the README shows (checked by {@code ReadmeSnippetsTest}).
 */
final class ShardingSnippets {

    private ShardingSnippets() {
    }

    static Dispatcher shardedDispatcher(DataSource dataSource, Properties kafka) {
        // tag::kafka[]
        int shards = 6;                                           // the outbox table's shard count
        PostgresStore store = PostgresStore.builder(dataSource).shards(shards).build();
        DispatcherConfig config = DispatcherConfig.defaults();
        KafkaMessageBroker broker = KafkaMessageBroker.builder().properties(kafka).build();
        KafkaShardedLeaderTransport shardLeaders = KafkaShardedLeaderTransport.builder()
                .properties(kafka)
                .topic("billing-outbox-leader")                  // one partition per shard (created if missing)
                .shards(shards)
                .dispatcherConfig(config)
                .deliveryTimeoutOf(broker)
                .build();
        Dispatcher dispatcher = Dispatcher.builder(store, broker)
                .leaderTransport(shardLeaders)                   // this instance leads the shards Kafka gives it
                .config(config)
                .build();
        // end::kafka[]
        return dispatcher;
    }
}
