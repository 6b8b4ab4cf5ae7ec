package dev.outbox.spring;

import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/**
 * Turns an {@link OutboxConfigurationException} that stopped start-up into Spring Boot's "APPLICATION FAILED TO
 * START" report, naming the property and what to do. Stateless and thread-safe.
 */
public final class OutboxFailureAnalyzer extends AbstractFailureAnalyzer<OutboxConfigurationException> {

    @Override
    protected FailureAnalysis analyze(Throwable rootFailure, OutboxConfigurationException cause) {
        return new FailureAnalysis(cause.getMessage(), "Update the property '" + cause.property()
                + "' in your application's configuration: " + cause.action(), cause);
    }
}
