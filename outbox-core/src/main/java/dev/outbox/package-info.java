/**
 * The API for applications: write messages with a {@link dev.outbox.Publisher} in your transaction, run a
 * {@link dev.outbox.Dispatcher} (configured by {@link dev.outbox.DispatcherConfig}) that publishes them, watch it
 * through {@link dev.outbox.DispatcherHealth}, {@link dev.outbox.DispatcherListener} and
 * {@link dev.outbox.DispatcherObserver}, and de-duplicate on the consumer's side with an {@link dev.outbox.Inbox}.
 *
 * <p>Thread-safety: the dispatcher, the publishers and the inboxes are thread-safe; the messages, records and
 * configuration are immutable values. Listener and observer callbacks are called from the dispatcher's threads and
 * must not block.
 */
package dev.outbox;
