package dev.outbox.internal;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.DispatcherListener;
import dev.outbox.spi.LeaderTransport;
import dev.outbox.spi.MessageBroker;
import dev.outbox.spi.Store;

import java.time.Clock;
import java.util.Optional;
import java.util.UUID;

/** The MP/R engine. Work in progress. */
public final class DefaultDispatcher implements Dispatcher {
    public DefaultDispatcher(String name, Store store, MessageBroker broker, LeaderTransport transport,
                             DispatcherConfig config, DispatcherListener listener, Clock clock) {
    }

    @Override public void start() { throw new UnsupportedOperationException("not yet"); }
    @Override public void close() { }
    @Override public void await() { }
    @Override public State state() { return State.NEW; }
    @Override public boolean isLeader() { return false; }
    @Override public Optional<UUID> leaderId() { return Optional.empty(); }
    @Override public int inFlightRecords() { return 0; }
    @Override public int inFlightKeys() { return 0; }
}
