package dev.outbox.spring;

import dev.outbox.DispatcherListener;
import dev.outbox.MeterReading;
import dev.outbox.ParkedRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.UUID;
import java.util.function.Consumer;

/**
 * The application's {@link DispatcherListener} beans as the dispatcher's one listener: each event goes to every
 * listener in {@code @Order}; one that throws is logged and does not keep the event from the later ones (the
 * dispatcher itself survives a throwing listener either way). Thread-safe if the listeners are.
 */
final class DispatcherListeners implements DispatcherListener {
    private static final Logger log = LoggerFactory.getLogger(DispatcherListeners.class);

    private final List<DispatcherListener> listeners;

    private DispatcherListeners(List<DispatcherListener> listeners) {
        this.listeners = List.copyOf(listeners);
    }

    /** The one listener of {@code listeners} (in order): itself if there is one, a no-op if none. */
    static DispatcherListener of(List<DispatcherListener> listeners) {
        return listeners.size() == 1 ? listeners.get(0) : new DispatcherListeners(listeners);
    }

    private void each(String event, Consumer<DispatcherListener> call) {
        for (DispatcherListener l : listeners) {
            try {
                call.accept(l);
            } catch (RuntimeException e) {
                log.warn("Outbox dispatcher listener {} failed on {}", l, event, e);
            }
        }
    }

    @Override
    public void leaderAcquired(UUID leaderId) {
        each("leaderAcquired", l -> l.leaderAcquired(leaderId));
    }

    @Override
    public void leaderRefreshed(UUID leaderId) {
        each("leaderRefreshed", l -> l.leaderRefreshed(leaderId));
    }

    @Override
    public void leaderRevoked() {
        each("leaderRevoked", DispatcherListener::leaderRevoked);
    }

    @Override
    public void leaderFenced() {
        each("leaderFenced", DispatcherListener::leaderFenced);
    }

    @Override
    public void meterRead(MeterReading reading) {
        each("meterRead", l -> l.meterRead(reading));
    }

    @Override
    public void recordParked(ParkedRecord record) {
        each("recordParked", l -> l.recordParked(record));
    }

    @Override
    public void failure(String operation, Throwable error) {
        each("failure", l -> l.failure(operation, error));
    }

    @Override
    public String toString() {
        return "DispatcherListeners" + listeners;
    }
}
