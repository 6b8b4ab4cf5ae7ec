/**
 * The SPI for adapter authors: the ports a technology module implements — {@link dev.outbox.spi.Store} (the outbox
 * table) with its optional capabilities ({@link dev.outbox.spi.CursorHarvest}, {@link dev.outbox.spi.MarkHarvest}, {@link dev.outbox.spi.CommitLog},
 * {@link dev.outbox.spi.StorageFencing}, {@link dev.outbox.spi.CommitSignals}, {@link dev.outbox.spi.Sharding},
 * {@link dev.outbox.spi.ParkedRecords}, {@link dev.outbox.spi.ParkedKeys}, {@link dev.outbox.spi.Gauges}),
 * {@link dev.outbox.spi.MessageBroker}, {@link dev.outbox.spi.LeaderTransport} and
 * {@link dev.outbox.spi.PayloadSerializer} — and the values and helpers they share (results, exceptions,
 * {@link dev.outbox.spi.Backoff}, {@link dev.outbox.spi.Excerpt}). Each port is proven by a contract of
 * {@code outbox-test-kit} against a real server. At 0.x the SPI may still change between minor releases.
 *
 * <p>Thread-safety: implementations of the ports must be thread-safe (each port's Javadoc says which threads call
 * it); the values here are immutable.
 */
package dev.outbox.spi;
