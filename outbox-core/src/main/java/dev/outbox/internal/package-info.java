/**
 * Internal: the harvest engine behind {@link dev.outbox.Dispatcher}. Not API — any type here may change or go in any
 * release; applications use {@code dev.outbox}, adapters {@code dev.outbox.spi}.
 *
 * <p>One owner per piece of state: {@link dev.outbox.internal.EngineState} holds the one lock over the
 * {@link dev.outbox.internal.Leadership}, the {@link dev.outbox.internal.KeySchedule} and the
 * {@link dev.outbox.internal.HarvestCursor}, which are pure and not thread-safe; the threads
 * ({@link dev.outbox.internal.LeaderLoop}, {@link dev.outbox.internal.HarvestLoop},
 * {@link dev.outbox.internal.SettleLoop}, {@link dev.outbox.internal.OutboxSampler}) stay outside them, and
 * {@link dev.outbox.internal.HarvestDecision} decides each harvest step as a pure function. A store that offers a
 * {@link dev.outbox.spi.CommitLog} is harvested through {@link dev.outbox.internal.StreamStore}, the engine's own
 * {@link dev.outbox.internal.StreamHarvest} of it.
 */
package dev.outbox.internal;
