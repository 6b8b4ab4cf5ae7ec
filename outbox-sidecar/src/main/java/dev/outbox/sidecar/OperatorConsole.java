package dev.outbox.sidecar;

import dev.outbox.DispatcherHealth;
import dev.outbox.Header;
import dev.outbox.ParkedMessage;
import dev.outbox.ParkedRecord;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.security.core.Authentication;
import org.springframework.security.web.csrf.CsrfToken;
import org.springframework.stereotype.Controller;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.ResponseBody;
import org.springframework.web.server.ResponseStatusException;
import org.springframework.web.util.UriUtils;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Locale;

/**
 * The operator console: server-rendered HTML, no script. Per outbox the leader, rate, backlog, lag and parked
 * records, which an operator filters, inspects, and replays or discards after a confirmation step. Every form that
 * changes something carries the CSRF token. Thread-safe.
 */
@Controller
class OperatorConsole {
    private static final String CSS = "body{font-family:system-ui,sans-serif;margin:2em;color:#222}"
            + "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left}"
            + "th{background:#f3f3f3}.ok{color:#070}.bad{color:#b00}.msg{background:#eef;padding:.5em}"
            + "pre{background:#f7f7f7;padding:.6em;white-space:pre-wrap;word-break:break-all}"
            + "form.inline{display:inline}nav a{margin-right:1em}";

    private final Outboxes outboxes;
    private final ParkedOperations parked;

    OperatorConsole(Outboxes outboxes, ParkedOperations parked) {
        this.outboxes = outboxes;
        this.parked = parked;
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
            b.append("<tr><td><a href='/console/outboxes/").append(esc(o.name())).append("'>").append(esc(o.name()))
                    .append("</a></td><td class='").append(h.isUp() ? "ok" : "bad").append("'>")
                    .append(h.status()).append("</td><td>").append(esc(h.leaderId().map(Object::toString).orElse("-")))
                    .append("</td><td>").append(o.rate().map(r -> String.format(Locale.ROOT, "%.1f", r)).orElse("-"))
                    .append("</td><td>").append(h.lastSample().map(s -> Long.toString(s.backlog())).orElse("-"))
                    .append("</td><td>").append(h.lag().map(OperatorConsole::duration).orElse("-"))
                    .append("</td><td>").append(o.parked().parkedCount(dev.outbox.ParkedQuery.first(1)))
                    .append("</td></tr>");
        }
        b.append("</table><p>Backlog and lag are sampled by the leader; a standby shows '-'.</p>");
        return end(b);
    }

    @GetMapping(value = "/console/outboxes/{outbox}", produces = MediaType.TEXT_HTML_VALUE)
    @ResponseBody
    String outbox(@PathVariable String outbox, @RequestParam(required = false) String topic,
                  @RequestParam(required = false) String key, @RequestParam(required = false) String reason,
                  @RequestParam(defaultValue = "0") long after, @RequestParam(required = false) String done,
                  Authentication who, CsrfToken csrf) {
        SidecarOutbox o = parked.outbox(outbox);
        ParkedOperations.Page page = parked.list(outbox, topic, key, reason, after, 50);
        StringBuilder b = page("Outbox " + outbox, who, csrf);
        if (done != null) {
            b.append("<p class='msg' id='done'>").append(esc(done)).append("</p>");
        }
        DispatcherHealth h = o.health();
        b.append("<p>Status <b id='status'>").append(h.status()).append("</b>, leader id ")
                .append(esc(h.leaderId().map(Object::toString).orElse("-"))).append(", rate ")
                .append(o.rate().map(r -> String.format(Locale.ROOT, "%.1f", r)).orElse("-"))
                .append(" records/s, backlog ").append(h.lastSample().map(s -> Long.toString(s.backlog())).orElse("-"))
                .append(", lag ").append(h.lag().map(OperatorConsole::duration).orElse("-")).append(".</p>");
        b.append("<h2>Parked records (").append(page.total()).append(")</h2>")
                .append("<form method='get' id='filter'>topic <input name='topic' value='").append(esc(topic))
                .append("'> key <input name='key' value='").append(esc(key))
                .append("'> reason contains <input name='reason' value='").append(esc(reason))
                .append("'> <button type='submit'>Filter</button></form>");
        String base = "/console/outboxes/" + esc(outbox);
        b.append("<form method='post' action='").append(base).append("/confirm' id='selection'>").append(csrfField(csrf))
                .append("<table id='parked'><tr><th></th><th>id</th><th>topic</th><th>key</th><th>attempts</th>"
                        + "<th>reason</th><th>parked at</th></tr>");
        for (ParkedRecord r : page.records()) {
            b.append("<tr><td><input type='checkbox' name='ids' value='").append(r.id()).append("' id='select-")
                    .append(r.id()).append("'></td><td><a href='").append(base).append("/parked/").append(r.id())
                    .append("'>").append(r.id()).append("</a></td><td>").append(esc(r.topic())).append("</td><td>")
                    .append(esc(r.key())).append("</td><td>").append(r.attempts()).append("</td><td class='reason'>")
                    .append(esc(r.reason())).append("</td><td>").append(r.parkedAt() == null ? "-" : r.parkedAt())
                    .append("</td></tr>");
        }
        b.append("</table><button type='submit' name='action' value='replay' id='replay'>Replay selected…</button> "
                + "<button type='submit' name='action' value='discard' id='discard'>Discard selected…</button></form>");
        if (page.nextAfter() != null) {
            b.append("<p><a id='next' href='").append(base).append("?after=").append(page.nextAfter())
                    .append(query("topic", topic)).append(query("key", key)).append(query("reason", reason))
                    .append("'>Next page</a></p>");
        }
        return end(b);
    }

    @GetMapping(value = "/console/outboxes/{outbox}/parked/{id}", produces = MediaType.TEXT_HTML_VALUE)
    @ResponseBody
    String record(@PathVariable String outbox, @PathVariable long id, @RequestParam(defaultValue = "text") String format,
                  Authentication who, CsrfToken csrf) {
        boolean hex = format.equals("hex");
        ParkedMessage m = parked.show(outbox, id).orElseThrow(() -> new ResponseStatusException(HttpStatus.NOT_FOUND,
                "no parked record " + id));
        ParkedRecord r = m.record();
        String base = "/console/outboxes/" + esc(outbox);
        StringBuilder b = page("Parked record " + id + " of " + outbox, who, csrf);
        b.append("<p><a href='").append(base).append("'>back</a> · show as <a href='?format=text'>text</a> "
                + "<a href='?format=hex'>hex</a></p><table>");
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
            boolean asHex = hex || Payloads.text(value).isEmpty();
            b.append("<p>").append(value.length).append(" bytes, as ").append(asHex ? "hex" : "UTF-8 text")
                    .append("</p><pre id='payload'>").append(esc(Payloads.render(value, hex))).append("</pre>");
        }
        b.append("<form method='post' action='").append(base).append("/confirm'>").append(csrfField(csrf))
                .append("<input type='hidden' name='ids' value='").append(id).append("'>")
                .append("<button name='action' value='replay'>Replay…</button> ")
                .append("<button name='action' value='discard'>Discard…</button></form>");
        return end(b);
    }

    /** The confirmation step: what would be replayed or discarded, and a button that does it. */
    @PostMapping(value = "/console/outboxes/{outbox}/confirm", produces = MediaType.TEXT_HTML_VALUE)
    @ResponseBody
    String confirm(@PathVariable String outbox, @RequestParam String action,
                   @RequestParam(name = "ids", required = false) List<Long> ids, Authentication who, CsrfToken csrf) {
        String verb = verb(action);
        String base = "/console/outboxes/" + esc(outbox);
        if (ids == null || ids.isEmpty()) {
            StringBuilder b = page("Nothing selected", who, csrf);
            b.append("<p>Select at least one record. <a href='").append(base).append("'>back</a></p>");
            return end(b);
        }
        List<ParkedMessage> selected = parked.selected(outbox, ids);
        StringBuilder b = page(Character.toUpperCase(verb.charAt(0)) + verb.substring(1) + " " + selected.size()
                + " parked record(s) of " + outbox + "?", who, csrf);
        b.append(action.equals("discard") ? "<p class='bad'>Discarding deletes the records for good.</p>"
                : "<p>Replaying puts the records back at the tail of the outbox; they are published again.</p>");
        b.append("<form method='post' action='").append(base).append('/').append(action).append("' id='confirm'>")
                .append(csrfField(csrf)).append("<table><tr><th>id</th><th>topic</th><th>key</th><th>reason</th></tr>");
        for (ParkedMessage m : selected) {
            b.append("<tr><td>").append(m.record().id()).append("<input type='hidden' name='ids' value='")
                    .append(m.record().id()).append("'></td><td>").append(esc(m.record().topic())).append("</td><td>")
                    .append(esc(m.record().key())).append("</td><td>").append(esc(m.record().reason()))
                    .append("</td></tr>");
        }
        b.append("</table><button type='submit' id='confirm-").append(action).append("'>Yes, ").append(verb)
                .append("</button> <a href='").append(base).append("'>Cancel</a></form>");
        return end(b);
    }

    @PostMapping("/console/outboxes/{outbox}/replay")
    String replay(@PathVariable String outbox, @RequestParam("ids") List<Long> ids, Authentication who) {
        int n = parked.replay(outbox, ids, who.getName());
        return "redirect:/console/outboxes/" + UriUtils.encodePathSegment(outbox, StandardCharsets.UTF_8)
                + "?done=" + UriUtils.encodeQueryParam("Replayed " + n + " record(s).", StandardCharsets.UTF_8);
    }

    @PostMapping("/console/outboxes/{outbox}/discard")
    String discard(@PathVariable String outbox, @RequestParam("ids") List<Long> ids, Authentication who) {
        int n = parked.discard(outbox, ids, who.getName());
        return "redirect:/console/outboxes/" + UriUtils.encodePathSegment(outbox, StandardCharsets.UTF_8)
                + "?done=" + UriUtils.encodeQueryParam("Discarded " + n + " record(s).", StandardCharsets.UTF_8);
    }

    private static String verb(String action) {
        return switch (action) {
            case "replay" -> "replay";
            case "discard" -> "discard";
            default -> throw new ResponseStatusException(HttpStatus.BAD_REQUEST, "action is replay or discard");
        };
    }

    private static StringBuilder page(String title, Authentication who, CsrfToken csrf) {
        StringBuilder b = new StringBuilder(4096);
        b.append("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>").append(esc(title))
                .append(" · outbox sidecar</title><style>").append(CSS).append("</style></head><body><nav>")
                .append("<a href='/console'>Outboxes</a>");
        if (who != null) {
            b.append("signed in as <b id='user'>").append(esc(who.getName())).append("</b> ")
                    .append("<form class='inline' method='post' action='/logout'>").append(csrfField(csrf))
                    .append("<button type='submit'>Sign out</button></form>");
        }
        b.append("</nav><h1>").append(esc(title)).append("</h1>");
        return b;
    }

    private static String end(StringBuilder b) {
        return b.append("</body></html>").toString();
    }

    private static void row(StringBuilder b, String name, String value) {
        b.append("<tr><th>").append(esc(name)).append("</th><td>").append(esc(value)).append("</td></tr>");
    }

    private static String csrfField(CsrfToken csrf) {
        return csrf == null ? "" : "<input type='hidden' name='" + esc(csrf.getParameterName()) + "' value='"
                + esc(csrf.getToken()) + "'>";
    }

    private static String query(String name, String value) {
        return value == null || value.isEmpty() ? "" : "&amp;" + name + "="
                + esc(UriUtils.encodeQueryParam(value, StandardCharsets.UTF_8));
    }

    private static String duration(Duration d) {
        return d.toMillis() < 10_000 ? d.toMillis() + " ms" : d.toSeconds() + " s";
    }

    /** HTML-escapes {@code s} for text and single- or double-quoted attributes; "" for null. */
    static String esc(String s) {
        if (s == null) {
            return "";
        }
        StringBuilder b = new StringBuilder(s.length() + 16);
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '&' -> b.append("&amp;");
                case '<' -> b.append("&lt;");
                case '>' -> b.append("&gt;");
                case '"' -> b.append("&quot;");
                case '\'' -> b.append("&#39;");
                default -> b.append(c);
            }
        }
        return b.toString();
    }
}
