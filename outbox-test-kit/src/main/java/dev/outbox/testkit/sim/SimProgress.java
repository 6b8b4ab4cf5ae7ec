package dev.outbox.testkit.sim;

import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Consumer;

/**
 * One dispatcher's memory of exactly-once publishing in the simulation, as {@code outbox-broker-kafka}'s
 * {@code PublishedRecords} keeps it: the records its producer published whose rows the store may still hold
 * ({@code committed}, until the engine reports their purge), and those the last progress record read at the
 * producer's initialisation listed ({@code recovered}, until the harvest meets them again). A progress entry lists
 * both and the transaction's own records. Records are known by their row id (the simulation's table harvest numbers
 * rows once). No expiry: a run is far shorter than the real memory's ten minutes. Not thread-safe (the simulation
 * runs one worker at a time).
 */
final class SimProgress {
    private final Set<Long> committed = new TreeSet<>();
    private final Set<Long> recovered = new TreeSet<>();

    /**
     * A new producer's progress: what the last committed progress entry lists is added to what is remembered
     * (everything remembered is committed; a list read may be older than this process's own last commit).
     */
    void recovered(Set<Long> listed) {
        for (Long id : listed) {
            if (!committed.contains(id)) {
                recovered.add(id);
            }
        }
    }

    /**
     * The records of {@code batch} to send: those neither an earlier producer nor this one published; each of the
     * others is handed to {@code skip} and remembered as published. This producer's own: a leader that stood down
     * after a refused purge meets its committed records again when it leads again with the same producer.
     */
    List<SimProducer.Sent> skipPublished(List<SimProducer.Sent> batch, Consumer<SimProducer.Sent> skip) {
        List<SimProducer.Sent> send = new java.util.ArrayList<>();
        for (SimProducer.Sent s : batch) {
            if (recovered.remove(s.record().id()) || committed.contains(s.record().id())) {
                committed.add(s.record().id());
                skip.accept(s);
            } else {
                send.add(s);
            }
        }
        return send;
    }

    /** The progress entry of a transaction carrying {@code batch}. */
    Set<Long> withBatch(List<SimProducer.Sent> batch) {
        Set<Long> all = new TreeSet<>(committed);
        all.addAll(recovered);
        for (SimProducer.Sent s : batch) {
            all.add(s.record().id());
        }
        return all;
    }

    /** The transaction carrying {@code batch} committed, and its producer heard so. */
    void committed(List<SimProducer.Sent> batch) {
        for (SimProducer.Sent s : batch) {
            committed.add(s.record().id());
        }
    }

    /** The store deleted these rows. */
    void purged(Collection<Long> ids) {
        committed.removeAll(ids);
    }

    @Override
    public String toString() {
        return "c" + committed + "r" + recovered;
    }
}
