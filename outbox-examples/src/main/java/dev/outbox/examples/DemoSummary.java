package dev.outbox.examples;

import java.io.PrintStream;
import java.util.List;

/**
 * What the demo measured, and whether it passed: every committed order's event arrived, and no customer's events
 * arrived out of order. Immutable.
 *
 * @param written         orders committed, each with one outbox message
 * @param rolledBack      order transactions that failed and were rolled back (their messages with them)
 * @param keys            customers (message keys) that placed orders
 * @param writeSeconds    how long the writers ran
 * @param consumed        records of this run read from the topic, duplicates included
 * @param distinct        distinct records read
 * @param missing         committed orders whose event never arrived
 * @param keysMissing     customers with at least one missing event
 * @param violations      records that arrived out of order
 * @param violationSamples the first few violations, described
 * @param takeover        the take-over, described
 * @param takeoverMillis  from closing the leader to the next leader, or -1
 * @param commitToConsume latency from each order's commit to its event's arrival
 * @param dueToConsume    latency from when each order was due by its writer's schedule to its event's arrival
 *                        (corrected for coordinated omission)
 * @param parked          parked rows in the store
 * @param backlog         rows left in the outbox
 * @param consumerFailure why the consumer stopped early, or null
 */
record DemoSummary(long written, long rolledBack, int keys, double writeSeconds, long consumed, long distinct,
                   long missing, int keysMissing, long violations, List<String> violationSamples, String takeover,
                   long takeoverMillis, LatencyClock.Percentiles commitToConsume,
                   LatencyClock.Percentiles dueToConsume, int parked, long backlog,
                   Throwable consumerFailure) {

    DemoSummary {
        violationSamples = List.copyOf(violationSamples);
    }

    /** Whether every committed order's event arrived, in per-key order. */
    boolean passed() {
        return written > 0 && missing == 0 && violations == 0 && consumerFailure == null;
    }

    long duplicates() {
        return consumed - distinct;
    }

    void print(PrintStream out) {
        out.println();
        out.println("==================== outbox demo summary ====================");
        row(out, "records written", String.format("%,d orders committed with their outbox message, %,d customers,"
                + " %.1f s (%,.0f/s)", written, keys, writeSeconds, written / Math.max(writeSeconds, 1e-3)));
        if (rolledBack > 0) {
            row(out, "rolled back", String.format("%,d transactions (not counted as written)", rolledBack));
        }
        row(out, "records published", String.format("%,d read back by the consumer", consumed));
        row(out, "distinct", String.format("%,d", distinct));
        row(out, "duplicates", String.format("%,d", duplicates()));
        row(out, "missing", missing == 0 ? "0" : String.format("%,d (%,d customers affected)", missing, keysMissing));
        row(out, "per-key order verified", violations == 0 ? "yes" : String.format("NO: %,d records out of order",
                violations));
        violationSamples.forEach(v -> row(out, "", v));
        row(out, "take-over time", takeover);
        row(out, "commit-to-consume latency", commitToConsume.describe());
        row(out, "  from schedule (CO-corr.)", dueToConsume.describe());
        row(out, "parked records", Integer.toString(parked));
        row(out, "rows left in the outbox", String.format("%,d", backlog));
        if (consumerFailure != null) {
            row(out, "consumer failed", consumerFailure.toString());
        }
        row(out, "result", passed() ? "PASS: every record arrived, in order per key"
                : "FAIL: records missing or out of order");
        out.println("==============================================================");
    }

    private static void row(PrintStream out, String name, String value) {
        out.printf("  %-27s %s%n", name, value);
    }
}
