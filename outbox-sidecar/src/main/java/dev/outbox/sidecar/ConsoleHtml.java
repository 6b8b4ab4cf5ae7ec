package dev.outbox.sidecar;

import org.springframework.security.core.Authentication;
import org.springframework.security.web.csrf.CsrfToken;
import org.springframework.web.util.UriUtils;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;

/** The console's HTML: page frame, escaping, form fields and links. Stateless. */
final class ConsoleHtml {
    private static final String CSS = "body{font-family:system-ui,sans-serif;margin:2em;color:#222}"
            + "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left}"
            + "th{background:#f3f3f3}.ok{color:#070}.bad{color:#b00}.msg{background:#eef;padding:.5em}"
            + "pre{background:#f7f7f7;padding:.6em;white-space:pre-wrap;word-break:break-all}"
            + "form.inline{display:inline}nav a{margin-right:1em}td.id{font-family:monospace;font-size:90%}";

    private ConsoleHtml() {
    }

    /** An outbox's page: {@code /console/outboxes/<name>} (names are URL-safe, see {@link Outboxes}). */
    static String base(String outbox) {
        return "/console/outboxes/" + esc(outbox);
    }

    /** An inbox's page: {@code /console/inboxes/<name>} (names are URL-safe, see {@link Inboxes}). */
    static String inboxBase(String inbox) {
        return "/console/inboxes/" + esc(inbox);
    }

    /** {@code ?consumer=<name>} (or {@code &amp;consumer=} after another parameter), encoded, for an attribute. */
    static String consumerParam(String consumer, boolean first) {
        return (first ? "?" : "&amp;") + "consumer=" + esc(URLEncoder.encode(consumer, StandardCharsets.UTF_8));
    }

    /** At most {@code max} characters of {@code s} (never half a surrogate pair), with "…" when cut; "" for null. */
    static String truncated(String s, int max) {
        if (s == null) {
            return "";
        }
        if (s.length() <= max) {
            return s;
        }
        int cut = Character.isHighSurrogate(s.charAt(max - 1)) ? max - 1 : max;
        return s.substring(0, cut) + "…";
    }

    /** The start of a page: head, navigation (who is signed in, the sign-out button) and the title. */
    static StringBuilder page(String title, Authentication who, CsrfToken csrf) {
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

    static String end(StringBuilder b) {
        return b.append("</body></html>").toString();
    }

    static void row(StringBuilder b, String name, String value) {
        b.append("<tr><th>").append(esc(name)).append("</th><td>").append(esc(value)).append("</td></tr>");
    }

    static String csrfField(CsrfToken csrf) {
        return csrf == null ? "" : hidden(csrf.getParameterName(), csrf.getToken());
    }

    static String hidden(String name, String value) {
        return "<input type='hidden' name='" + esc(name) + "' value='" + esc(value) + "'>";
    }

    /** Hidden fields carrying the filter to the next form. */
    static String hidden(ParkedFilter filter) {
        StringBuilder b = new StringBuilder();
        filter.parameters().forEach((name, value) -> b.append(hidden(name, value)));
        return b.toString();
    }

    /** {@code &amp;name=value} for each filter set, escaped for an attribute. */
    static String query(ParkedFilter filter) {
        StringBuilder b = new StringBuilder();
        for (Map.Entry<String, String> e : filter.parameters().entrySet()) {
            b.append("&amp;").append(e.getKey()).append('=')
                    .append(esc(UriUtils.encodeQueryParam(e.getValue(), StandardCharsets.UTF_8)));
        }
        return b.toString();
    }

    static String duration(Duration d) {
        return d.toMillis() < 10_000 ? d.toMillis() + " ms" : d.toSeconds() + " s";
    }

    /** A byte count with thousands separators: {@code 2,097,152}. */
    static String bytes(long n) {
        return String.format(Locale.ROOT, "%,d", n);
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
