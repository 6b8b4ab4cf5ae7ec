package dev.outbox.sidecar;

import dev.outbox.DispatcherHealth;
import dev.outbox.Header;
import dev.outbox.ParkedMessage;
import dev.outbox.ParkedQuery;
import dev.outbox.ParkedRecord;
import jakarta.servlet.http.HttpServletResponse;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.security.core.Authentication;
import org.springframework.security.web.csrf.CsrfToken;
import org.springframework.stereotype.Controller;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.ResponseBody;
import org.springframework.web.server.ResponseStatusException;

import java.util.Locale;

import static dev.outbox.sidecar.ConsoleHtml.base;
import static dev.outbox.sidecar.ConsoleHtml.bytes;
import static dev.outbox.sidecar.ConsoleHtml.csrfField;
import static dev.outbox.sidecar.ConsoleHtml.end;
import static dev.outbox.sidecar.ConsoleHtml.esc;
import static dev.outbox.sidecar.ConsoleHtml.page;
import static dev.outbox.sidecar.ConsoleHtml.row;

/**
 * The operator console's pages: server-rendered HTML, no script. Per outbox the leader, rate, backlog, lag and
 * parked records, which an operator filters (topic, key, reason, message id, when parked) and inspects; selected
 * records, or all those matching the filter, are replayed or discarded after a confirmation step
 * ({@link ConsoleActions}). The overview also has the inboxes' failures ({@link InboxConsole}), when inboxes are
 * configured. Every form that changes something carries the CSRF token. Thread-safe.
 */
@Controller
class OperatorConsole {
    /** Parked records a page lists. */
    static final int PAGE = 50;

    private final Outboxes outboxes;
    private final ParkedOperations parked;
    private final InboxFailures inboxFailures;

    OperatorConsole(Outboxes outboxes, ParkedOperations parked, InboxFailures inboxFailures) {
        this.outboxes = outboxes;
        this.parked = parked;
        this.inboxFailures = inboxFailures;
    }

    @GetMapping("/")
    String root() {
        return "redirect:/console";
    }

    @GetMapping(value = "/console", produces = MediaType.TEXT_HTML_VALUE)
    @ResponseBody
    String overview(Authentication who, CsrfToken csrf) {
        StringBuilder b = page("Outboxes", who, csrf);
        b.append("<table id='outboxes'><tr><th>outbox</th><th>status</th><th>leader id</th><th>rate (records/s)</th>"
                + "<th>backlog</th><th>lag</th><th>parked</th></tr>");
        for (SidecarOutbox o : outboxes.all()) {
            DispatcherHealth h = o.health();
            b.append("<tr><td><a href='").append(base(o.name())).append("'>").append(esc(o.name()))
                    .append("</a></td><td class='").append(h.isUp() ? "ok" : "bad").append("'>")
                    .append(h.status()).append("</td><td>").append(esc(h.leaderId().map(Object::toString).orElse("-")))
                    .append("</td><td>").append(o.rate().map(r -> String.format(Locale.ROOT, "%.1f", r)).orElse("-"))
                    .append("</td><td>").append(h.lastSample().map(s -> Long.toString(s.backlog())).orElse("-"))
                    .append("</td><td>").append(h.lag().map(ConsoleHtml::duration).orElse("-"))
                    .append("</td><td>").append(o.parked().parkedCount(ParkedQuery.first(1)))
                    .append("</td></tr>");
        }
        b.append("</table><p>Backlog and lag are sampled by the leader; a standby shows '-'.</p>");
        InboxConsole.overviewSection(b, inboxFailures);
        return end(b);
    }

    @GetMapping(value = "/console/outboxes/{outbox}", produces = MediaType.TEXT_HTML_VALUE)
    @ResponseBody
    String outbox(@PathVariable String outbox, @RequestParam(required = false) String topic,
                  @RequestParam(required = false) String key, @RequestParam(required = false) String reason,
                  @RequestParam(required = false) String messageId,
                  @RequestParam(required = false) String parkedFrom,
                  @RequestParam(required = false) String parkedBefore,
                  @RequestParam(defaultValue = "0") long after, @RequestParam(required = false) String done,
                  Authentication who, CsrfToken csrf, HttpServletResponse response) {
        SidecarOutbox o = parked.outbox(outbox);
        StringBuilder b = page("Outbox " + outbox, who, csrf);
        if (done != null) {
            b.append("<p class='msg' id='done'>").append(esc(done)).append("</p>");
        }
        DispatcherHealth h = o.health();
        b.append("<p>Status <b id='status'>").append(h.status()).append("</b>, leader id ")
                .append(esc(h.leaderId().map(Object::toString).orElse("-"))).append(", rate ")
                .append(o.rate().map(r -> String.format(Locale.ROOT, "%.1f", r)).orElse("-"))
                .append(" records/s, backlog ").append(h.lastSample().map(s -> Long.toString(s.backlog())).orElse("-"))
                .append(", lag ").append(h.lag().map(ConsoleHtml::duration).orElse("-")).append(".</p>");
        ParkedFilter filter;
        try {
            filter = ParkedFilter.parse("", topic, key, reason, messageId, parkedFrom, parkedBefore);
        } catch (ResponseStatusException e) {
            response.setStatus(HttpStatus.BAD_REQUEST.value());
            b.append("<h2>Parked records</h2>");
            filterForm(b, outbox, topic, key, reason, messageId, parkedFrom, parkedBefore);
            b.append("<p class='bad' id='filter-error'>").append(esc(e.getReason())).append("</p>");
            return end(b);
        }
        ParkedOperations.Page page = parked.list(outbox, filter, after, PAGE);
        b.append("<h2>Parked records (").append(page.total()).append(")</h2>");
        filterForm(b, outbox, topic, key, reason, messageId, parkedFrom, parkedBefore);
        String base = base(outbox);
        if (page.total() > ParkedOperations.MAX_MATCHING) {
            b.append("<p id='matching'>").append(page.total()).append(" records match (").append(esc(filter.describe()))
                    .append("): narrow the filter to ").append(ParkedOperations.MAX_MATCHING)
                    .append(" or fewer to replay or discard them all at once.</p>");
        } else if (page.total() > 0) {
            String n = Long.toString(page.total());
            b.append("<form method='post' action='").append(base).append("/confirm-matching' id='select-all'>")
                    .append(csrfField(csrf)).append(ConsoleHtml.hidden(filter)).append("<span id='matching'>")
                    .append(n).append(" record(s) match (").append(esc(filter.describe())).append(").</span> ")
                    .append("<button type='submit' name='action' value='replay' id='replay-all'>Replay all ").append(n)
                    .append(" matching…</button> <button type='submit' name='action' value='discard' id='discard-all'>")
                    .append("Discard all ").append(n).append(" matching…</button></form>");
        }
        b.append("<form method='post' action='").append(base).append("/confirm' id='selection'>").append(csrfField(csrf))
                .append("<table id='parked'><tr><th></th><th>id</th><th>message id</th><th>topic</th><th>key</th>"
                        + "<th>attempts</th><th>reason</th><th>parked at</th></tr>");
        for (ParkedRecord r : page.records()) {
            b.append("<tr><td><input type='checkbox' name='ids' value='").append(r.id()).append("' id='select-")
                    .append(r.id()).append("'></td><td><a href='").append(base).append("/parked/").append(r.id())
                    .append("'>").append(r.id()).append("</a></td><td class='id message-id'>")
                    .append(r.messageId() == null ? "-" : r.messageId()).append("</td><td>").append(esc(r.topic()))
                    .append("</td><td>").append(esc(r.key())).append("</td><td>").append(r.attempts())
                    .append("</td><td class='reason'>").append(esc(r.reason())).append("</td><td>")
                    .append(r.parkedAt() == null ? "-" : r.parkedAt()).append("</td></tr>");
        }
        b.append("</table><button type='submit' name='action' value='replay' id='replay'>Replay selected…</button> "
                + "<button type='submit' name='action' value='discard' id='discard'>Discard selected…</button></form>");
        if (page.nextAfter() != null) {
            b.append("<p><a id='next' href='").append(base).append("?after=").append(page.nextAfter())
                    .append(ConsoleHtml.query(filter)).append("'>Next page</a></p>");
        }
        return end(b);
    }

    private static void filterForm(StringBuilder b, String outbox, String topic, String key, String reason,
                                   String messageId, String parkedFrom, String parkedBefore) {
        b.append("<form method='get' id='filter'>topic <input name='topic' value='").append(esc(topic))
                .append("'> key <input name='key' value='").append(esc(key))
                .append("'> reason contains <input name='reason' value='").append(esc(reason))
                .append("'> message id <input name='messageId' size='36' value='").append(esc(messageId))
                .append("'><br>parked from <input name='parkedFrom' placeholder='2025-01-31T12:00:00Z' value='")
                .append(esc(parkedFrom)).append("'> before <input name='parkedBefore' placeholder='2025-01-31T13:00:00Z'"
                        + " value='").append(esc(parkedBefore)).append("'> (UTC) <button type='submit'>Filter</button> ")
                .append("<a href='").append(base(outbox)).append("'>Clear</a></form>");
    }

    @GetMapping(value = "/console/outboxes/{outbox}/parked/{id}", produces = MediaType.TEXT_HTML_VALUE)
    @ResponseBody
    String record(@PathVariable String outbox, @PathVariable long id, @RequestParam(defaultValue = "text") String format,
                  Authentication who, CsrfToken csrf) {
        boolean hex = format.equals("hex");
        ParkedMessage m = parked.show(outbox, id).orElseThrow(() -> new ResponseStatusException(HttpStatus.NOT_FOUND,
                "no parked record " + id + " in outbox '" + outbox + "'"));
        ParkedRecord r = m.record();
        String base = base(outbox);
        StringBuilder b = page("Parked record " + id + " of " + outbox, who, csrf);
        b.append("<p><a href='").append(base).append("'>back</a> · show as <a href='?format=text'>text</a> "
                + "<a href='?format=hex'>hex</a></p><table>");
        row(b, "message id", r.messageId() == null ? "-" : r.messageId().toString());
        row(b, "topic", r.topic());
        row(b, "key", r.key());
        row(b, "attempts", Integer.toString(r.attempts()));
        row(b, "reason", r.reason());
        row(b, "parked at", r.parkedAt() == null ? "-" : r.parkedAt().toString());
        row(b, "created at", m.createTime() == null ? "-" : m.createTime().toString());
        b.append("</table><h2>Headers</h2>");
        if (m.headersProblem() != null) {
            b.append("<p class='bad'>").append(esc(m.headersProblem())).append("</p>");
        }
        b.append("<table>");
        for (Header h : m.headers()) {
            byte[] v = h.value();
            row(b, h.name(), v == null ? "(null)" : Payloads.render(v, hex));
        }
        byte[] value = m.value();
        b.append("</table><h2>Payload</h2>");
        if (value == null) {
            b.append("<p>(tombstone: no value)</p>");
        } else {
            Payloads.Preview p = Payloads.preview(value, hex);
            b.append("<p id='payload-size'>").append(bytes(p.size())).append(" bytes, as ")
                    .append(p.hex() ? "hex" : "UTF-8 text");
            if (p.hiddenBytes() > 0) {
                b.append("; the first ").append(bytes(p.shownBytes())).append(" shown, <b id='payload-hidden'>")
                        .append(bytes(p.hiddenBytes())).append(" bytes hidden</b>");
            }
            b.append(". <a id='download' href='").append(esc(OperatorApi.valuePath(outbox, id)))
                    .append("'>Download the value</a></p><pre id='payload'>").append(esc(p.shown())).append("</pre>");
        }
        b.append("<form method='post' action='").append(base).append("/confirm'>").append(csrfField(csrf))
                .append(ConsoleHtml.hidden("ids", Long.toString(id)))
                .append("<button name='action' value='replay'>Replay…</button> ")
                .append("<button name='action' value='discard'>Discard…</button></form>");
        return end(b);
    }
}
