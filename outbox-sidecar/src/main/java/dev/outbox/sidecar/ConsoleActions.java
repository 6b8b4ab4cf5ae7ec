package dev.outbox.sidecar;

import dev.outbox.ParkedMessage;
import dev.outbox.ParkedRecord;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.security.core.Authentication;
import org.springframework.security.web.csrf.CsrfToken;
import org.springframework.stereotype.Controller;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.ResponseBody;
import org.springframework.web.server.ResponseStatusException;
import org.springframework.web.util.UriUtils;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;

import static dev.outbox.sidecar.ConsoleHtml.base;
import static dev.outbox.sidecar.ConsoleHtml.csrfField;
import static dev.outbox.sidecar.ConsoleHtml.end;
import static dev.outbox.sidecar.ConsoleHtml.esc;
import static dev.outbox.sidecar.ConsoleHtml.page;

/**
 * The console's changes, each after a confirmation page: replay or discard the selected records, or all records
 * matching a filter (the confirmation names the number, and the change applies only if that many still match).
 * Thread-safe.
 */
@Controller
class ConsoleActions {
    private final ParkedOperations parked;

    ConsoleActions(ParkedOperations parked) {
        this.parked = parked;
    }

    /** The confirmation step: what would be replayed or discarded, and a button that does it. */
    @PostMapping(value = "/console/outboxes/{outbox}/confirm", produces = MediaType.TEXT_HTML_VALUE)
    @ResponseBody
    String confirm(@PathVariable String outbox, @RequestParam String action,
                   @RequestParam(name = "ids", required = false) List<Long> ids, Authentication who, CsrfToken csrf) {
        String verb = verb(action);
        String base = base(outbox);
        if (ids == null || ids.isEmpty()) {
            StringBuilder b = page("Nothing selected", who, csrf);
            b.append("<p>Select at least one record. <a href='").append(base).append("'>back</a></p>");
            return end(b);
        }
        List<ParkedMessage> selected = parked.selected(outbox, ids);
        StringBuilder b = page(capitalized(verb) + " " + selected.size() + " parked record(s) of " + outbox + "?", who,
                csrf);
        warning(b, action);
        b.append("<form method='post' action='").append(base).append('/').append(action).append("' id='confirm'>")
                .append(csrfField(csrf));
        table(b, selected.stream().map(ParkedMessage::record).toList(), true);
        b.append("<button type='submit' id='confirm-").append(action).append("'>Yes, ").append(verb)
                .append("</button> <a href='").append(base).append("'>Cancel</a></form>");
        return end(b);
    }

    /**
     * The confirmation step for all records matching a filter: how many, the first of them, and a button that does
     * it for that many.
     */
    @PostMapping(value = "/console/outboxes/{outbox}/confirm-matching", produces = MediaType.TEXT_HTML_VALUE)
    @ResponseBody
    String confirmMatching(@PathVariable String outbox, @RequestParam String action,
                           @RequestParam(required = false) String topic, @RequestParam(required = false) String key,
                           @RequestParam(required = false) String reason,
                           @RequestParam(required = false) String messageId,
                           @RequestParam(required = false) String parkedFrom,
                           @RequestParam(required = false) String parkedBefore, Authentication who, CsrfToken csrf) {
        verb(action);
        ParkedFilter filter = ParkedFilter.parse("", topic, key, reason, messageId, parkedFrom, parkedBefore);
        return matchingPage(outbox, action, filter, null, who, csrf);
    }

    private String matchingPage(String outbox, String action, ParkedFilter filter, String changed, Authentication who,
                                CsrfToken csrf) {
        String verb = verb(action);
        String base = base(outbox);
        ParkedOperations.Page first = parked.list(outbox, filter, 0, OperatorConsole.PAGE);
        long n = first.total();
        if (n == 0 || n > ParkedOperations.MAX_MATCHING) {
            StringBuilder b = page(n == 0 ? "Nothing matches" : "Too many match", who, csrf);
            if (changed != null) {
                b.append("<p class='msg' id='changed'>").append(esc(changed)).append("</p>");
            }
            b.append("<p>").append(n).append(" parked record(s) match (").append(esc(filter.describe())).append(")")
                    .append(n == 0 ? "." : ": narrow the filter to " + ParkedOperations.MAX_MATCHING + " or fewer.")
                    .append(" <a href='").append(base).append("'>back</a></p>");
            return end(b);
        }
        StringBuilder b = page(capitalized(verb) + " all " + n + " parked record(s) of " + outbox + " matching the"
                + " filter?", who, csrf);
        if (changed != null) {
            b.append("<p class='msg' id='changed'>").append(esc(changed)).append("</p>");
        }
        b.append("<p id='filter-described'>The filter: ").append(esc(filter.describe())).append(".</p>");
        warning(b, action);
        b.append("<form method='post' action='").append(base).append('/').append(action).append("-matching'")
                .append(" id='confirm'>").append(csrfField(csrf)).append(ConsoleHtml.hidden(filter))
                .append(ConsoleHtml.hidden("expected", Long.toString(n)));
        table(b, first.records(), false);
        if (n > first.records().size()) {
            b.append("<p>… and ").append(n - first.records().size()).append(" more.</p>");
        }
        b.append("<button type='submit' id='confirm-").append(action).append("-matching'>Yes, ").append(verb)
                .append(" all ").append(n).append("</button> <a href='").append(base).append('?')
                .append(ConsoleHtml.query(filter).replaceFirst("^&amp;", "")).append("'>Cancel</a></form>");
        return end(b);
    }

    @PostMapping("/console/outboxes/{outbox}/replay")
    String replay(@PathVariable String outbox, @RequestParam("ids") List<Long> ids, Authentication who) {
        int n = parked.replay(outbox, ids, who.getName());
        return done(outbox, "Replayed " + n + " record(s).");
    }

    @PostMapping("/console/outboxes/{outbox}/discard")
    String discard(@PathVariable String outbox, @RequestParam("ids") List<Long> ids, Authentication who) {
        int n = parked.discard(outbox, ids, who.getName());
        return done(outbox, "Discarded " + n + " record(s).");
    }

    @PostMapping(value = "/console/outboxes/{outbox}/replay-matching", produces = MediaType.TEXT_HTML_VALUE)
    @ResponseBody
    ResponseEntity<String> replayMatching(@PathVariable String outbox, @RequestParam(required = false) String topic,
                          @RequestParam(required = false) String key, @RequestParam(required = false) String reason,
                          @RequestParam(required = false) String messageId,
                          @RequestParam(required = false) String parkedFrom,
                          @RequestParam(required = false) String parkedBefore, @RequestParam long expected,
                          Authentication who, CsrfToken csrf) {
        return matching("replay", outbox, ParkedFilter.parse("", topic, key, reason, messageId, parkedFrom,
                parkedBefore), expected, who, csrf);
    }

    @PostMapping(value = "/console/outboxes/{outbox}/discard-matching", produces = MediaType.TEXT_HTML_VALUE)
    @ResponseBody
    ResponseEntity<String> discardMatching(@PathVariable String outbox, @RequestParam(required = false) String topic,
                           @RequestParam(required = false) String key, @RequestParam(required = false) String reason,
                           @RequestParam(required = false) String messageId,
                           @RequestParam(required = false) String parkedFrom,
                           @RequestParam(required = false) String parkedBefore, @RequestParam long expected,
                           Authentication who, CsrfToken csrf) {
        return matching("discard", outbox, ParkedFilter.parse("", topic, key, reason, messageId, parkedFrom,
                parkedBefore), expected, who, csrf);
    }

    /**
     * Does it, and goes back to the outbox's page; if another number matches now, shows the confirmation again
     * with the new number (status 409).
     */
    private ResponseEntity<String> matching(String action, String outbox, ParkedFilter filter, long expected,
                                            Authentication who, CsrfToken csrf) {
        int n;
        try {
            n = action.equals("replay") ? parked.replayMatching(outbox, filter, expected, who.getName())
                    : parked.discardMatching(outbox, filter, expected, who.getName());
        } catch (ParkedOperations.CountChanged e) {
            return ResponseEntity.status(HttpStatus.CONFLICT).contentType(MediaType.TEXT_HTML).body(matchingPage(
                    outbox, action, filter, "The number matching changed: " + e.matching() + " now, not " + expected
                            + ". Confirm again.", who, csrf));
        }
        return ResponseEntity.status(HttpStatus.FOUND).location(URI.create(donePath(outbox, (action.equals("replay")
                ? "Replayed " : "Discarded ") + n + " record(s)."))).build();
    }

    private static String done(String outbox, String message) {
        return "redirect:" + donePath(outbox, message);
    }

    /** The outbox's page, showing {@code message}. */
    private static String donePath(String outbox, String message) {
        return "/console/outboxes/" + UriUtils.encodePathSegment(outbox, StandardCharsets.UTF_8)
                + "?done=" + UriUtils.encodeQueryParam(message, StandardCharsets.UTF_8);
    }

    private static void warning(StringBuilder b, String action) {
        b.append(action.equals("discard") ? "<p class='bad'>Discarding deletes the records for good.</p>"
                : "<p>Replaying puts the records back at the tail of the outbox; they are published again.</p>");
    }

    /** The records, with their ids as hidden fields when {@code withIds} (the selection to confirm). */
    private static void table(StringBuilder b, List<ParkedRecord> records, boolean withIds) {
        b.append("<table><tr><th>id</th><th>message id</th><th>topic</th><th>key</th><th>reason</th></tr>");
        for (ParkedRecord r : records) {
            b.append("<tr><td>").append(r.id());
            if (withIds) {
                b.append(ConsoleHtml.hidden("ids", Long.toString(r.id())));
            }
            b.append("</td><td class='id'>").append(r.messageId() == null ? "-" : r.messageId()).append("</td><td>")
                    .append(esc(r.topic())).append("</td><td>").append(esc(r.key())).append("</td><td>")
                    .append(esc(r.reason())).append("</td></tr>");
        }
        b.append("</table>");
    }

    private static String verb(String action) {
        return switch (action) {
            case "replay" -> "replay";
            case "discard" -> "discard";
            default -> throw new ResponseStatusException(HttpStatus.BAD_REQUEST, "action must be replay or discard: '"
                    + action + "'");
        };
    }

    private static String capitalized(String verb) {
        return Character.toUpperCase(verb.charAt(0)) + verb.substring(1);
    }
}
