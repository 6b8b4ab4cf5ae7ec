package dev.outbox.sidecar;

import dev.outbox.DispatcherHealth;
import dev.outbox.Header;
import dev.outbox.ParkedMessage;
import dev.outbox.ParkedRecord;
import org.springframework.http.HttpStatus;
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

import java.util.List;
import java.util.Map;

/**
 * The operator API, JSON under {@code /api}: the outboxes and their parked records (list with filters and paging,
 * show one, replay and discard selected). Needs an operator (see {@link SidecarWebConfiguration}). Thread-safe.
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

    /** The ids a replay or discard applies to. */
    record Selection(List<Long> ids) {
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
                               @RequestParam(defaultValue = "0") long after,
                               @RequestParam(defaultValue = "50") int limit) {
        return parked.list(outbox, topic, key, reason, after, limit);
    }

    /** One header, its value as text (UTF-8) or hex. */
    record HeaderView(String name, String value) {
    }

    /** One parked record in full; {@code format} says how value and headers are shown. */
    record MessageView(ParkedRecord record, String createTime, String format, String value, boolean tombstone,
                       List<HeaderView> headers, String headersProblem) {
    }

    @GetMapping("/outboxes/{outbox}/parked/{id}")
    MessageView show(@PathVariable String outbox, @PathVariable long id,
                     @RequestParam(defaultValue = "text") String format) {
        if (!format.equals("text") && !format.equals("hex")) {
            throw new ResponseStatusException(HttpStatus.BAD_REQUEST, "format is text or hex: '" + format + "'");
        }
        boolean hex = format.equals("hex");
        ParkedMessage m = parked.show(outbox, id).orElseThrow(() -> new ResponseStatusException(HttpStatus.NOT_FOUND,
                "no parked record " + id + " in outbox '" + outbox + "'"));
        byte[] value = m.value();
        boolean hexValue = hex || (value != null && Payloads.text(value).isEmpty());
        List<HeaderView> headers = m.headers().stream()
                .map(h -> new HeaderView(h.name(), Payloads.render(headerValue(h), hex))).toList();
        return new MessageView(m.record(), m.createTime() == null ? null : m.createTime().toString(),
                hexValue ? "hex" : "text", Payloads.render(value, hex), value == null, headers, m.headersProblem());
    }

    private static byte[] headerValue(Header h) {
        return h.value();
    }

    @PostMapping("/outboxes/{outbox}/parked/replay")
    Map<String, Integer> replay(@PathVariable String outbox, @RequestBody Selection selection, Authentication who) {
        return Map.of("replayed", parked.replay(outbox, selection.ids(), who.getName()));
    }

    @PostMapping("/outboxes/{outbox}/parked/discard")
    Map<String, Integer> discard(@PathVariable String outbox, @RequestBody Selection selection, Authentication who) {
        return Map.of("discarded", parked.discard(outbox, selection.ids(), who.getName()));
    }
}
