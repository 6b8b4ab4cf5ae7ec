package dev.outbox.sidecar;

import dev.outbox.DispatcherHealth;
import dev.outbox.Header;
import dev.outbox.ParkedMessage;
import dev.outbox.ParkedRecord;
import org.springframework.http.ContentDisposition;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.security.core.Authentication;
import org.springframework.security.web.csrf.CsrfToken;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.server.ResponseStatusException;
import org.springframework.web.util.UriUtils;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

/**
 * The operator API, JSON under {@code /api}: the outboxes and their parked records (list with filters and paging,
 * show one, download its value, replay and discard selected ones or all those matching a filter). Needs an operator
 * (see {@link SidecarWebConfiguration}); its errors are {@link OperatorErrors}'. Thread-safe.
 */
@RestController
@RequestMapping("/api")
class OperatorApi {
    private final Outboxes outboxes;
    private final ParkedOperations parked;

    OperatorApi(Outboxes outboxes, ParkedOperations parked) {
        this.outboxes = outboxes;
        this.parked = parked;
    }

    /** One outbox at a glance. */
    record OutboxView(String name, String status, String leaderId, Double ratePerSecond, Long backlog, Long parked,
                      Long lagMillis, int inFlightRecords) {
        static OutboxView of(SidecarOutbox o) {
            DispatcherHealth h = o.health();
            return new OutboxView(o.name(), h.status().name(), h.leaderId().map(Object::toString).orElse(null),
                    o.rate().orElse(null), h.lastSample().map(s -> s.backlog()).orElse(null),
                    h.lastSample().map(s -> s.parked()).orElse(null), h.lag().map(d -> d.toMillis()).orElse(null),
                    h.inFlightRecords());
        }
    }

    /** A filter in a request's body: the list's query parameters, by the same names. */
    record FilterBody(String topic, String key, String reason, String messageId, String parkedFrom,
                      String parkedBefore) {
        ParkedFilter parse() {
            return ParkedFilter.parse("filter.", topic, key, reason, messageId, parkedFrom, parkedBefore);
        }
    }

    /**
     * What a replay or discard applies to: the records with the given {@code ids}, or every record matching
     * {@code filter} ({@code {}} for every parked record), {@code expected} being the number the operator saw match
     * (the list's {@code total}) and confirms.
     */
    record Selection(List<Long> ids, FilterBody filter, Long expected) {
    }

    /** The CSRF token to send as the header it names with every POST authenticated by a session or basic. */
    @GetMapping("/csrf")
    Map<String, String> csrf(CsrfToken token) {
        return Map.of("headerName", token.getHeaderName(), "parameterName", token.getParameterName(),
                "token", token.getToken());
    }

    @GetMapping("/outboxes")
    List<OutboxView> outboxes() {
        return outboxes.all().stream().map(OutboxView::of).toList();
    }

    @GetMapping("/outboxes/{outbox}/parked")
    ParkedOperations.Page list(@PathVariable String outbox, @RequestParam(required = false) String topic,
                               @RequestParam(required = false) String key,
                               @RequestParam(required = false) String reason,
                               @RequestParam(required = false) String messageId,
                               @RequestParam(required = false) String parkedFrom,
                               @RequestParam(required = false) String parkedBefore,
                               @RequestParam(defaultValue = "0") long after,
                               @RequestParam(defaultValue = "50") int limit) {
        return parked.list(outbox, ParkedFilter.parse("", topic, key, reason, messageId, parkedFrom, parkedBefore),
                after, limit);
    }

    /** One header, its value as text (UTF-8) or hex. */
    record HeaderView(String name, String value) {
    }

    /**
     * One parked record in full; {@code format} says how value and headers are shown. The value is shown up to
     * {@link Payloads#PREVIEW_BYTES} bytes ({@code truncated} says whether that is all of its {@code size} bytes);
     * {@code valueUrl} downloads it whole.
     */
    record MessageView(ParkedRecord record, String createTime, String format, String value, Integer size,
                       boolean truncated, String valueUrl, boolean tombstone, List<HeaderView> headers,
                       String headersProblem) {
    }

    @GetMapping("/outboxes/{outbox}/parked/{id}")
    MessageView show(@PathVariable String outbox, @PathVariable long id,
                     @RequestParam(defaultValue = "text") String format) {
        if (!format.equals("text") && !format.equals("hex")) {
            throw new ResponseStatusException(HttpStatus.BAD_REQUEST, "format must be text or hex: '" + format + "'");
        }
        boolean hex = format.equals("hex");
        ParkedMessage m = message(outbox, id);
        byte[] value = m.value();
        List<HeaderView> headers = m.headers().stream()
                .map(h -> new HeaderView(h.name(), Payloads.render(headerValue(h), hex))).toList();
        String createTime = m.createTime() == null ? null : m.createTime().toString();
        if (value == null) {
            return new MessageView(m.record(), createTime, format, null, null, false, null, true, headers,
                    m.headersProblem());
        }
        Payloads.Preview p = Payloads.preview(value, hex);
        return new MessageView(m.record(), createTime, p.hex() ? "hex" : "text", p.shown(), p.size(),
                p.hiddenBytes() > 0, valuePath(outbox, id), false, headers, m.headersProblem());
    }

    /** The value's path: {@code /api/outboxes/{outbox}/parked/{id}/value}. */
    static String valuePath(String outbox, long id) {
        return "/api/outboxes/" + UriUtils.encodePathSegment(outbox, StandardCharsets.UTF_8) + "/parked/" + id
                + "/value";
    }

    /** The record's value, its bytes as stored, as an attachment ({@code <outbox>-parked-<id>.bin}). */
    @GetMapping("/outboxes/{outbox}/parked/{id}/value")
    ResponseEntity<byte[]> value(@PathVariable String outbox, @PathVariable long id) {
        byte[] value = message(outbox, id).value();
        if (value == null) {
            throw new ResponseStatusException(HttpStatus.NOT_FOUND, "parked record " + id + " of outbox '" + outbox
                    + "' is a tombstone: it has no value");
        }
        return ResponseEntity.ok().contentType(MediaType.APPLICATION_OCTET_STREAM).contentLength(value.length)
                .header(HttpHeaders.CONTENT_DISPOSITION, ContentDisposition.attachment()
                        .filename(outbox + "-parked-" + id + ".bin").build().toString())
                .body(value);
    }

    private ParkedMessage message(String outbox, long id) {
        return parked.show(outbox, id).orElseThrow(() -> new ResponseStatusException(HttpStatus.NOT_FOUND,
                "no parked record " + id + " in outbox '" + outbox + "'"));
    }

    private static byte[] headerValue(Header h) {
        return h.value();
    }

    @PostMapping("/outboxes/{outbox}/parked/replay")
    Map<String, Integer> replay(@PathVariable String outbox, @RequestBody Selection selection, Authentication who) {
        ParkedFilter filter = filter(selection);
        int n = filter == null ? parked.replay(outbox, selection.ids(), who.getName())
                : parked.replayMatching(outbox, filter, selection.expected(), who.getName());
        return Map.of("replayed", n);
    }

    @PostMapping("/outboxes/{outbox}/parked/discard")
    Map<String, Integer> discard(@PathVariable String outbox, @RequestBody Selection selection, Authentication who) {
        ParkedFilter filter = filter(selection);
        int n = filter == null ? parked.discard(outbox, selection.ids(), who.getName())
                : parked.discardMatching(outbox, filter, selection.expected(), who.getName());
        return Map.of("discarded", n);
    }

    /** The selection's filter, or null when it selects by ids. */
    private static ParkedFilter filter(Selection s) {
        if (s.filter() == null) {
            if (s.expected() != null) {
                throw new ResponseStatusException(HttpStatus.BAD_REQUEST, "expected goes with a filter, not with ids");
            }
            return null;
        }
        if (s.ids() != null) {
            throw new ResponseStatusException(HttpStatus.BAD_REQUEST, "select by ids or by a filter, not both");
        }
        if (s.expected() == null) {
            throw new ResponseStatusException(HttpStatus.BAD_REQUEST, "expected is required with a filter: the"
                    + " number of records the filter matches (the list's total), as a confirmation");
        }
        return s.filter().parse();
    }
}
