package dev.outbox.benchmarks;

import java.util.Collection;
import java.util.Locale;
import java.util.Map;

/** Writes maps, collections, strings, numbers and booleans as JSON. Static helpers only. */
final class Json {
    private Json() {
    }

    static String write(Object value) {
        StringBuilder out = new StringBuilder();
        write(out, value, "");
        return out.toString();
    }

    private static void write(StringBuilder out, Object value, String indent) {
        if (value == null) {
            out.append("null");
        } else if (value instanceof Map<?, ?> map) {
            if (map.isEmpty()) {
                out.append("{}");
                return;
            }
            String inner = indent + "  ";
            out.append("{\n");
            boolean first = true;
            for (Map.Entry<?, ?> e : map.entrySet()) {
                out.append(first ? "" : ",\n").append(inner);
                string(out, String.valueOf(e.getKey()));
                out.append(": ");
                write(out, e.getValue(), inner);
                first = false;
            }
            out.append('\n').append(indent).append('}');
        } else if (value instanceof Collection<?> list) {
            if (list.isEmpty()) {
                out.append("[]");
                return;
            }
            String inner = indent + "  ";
            out.append("[\n");
            boolean first = true;
            for (Object o : list) {
                out.append(first ? "" : ",\n").append(inner);
                write(out, o, inner);
                first = false;
            }
            out.append('\n').append(indent).append(']');
        } else if (value instanceof Double d) {
            out.append(d.isNaN() || d.isInfinite() ? "null" : String.format(Locale.ROOT, "%.4f", d));
        } else if (value instanceof Float f) {
            write(out, f.doubleValue(), indent);
        } else if (value instanceof Number || value instanceof Boolean) {
            out.append(value);
        } else {
            string(out, value.toString());
        }
    }

    private static void string(StringBuilder out, String s) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }
}
