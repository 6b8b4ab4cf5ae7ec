package dev.outbox.spring;

import dev.outbox.spi.Store;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

import java.time.Clock;
import java.util.List;

/**
 * Registers the {@link OutboxEndpoint} ({@code /actuator/outbox}) when Spring Boot Actuator is present, the
 * application has the outbox's {@link Store}, and the endpoint is available (exposed, and its access not
 * {@code none}). The outbox is named after its table ({@code outbox.store.table}), as the metrics' {@code outbox}
 * tag is.
 */
@AutoConfiguration(after = OutboxAutoConfiguration.class)
@ConditionalOnClass(name = {"org.springframework.boot.actuate.endpoint.annotation.Endpoint",
        "org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint"})
@ConditionalOnBean({Store.class, OutboxProperties.class})
@ConditionalOnAvailableEndpoint(OutboxEndpoint.class)
public class OutboxEndpointAutoConfiguration {

    /**
     * The endpoint over the application's outbox.
     *
     * @param store      the outbox's store
     * @param lifecycle  the dispatcher, where this instance runs one
     * @param properties the outbox's properties, for its name
     * @return the endpoint
     */
    @Bean
    @ConditionalOnMissingBean
    OutboxEndpoint outboxEndpoint(Store store, ObjectProvider<OutboxDispatcherLifecycle> lifecycle,
                                  OutboxProperties properties) {
        OutboxDispatcherLifecycle l = lifecycle.getIfUnique();
        return new OutboxEndpoint(List.of(new OutboxEndpoint.Outbox(properties.getStore().getTable(), store,
                l == null ? null : l.dispatcher())), Clock.systemUTC());
    }
}
