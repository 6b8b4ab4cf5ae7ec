package dev.outbox.broker.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Method;
import com.rabbitmq.client.ShutdownSignalException;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.DeliveryException;
import dev.outbox.spi.Excerpt;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * How the RabbitMQ adapter reads a failure: which records a closed channel or connection fails permanently (those
 * to an exchange that does not exist or may not be written to, those larger than the node accepts) and which it
 * fails as an outage (every other record in flight: the channel's death is not their fault). One place, used by the
 * publisher, the exchange checks and the confirm deadlines. Stateless.
 */
final class RabbitMqErrors {
    /** AMQP's reply code for a missing exchange (a channel error). */
    static final int NOT_FOUND = 404;
    /** AMQP's reply code for a refused permission (a channel error). */
    static final int ACCESS_REFUSED = 403;
    /** AMQP's reply code for a message that breaks a limit, e.g. RabbitMQ's {@code max_message_size}. */
    static final int PRECONDITION_FAILED = 406;
    private static final Pattern EXCHANGE = Pattern.compile("exchange '((?:[^'\\\\]|\\\\.)*)' in vhost");
    private static final Pattern MAX_SIZE = Pattern.compile("larger than configured max size (\\d+)");

    private RabbitMqErrors() {
    }

    /** The record as an operator reads it: id, topic, key, exchange and routing key. */
    static String describe(Confirms.InFlight f) {
        return describe(f.record()) + " to exchange '" + f.exchange() + "' with routing key '"
                + Excerpt.of(f.routingKey()) + "'";
    }

    static String describe(OutboxRecord record) {
        return "record " + record.id() + " (topic '" + record.topic() + "', key '" + Excerpt.of(record.key()) + "')";
    }

    /**
     * What a closed channel (or connection) means for a record that was in flight on it: permanent if the close
     * names the record's exchange as missing or forbidden, or says a message larger than the record's was refused;
     * an outage otherwise.
     */
    static DeliveryException channelClosed(Confirms.InFlight f, ShutdownSignalException cause) {
        int code = replyCode(cause);
        String text = replyText(cause);
        if (!cause.isHardError() && (code == NOT_FOUND || code == ACCESS_REFUSED)
                && f.exchange().equals(exchangeNamed(text))) {
            return DeliveryException.permanent("RabbitMQ can never accept " + describe(f) + ": "
                    + (code == NOT_FOUND ? "the exchange does not exist" : "writing to the exchange is refused")
                    + " (" + code + " " + text + ")", cause);
        }
        if (code == PRECONDITION_FAILED) {
            Matcher m = MAX_SIZE.matcher(text);
            if (m.find() && bodySize(f.record()) > Long.parseLong(m.group(1))) {
                return DeliveryException.permanent("RabbitMQ can never accept " + describe(f) + ": " + text, cause);
            }
        }
        return DeliveryException.outage("RabbitMQ closed the " + (cause.isHardError() ? "connection" : "channel")
                + " before it confirmed " + describe(f) + ": " + reason(cause), cause);
    }

    /** The exchange a channel error's text names ({@code no exchange 'x' in vhost '/'}), or null. */
    static String exchangeNamed(String replyText) {
        if (replyText == null) {
            return null;
        }
        Matcher m = EXCHANGE.matcher(replyText);
        return m.find() ? m.group(1).replace("\\'", "'").replace("\\\\", "\\") : null;
    }

    /** The reply code of the close that ended a channel or connection, or 0 for a lost connection. */
    static int replyCode(ShutdownSignalException cause) {
        Method reason = cause.getReason();
        if (reason instanceof AMQP.Channel.Close c) {
            return c.getReplyCode();
        }
        if (reason instanceof AMQP.Connection.Close c) {
            return c.getReplyCode();
        }
        return 0;
    }

    static String replyText(ShutdownSignalException cause) {
        Method reason = cause.getReason();
        if (reason instanceof AMQP.Channel.Close c) {
            return c.getReplyText();
        }
        if (reason instanceof AMQP.Connection.Close c) {
            return c.getReplyText();
        }
        return "";
    }

    /** Why a channel or connection closed, for a log line or a failure's reason. */
    static String reason(ShutdownSignalException cause) {
        int code = replyCode(cause);
        if (code != 0) {
            return code + " " + replyText(cause) + (cause.isInitiatedByApplication() ? " (closed by this client)" : "");
        }
        Throwable t = cause.getCause();
        return t == null ? String.valueOf(cause.getMessage()) : t.getClass().getSimpleName() + ": " + t.getMessage();
    }

    private static long bodySize(OutboxRecord record) {
        byte[] v = record.message().value();
        return v == null ? 0 : v.length;
    }
}
