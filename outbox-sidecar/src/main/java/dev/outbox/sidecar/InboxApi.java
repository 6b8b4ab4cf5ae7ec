package dev.outbox.sidecar;

import dev.outbox.FailedMessage;
import org.springframework.http.ContentDisposition;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.server.ResponseStatusException;
import org.springframework.web.util.UriUtils;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * The operator API's read-only view of the inboxes' failed messages, JSON under {@code /api/inboxes}: the inboxes
 * and their consumers, a consumer's oldest failed messages, one in full, its value. Needs an operator, as the rest of
 * the API (see {@link SidecarWebConfiguration}); its errors are {@link OperatorErrors}'. Thread-safe.
 */
@RestController
@RequestMapping("/api/inboxes")
class InboxApi {
    private final InboxFailures failures;

    InboxApi(InboxFailures failures) {
        this.failures = failures;
    }

    /**
     * One inbox: its database, failed-messages table, the consumers shown (those with failed messages, or those
     * configured) and whether they are configured.
     */
    record InboxView(String name, String type, String failedTable, List<String> consumers,
                     boolean consumersConfigured) {
    }

    /**
     * One failed message without its value: {@code size} is the value's size in bytes (null for none), {@code url}
     * shows it in full.
     */
    record FailedView(String consumer, String messageId, String topic, int partition, long offset, String key,
                      int attempts, String reason, String failedAt, Integer size, String url) {
        static FailedView of(String inbox, FailedMessage m) {
            byte[] value = m.value();
            return new FailedView(m.consumer(), m.messageId().toString(), m.topic(), m.partition(), m.offset(), m.key(),
                    m.attempts(), m.reason(), m.failedAt() == null ? null : m.failedAt().toString(),
                    value == null ? null : value.length, path(inbox, m, ""));
        }
    }

    /** A page of a consumer's failed messages, oldest first; {@code more} says whether it has more. */
    record PageView(String inbox, String consumer, List<FailedView> records, boolean more) {
    }

    /**
     * One failed message in full; its value is shown up to {@link Payloads#PREVIEW_BYTES} bytes ({@code truncated}
     * says whether that is all of its {@code size} bytes) as {@code format}, and {@code valueUrl} downloads it whole.
     */
    record MessageView(FailedView record, String format, String value, Integer size, boolean truncated,
                       String valueUrl, boolean tombstone) {
    }

    /** The configured inboxes; {@code []} when none is. */
    @GetMapping
    List<InboxView> inboxes() {
        return failures.all().stream().map(i -> new InboxView(i.name(), i.type().name().toLowerCase(
                java.util.Locale.ROOT), i.failedTable(), failures.consumers(i), !i.configuredConsumers().isEmpty()))
                .toList();
    }

    @GetMapping("/{inbox}/failed")
    PageView list(@PathVariable String inbox, @RequestParam(required = false) String consumer,
                  @RequestParam(defaultValue = "50") int limit) {
        InboxFailures.Page page = failures.list(inbox, consumer, limit);
        return new PageView(page.inbox(), page.consumer(), page.records().stream()
                .map(m -> FailedView.of(page.inbox(), m)).toList(), page.more());
    }

    @GetMapping("/{inbox}/failed/{messageId}")
    MessageView show(@PathVariable String inbox, @PathVariable String messageId,
                     @RequestParam(required = false) String consumer,
                     @RequestParam(defaultValue = "text") String format) {
        if (!format.equals("text") && !format.equals("hex")) {
            throw new ResponseStatusException(HttpStatus.BAD_REQUEST, "format must be text or hex: '" + format + "'");
        }
        FailedMessage m = failures.show(inbox, consumer, messageId);
        FailedView view = FailedView.of(inbox, m);
        byte[] value = m.value();
        if (value == null) {
            return new MessageView(view, format, null, null, false, null, true);
        }
        Payloads.Preview p = Payloads.preview(value, format.equals("hex"));
        return new MessageView(view, p.hex() ? "hex" : "text", p.shown(), p.size(), p.hiddenBytes() > 0,
                path(inbox, m, "/value"), false);
    }

    /** The value's bytes as stored, as an attachment ({@code <inbox>-failed-<message id>.bin}). */
    @GetMapping("/{inbox}/failed/{messageId}/value")
    ResponseEntity<byte[]> value(@PathVariable String inbox, @PathVariable String messageId,
                                 @RequestParam(required = false) String consumer) {
        FailedMessage m = failures.show(inbox, consumer, messageId);
        byte[] value = m.value();
        if (value == null) {
            throw new ResponseStatusException(HttpStatus.NOT_FOUND, "failed message " + m.messageId() + " of consumer "
                    + ParkedFilter.quoted(consumer) + " in inbox '" + inbox + "' has no value");
        }
        return ResponseEntity.ok().contentType(MediaType.APPLICATION_OCTET_STREAM).contentLength(value.length)
                .header(HttpHeaders.CONTENT_DISPOSITION, ContentDisposition.attachment()
                        .filename(inbox + "-failed-" + m.messageId() + ".bin").build().toString())
                .body(value);
    }

    /** {@code /api/inboxes/{inbox}/failed/{message id}<tail>?consumer=…}, encoded. */
    static String path(String inbox, FailedMessage m, String tail) {
        return "/api/inboxes/" + UriUtils.encodePathSegment(inbox, StandardCharsets.UTF_8) + "/failed/"
                + m.messageId() + tail + "?consumer=" + URLEncoder.encode(m.consumer(), StandardCharsets.UTF_8);
    }
}
