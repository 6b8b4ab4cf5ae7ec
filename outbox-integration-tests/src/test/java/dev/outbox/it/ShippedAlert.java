package dev.outbox.it;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.OptionalDouble;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One rule of the Prometheus alert rules shipped in outbox-micrometer ({@code prometheus-alerts.yml}), read from the
 * class path as it ships, whose condition a test evaluates against a scrape of the meters it reads: the rules of the
 * shape {@code max by (outbox) (<metric>) > <threshold>}. The rule's {@code for:} is left out (a test cannot wait
 * minutes): {@link #firesOn} says whether the condition holds now. Immutable.
 *
 * @param name      the alert's name
 * @param metric    the metric its expression takes the maximum of
 * @param threshold the value the maximum must exceed
 */
record ShippedAlert(String name, String metric, double threshold) {
    private static final String RULES = "dev/outbox/micrometer/prometheus-alerts.yml";
    private static final Pattern EXPR = Pattern.compile("^max by \\(outbox\\) \\((outbox_[a-z_]+)\\) > ([0-9.]+)$");
    private static final Pattern SAMPLE = Pattern.compile("^([a-z_]+)(\\{[^}]*})? (\\S+)$", Pattern.MULTILINE);

    /** The shipped rule {@code name}; fails if it is missing or its expression is not of the shape above. */
    static ShippedAlert named(String name) {
        String rules;
        try (InputStream in = ShippedAlert.class.getClassLoader().getResourceAsStream(RULES)) {
            if (in == null) {
                throw new IllegalStateException(RULES + " is not on the class path");
            }
            rules = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        int at = rules.indexOf("- alert: " + name + "\n");
        if (at < 0) {
            throw new IllegalStateException("no alert " + name + " in " + RULES);
        }
        int expr = rules.indexOf("expr:", at);
        String expression = rules.substring(expr + "expr:".length(), rules.indexOf('\n', expr)).strip();
        Matcher m = EXPR.matcher(expression);
        if (!m.matches()) {
            throw new IllegalStateException(name + "'s expression is not 'max by (outbox) (<metric>) > <number>': "
                    + expression);
        }
        return new ShippedAlert(name, m.group(1), Double.parseDouble(m.group(2)));
    }

    /** The maximum of the rule's metric over the samples of {@code scrape} (NaN samples left out, as Prometheus does). */
    OptionalDouble value(String scrape) {
        Matcher m = SAMPLE.matcher(scrape);
        OptionalDouble max = OptionalDouble.empty();
        while (m.find()) {
            if (m.group(1).equals(metric)) {
                double v = Double.parseDouble(m.group(3));
                if (!Double.isNaN(v) && (max.isEmpty() || v > max.getAsDouble())) {
                    max = OptionalDouble.of(v);
                }
            }
        }
        return max;
    }

    /** Whether the rule's condition holds on {@code scrape}. */
    boolean firesOn(String scrape) {
        OptionalDouble v = value(scrape);
        return v.isPresent() && v.getAsDouble() > threshold;
    }
}
