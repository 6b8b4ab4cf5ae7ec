package dev.outbox.sidecar;

import dev.outbox.FailedMessage;
import dev.outbox.Inbox;
import org.springframework.http.HttpStatus;
import org.springframework.web.server.ResponseStatusException;

import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.UUID;

/**
 * What the operator API and the console read of the inboxes' failed messages, in one place: the inboxes, the
 * consumers shown, a consumer's oldest failed messages, one of them. Read-only: the sidecar cannot run a consumer's
 * handler again, and deleting a failed message would destroy what may be the last copy of its payload (see the
 * sidecar's guide). Every refusal is a {@link ResponseStatusException} with a reason naming the value. Thread-safe.
 */
public final class InboxFailures {
    /**
     * The most failed messages one list reads. Smaller than the parked list's {@value ParkedOperations#MAX_PAGE}:
     * an inbox's list reads each message's value with it.
     */
    public static final int MAX_PAGE = 100;
    /** The most consumers shown for an inbox whose configuration names none. */
    public static final int MAX_CONSUMERS = 100;

    private final Inboxes inboxes;

    InboxFailures(Inboxes inboxes) {
        this.inboxes = Objects.requireNonNull(inboxes, "inboxes");
    }

    /**
     * One list of a consumer's failed messages: oldest first, at most the limit asked for.
     *
     * @param inbox    the inbox's name
     * @param consumer the consumer whose failed messages these are
     * @param records  the failed messages, oldest first
     * @param more     whether the consumer has more failed messages than listed (they are reached as the older ones
     *                 are dealt with: the inbox lists the oldest only)
     */
    public record Page(String inbox, String consumer, List<FailedMessage> records, boolean more) {
    }

    /**
     * The configured inboxes.
     *
     * @return the inboxes, in the configuration's order; empty when none is configured
     */
    public Collection<SidecarInbox> all() {
        return inboxes.all();
    }

    /**
     * Whether no inbox is configured: the console then shows no inbox section.
     *
     * @return {@code true} if {@code sidecar.inboxes} names none
     */
    public boolean isEmpty() {
        return inboxes.isEmpty();
    }

    /**
     * One configured inbox.
     *
     * @param name the inbox's name, the key under {@code sidecar.inboxes}
     * @return the inbox named {@code name}
     * @throws ResponseStatusException 404 if there is none, saying so when no inbox is configured at all
     */
    public SidecarInbox inbox(String name) {
        return inboxes.get(name).orElseThrow(() -> new ResponseStatusException(HttpStatus.NOT_FOUND,
                "no inbox named '" + name + "'" + (inboxes.isEmpty() ? ": no inbox is configured (sidecar.inboxes)"
                        : "")));
    }

    /**
     * The consumers shown for an inbox.
     *
     * @param inbox one of the configured inboxes
     * @return those its configuration names, in its order; else those with failed messages now (at most
     *         {@value #MAX_CONSUMERS}, by name)
     */
    public List<String> consumers(SidecarInbox inbox) {
        return inbox.configuredConsumers().isEmpty() ? inbox.inbox().failedConsumers(MAX_CONSUMERS)
                : inbox.configuredConsumers();
    }

    /**
     * The oldest failed messages of {@code consumer}, at most {@code limit}.
     *
     * @param inbox    the inbox's name
     * @param consumer the consumer's name
     * @param limit    the most messages to list, 1 to {@value #MAX_PAGE}
     * @return the page of messages, oldest first, saying whether the consumer has more
     * @throws ResponseStatusException 400 if {@code limit} is not between 1 and {@value #MAX_PAGE} or the consumer is
     *                                 missing or not a consumer name; 404 for an unknown inbox or a consumer the
     *                                 inbox's configuration does not name
     */
    public Page list(String inbox, String consumer, int limit) {
        if (limit < 1 || limit > MAX_PAGE) {
            throw new ResponseStatusException(HttpStatus.BAD_REQUEST, "limit must be between 1 and " + MAX_PAGE
                    + ": " + limit);
        }
        SidecarInbox i = inbox(inbox);
        checkConsumer(i, consumer);
        List<FailedMessage> read = i.inbox().failed(consumer, limit + 1);
        boolean more = read.size() > limit;
        return new Page(i.name(), consumer, more ? read.subList(0, limit) : read, more);
    }

    /**
     * The failed message {@code messageId} (a UUID in text) of {@code consumer}.
     *
     * @param inbox     the inbox's name
     * @param consumer  the consumer's name
     * @param messageId the message's id, a UUID in text
     * @return the failed message, its value included
     * @throws ResponseStatusException 400 for a consumer or message id that is not one; 404 if there is no such
     *                                 failed message
     */
    public FailedMessage show(String inbox, String consumer, String messageId) {
        SidecarInbox i = inbox(inbox);
        UUID id = ParkedFilter.messageId("messageId", messageId);
        checkConsumer(i, consumer);
        return i.inbox().failedMessage(consumer, id).orElseThrow(() -> new ResponseStatusException(
                HttpStatus.NOT_FOUND, "no failed message " + id + " of consumer " + ParkedFilter.quoted(consumer)
                + " in inbox '" + i.name() + "'"));
    }

    private static void checkConsumer(SidecarInbox i, String consumer) {
        if (consumer == null || consumer.isEmpty()) {
            throw new ResponseStatusException(HttpStatus.BAD_REQUEST, "consumer is required: the consumer whose"
                    + " failed messages to read (GET /api/inboxes lists those shown)");
        }
        try {
            Inbox.validateConsumer(consumer);
        } catch (IllegalArgumentException e) {
            throw new ResponseStatusException(HttpStatus.BAD_REQUEST, e.getMessage());
        }
        List<String> configured = i.configuredConsumers();
        if (!configured.isEmpty() && !configured.contains(consumer)) {
            throw new ResponseStatusException(HttpStatus.NOT_FOUND, "inbox '" + i.name() + "' shows only the"
                    + " consumers " + String.join(", ", configured) + " (sidecar.inboxes." + i.name()
                    + ".consumers), not " + ParkedFilter.quoted(consumer));
        }
    }
}
