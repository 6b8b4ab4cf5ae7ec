package dev.outbox.sidecar;

import dev.outbox.FailedMessage;
import org.springframework.http.MediaType;
import org.springframework.security.core.Authentication;
import org.springframework.security.web.csrf.CsrfToken;
import org.springframework.stereotype.Controller;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.ResponseBody;

import java.util.List;

import static dev.outbox.sidecar.ConsoleHtml.bytes;
import static dev.outbox.sidecar.ConsoleHtml.consumerParam;
import static dev.outbox.sidecar.ConsoleHtml.end;
import static dev.outbox.sidecar.ConsoleHtml.esc;
import static dev.outbox.sidecar.ConsoleHtml.inboxBase;
import static dev.outbox.sidecar.ConsoleHtml.page;
import static dev.outbox.sidecar.ConsoleHtml.row;
import static dev.outbox.sidecar.ConsoleHtml.truncated;

/**
 * The console's read-only pages of the inboxes' failed messages ({@link InboxFailures}): the "Inbox failures"
 * section of the overview, beside the outboxes and their parked counts; an inbox's page with a consumer's oldest
 * failed messages (reason and payload cut short); one failed message in full. No page changes anything. Thread-safe.
 */
@Controller
class InboxConsole {
    /** Failed messages a page lists. */
    static final int PAGE = 50;
    /** The characters of a reason a list shows; the message's page shows it whole. */
    static final int REASON_CHARS = 200;
    /** The bytes of a payload a list shows; the message's page shows {@link Payloads#PREVIEW_BYTES}. */
    static final int PAYLOAD_BYTES = 64;

    private final InboxFailures failures;

    InboxConsole(InboxFailures failures) {
        this.failures = failures;
    }

    /**
     * The overview's "Inbox failures" section: per inbox, the consumers shown, each a link to its failed messages.
     * Nothing when no inbox is configured. An inbox whose database cannot be read says so in its row.
     */
    static void overviewSection(StringBuilder b, InboxFailures failures) {
        if (failures.isEmpty()) {
            return;
        }
        b.append("<h2>Inbox failures</h2><table id='inboxes'><tr><th>inbox</th><th>failed-messages table</th>"
                + "<th>consumers with failed messages</th></tr>");
        for (SidecarInbox i : failures.all()) {
            b.append("<tr><td><a href='").append(inboxBase(i.name())).append("'>").append(esc(i.name()))
                    .append("</a></td><td class='id'>").append(esc(i.failedTable())).append("</td><td>");
            try {
                List<String> consumers = failures.consumers(i);
                if (consumers.isEmpty()) {
                    b.append("none");
                }
                for (int n = 0; n < consumers.size(); n++) {
                    b.append(n == 0 ? "" : ", ").append("<a href='").append(inboxBase(i.name()))
                            .append(consumerParam(consumers.get(n), true)).append("'>").append(esc(consumers.get(n)))
                            .append("</a>");
                }
            } catch (RuntimeException e) {
                b.append("<span class='bad'>cannot read it: ").append(esc(Outboxes.rootMessage(e))).append("</span>");
            }
            b.append("</td></tr>");
        }
        b.append("</table><p>Read-only: a failed message is dealt with by its consumer's team (see the sidecar's"
                + " guide).</p>");
    }

    @GetMapping(value = "/console/inboxes/{inbox}", produces = MediaType.TEXT_HTML_VALUE)
    @ResponseBody
    String inbox(@PathVariable String inbox, @RequestParam(required = false) String consumer, Authentication who,
                 CsrfToken csrf) {
        SidecarInbox i = failures.inbox(inbox);
        StringBuilder b = page("Inbox " + inbox, who, csrf);
        b.append("<p>Messages the inbox's consumers gave up on, from ").append(esc(i.failedTable()))
                .append(", oldest first. Read-only.</p>");
        List<String> consumers = failures.consumers(i);
        if (consumers.isEmpty()) {
            b.append("<p id='no-failures'>No consumer has failed messages.</p>");
            return end(b);
        }
        String selected = consumer == null || consumer.isEmpty() ? consumers.get(0) : consumer;
        b.append("<p id='consumers'>Consumers: ");
        for (int n = 0; n < consumers.size(); n++) {
            String c = consumers.get(n);
            b.append(n == 0 ? "" : " · ");
            if (c.equals(selected)) {
                b.append("<b>").append(esc(c)).append("</b>");
            } else {
                b.append("<a href='").append(inboxBase(inbox)).append(consumerParam(c, true)).append("'>")
                        .append(esc(c)).append("</a>");
            }
        }
        b.append("</p>");
        InboxFailures.Page page = failures.list(inbox, selected, PAGE);
        b.append("<h2>Inbox failures of <span id='consumer'>").append(esc(selected)).append("</span> (")
                .append(page.records().size()).append(page.more() ? "+" : "").append(")</h2>");
        b.append("<table id='failed'><tr><th>message id</th><th>topic / partition @ offset</th><th>key</th>"
                + "<th>attempts</th><th>failed at</th><th>reason</th><th>payload</th></tr>");
        for (FailedMessage m : page.records()) {
            b.append("<tr><td class='id message-id'><a href='").append(inboxBase(inbox)).append("/failed/")
                    .append(m.messageId()).append(consumerParam(m.consumer(), true)).append("'>").append(m.messageId())
                    .append("</a></td><td>").append(esc(m.topic())).append(" / ").append(m.partition()).append(" @ ")
                    .append(m.offset()).append("</td><td>").append(esc(truncated(m.key(), REASON_CHARS)))
                    .append("</td><td>").append(m.attempts()).append("</td><td>")
                    .append(m.failedAt() == null ? "-" : m.failedAt()).append("</td><td class='reason'>")
                    .append(esc(truncated(m.reason(), REASON_CHARS))).append("</td><td class='payload'>");
            payloadCell(b, m.value());
            b.append("</td></tr>");
        }
        b.append("</table>");
        if (page.more()) {
            b.append("<p id='more'>The oldest ").append(PAGE).append(" are shown; the others appear as these are dealt"
                    + " with.</p>");
        }
        return end(b);
    }

    /** The first {@value #PAYLOAD_BYTES} bytes, as text or hex, and the size when that is not all. */
    private static void payloadCell(StringBuilder b, byte[] value) {
        if (value == null) {
            b.append("(none)");
            return;
        }
        Payloads.Preview p = Payloads.preview(value, false, PAYLOAD_BYTES);
        b.append("<code>").append(esc(p.shown())).append("</code>");
        if (p.hiddenBytes() > 0) {
            b.append("… (").append(bytes(p.size())).append(" bytes").append(p.hex() ? ", hex" : "").append(")");
        } else if (p.hex()) {
            b.append(" (hex)");
        }
    }

    @GetMapping(value = "/console/inboxes/{inbox}/failed/{messageId}", produces = MediaType.TEXT_HTML_VALUE)
    @ResponseBody
    String message(@PathVariable String inbox, @PathVariable String messageId,
                   @RequestParam(required = false) String consumer, @RequestParam(defaultValue = "text") String format,
                   Authentication who, CsrfToken csrf) {
        FailedMessage m = failures.show(inbox, consumer, messageId);
        boolean hex = format.equals("hex");
        String self = inboxBase(inbox) + "/failed/" + m.messageId() + consumerParam(m.consumer(), true);
        StringBuilder b = page("Failed message " + m.messageId() + " of " + m.consumer(), who, csrf);
        b.append("<p><a href='").append(inboxBase(inbox)).append(consumerParam(m.consumer(), true))
                .append("'>back</a> · show as <a href='").append(self).append("&amp;format=text'>text</a> <a href='")
                .append(self).append("&amp;format=hex'>hex</a></p><table>");
        row(b, "inbox", inbox);
        row(b, "consumer", m.consumer());
        row(b, "message id", m.messageId().toString());
        row(b, "topic", m.topic());
        row(b, "partition", Integer.toString(m.partition()));
        row(b, "offset", Long.toString(m.offset()));
        row(b, "key", m.key() == null ? "(none)" : m.key());
        row(b, "attempts", Integer.toString(m.attempts()));
        row(b, "failed at", m.failedAt() == null ? "-" : m.failedAt().toString());
        b.append("</table><h2>Reason</h2><pre id='reason'>").append(esc(m.reason())).append("</pre><h2>Payload</h2>");
        byte[] value = m.value();
        if (value == null) {
            b.append("<p>(no value)</p>");
            return end(b);
        }
        Payloads.Preview p = Payloads.preview(value, hex);
        b.append("<p id='payload-size'>").append(bytes(p.size())).append(" bytes, as ")
                .append(p.hex() ? "hex" : "UTF-8 text");
        if (p.hiddenBytes() > 0) {
            b.append("; the first ").append(bytes(p.shownBytes())).append(" shown, <b id='payload-hidden'>")
                    .append(bytes(p.hiddenBytes())).append(" bytes hidden</b>");
        }
        b.append(". <a id='download' href='").append(esc(InboxApi.path(inbox, m, "/value")))
                .append("'>Download the value</a></p><pre id='payload'>").append(esc(p.shown())).append("</pre>");
        return end(b);
    }
}
