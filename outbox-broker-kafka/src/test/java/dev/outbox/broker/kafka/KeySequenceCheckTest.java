package dev.outbox.broker.kafka;

import dev.outbox.broker.kafka.KeySequenceCheck.Outcome;
import dev.outbox.broker.kafka.KeySequenceCheck.Verdict;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@link KeySequenceCheck} alone: the classification of a number against its key's last, and the memory. */
class KeySequenceCheckTest {
    private static final TopicPartition P0 = new TopicPartition("orders", 0);
    private static final TopicPartition P1 = new TopicPartition("orders", 1);

    private final KeySequenceCheck check = new KeySequenceCheck(100);
    private long offset;

    /** Classifies a new record and, as the consumer does once its transaction committed, accepts it. */
    private Verdict take(TopicPartition tp, String key, long seq, boolean replayed, List<Long> skipped) {
        Verdict v = check.classify(tp, offset++, key, seq, replayed, skipped);
        check.accept(tp, key, seq);
        return v;
    }

    private Verdict take(String key, long seq) {
        return take(P0, key, seq, false, List.of());
    }

    @Test
    void consecutiveNumbersAreInOrderAfterABaselinePerKey() {
        assertThat(take("a", 1).outcome()).isEqualTo(Outcome.FIRST);
        assertThat(take("b", 7).outcome()).as("a key first seen mid-way is a baseline").isEqualTo(Outcome.FIRST);
        for (long n = 2; n <= 50; n++) {
            assertThat(take("a", n).outcome()).isEqualTo(Outcome.IN_ORDER);
            assertThat(take("b", n + 6).outcome()).isEqualTo(Outcome.IN_ORDER);
        }
        assertThat(take(null, 3).outcome()).as("no key is a key too").isEqualTo(Outcome.FIRST);
        assertThat(take(null, 4).outcome()).isEqualTo(Outcome.IN_ORDER);
    }

    @Test
    void aNumberLeftOutIsAGapNamingIt() {
        take("a", 1);
        take("a", 2);
        Verdict v = take("a", 4);
        assertThat(v.outcome()).isEqualTo(Outcome.BREAK);
        SequenceBreak b = v.breakage();
        assertThat(b.kind()).isEqualTo(SequenceBreak.Kind.GAP);
        assertThat(b.expected()).isEqualTo(3);
        assertThat(b.actual()).isEqualTo(4);
        assertThat(b.missing()).containsExactly(3L);
        assertThat(b.missingCount()).isEqualTo(1);
        assertThat(b.topic()).isEqualTo("orders");
        assertThat(b.partition()).isZero();
        assertThat(b.offset()).isEqualTo(2);
        assertThat(b.key()).isEqualTo("a");
        assertThat(take("a", 5).outcome()).as("the gap accepted, the next is in order").isEqualTo(Outcome.IN_ORDER);
    }

    @Test
    void anOldNumberOnANewMessageIsAReorderAndDoesNotMoveTheLastBack() {
        take("a", 1);
        Verdict gap = take("a", 3);
        assertThat(gap.breakage().kind()).isEqualTo(SequenceBreak.Kind.GAP);
        Verdict late = take("a", 2);
        assertThat(late.breakage().kind()).isEqualTo(SequenceBreak.Kind.REORDER);
        assertThat(late.breakage().expected()).isEqualTo(4);
        assertThat(late.breakage().actual()).isEqualTo(2);
        assertThat(late.breakage().missing()).isEmpty();
        assertThat(take("a", 4).outcome()).isEqualTo(Outcome.IN_ORDER);
    }

    @Test
    void anOldNumberOnAReplayedRecordIsAReplay() {
        take("a", 1);
        take("a", 2);
        take("a", 3);
        Verdict v = take(P0, "a", 2, true, List.of());
        assertThat(v.breakage().kind()).isEqualTo(SequenceBreak.Kind.REPLAY);
        assertThat(v.breakage().kind().deliberate()).isTrue();
        assertThat(take(P0, "a", 4, true, List.of()).outcome())
                .as("a replayed record whose number is next is in order").isEqualTo(Outcome.IN_ORDER);
    }

    @Test
    void aGapAllListedAsSkippedIsASkipAndAPartlyListedOneAGapOfTheRest() {
        take("a", 1);
        Verdict skip = take(P0, "a", 4, false, List.of(2L, 3L));
        assertThat(skip.breakage().kind()).isEqualTo(SequenceBreak.Kind.SKIP);
        assertThat(skip.breakage().missing()).containsExactly(2L, 3L);
        assertThat(skip.breakage().kind().deliberate()).isTrue();

        Verdict partly = take(P0, "a", 8, false, List.of(5L, 7L, 99L));
        assertThat(partly.breakage().kind()).isEqualTo(SequenceBreak.Kind.GAP);
        assertThat(partly.breakage().missing()).as("only what is not listed").containsExactly(6L);
        assertThat(partly.breakage().missingCount()).isEqualTo(1);
        assertThat(partly.breakage().kind().deliberate()).isFalse();
    }

    @Test
    void aWideGapListsTheFirstNumbersAndCountsThemAll() {
        take("a", 1);
        SequenceBreak b = take(P0, "a", 1_000_000_002L, false, List.of(2L)).breakage();
        assertThat(b.kind()).isEqualTo(SequenceBreak.Kind.GAP);
        assertThat(b.missing()).hasSize(SequenceBreak.MAX_LISTED).startsWith(3L, 4L);
        assertThat(b.missingCount()).isEqualTo(999_999_999L);
    }

    @Test
    void classifyChangesNothingUntilAccepted() {
        take("a", 1);
        assertThat(check.classify(P0, 9, "a", 3, false, List.of()).breakage().kind())
                .isEqualTo(SequenceBreak.Kind.GAP);
        assertThat(check.classify(P0, 9, "a", 3, false, List.of()).breakage().kind())
                .as("a retry of the same record is classified the same").isEqualTo(SequenceBreak.Kind.GAP);
        assertThat(check.classify(P0, 9, "a", 2, false, List.of()).outcome()).isEqualTo(Outcome.IN_ORDER);
    }

    @Test
    void partitionsAreRememberedApartAndForgottenOnRevoke() {
        take(P0, "a", 1, false, List.of());
        assertThat(take(P1, "a", 5, false, List.of()).outcome()).isEqualTo(Outcome.FIRST);
        check.forget(List.of(P0));
        assertThat(check.remembered(P0)).isZero();
        assertThat(take(P0, "a", 9, false, List.of()).outcome()).as("after a revoke: a baseline")
                .isEqualTo(Outcome.FIRST);
        assertThat(take(P1, "a", 6, false, List.of()).outcome()).isEqualTo(Outcome.IN_ORDER);
    }

    @Test
    void theMemoryIsBoundedAndAForgottenKeyStartsAgainFromABaseline() {
        KeySequenceCheck small = new KeySequenceCheck(2);
        small.accept(P0, "a", 1);
        small.accept(P0, "b", 1);
        assertThat(small.classify(P0, 0, "a", 2, false, List.of()).outcome()).isEqualTo(Outcome.IN_ORDER);
        small.accept(P0, "a", 2);   // a used most recently: b goes when c comes
        small.accept(P0, "c", 1);
        assertThat(small.remembered(P0)).isEqualTo(2);
        assertThat(small.classify(P0, 0, "b", 5, false, List.of()).outcome())
                .as("b forgotten: a gap there is not seen").isEqualTo(Outcome.FIRST);
        assertThat(small.classify(P0, 0, "a", 3, false, List.of()).outcome()).isEqualTo(Outcome.IN_ORDER);
    }

    @Test
    void aBadBoundIsRefusedNamingIt() {
        assertThatThrownBy(() -> new KeySequenceCheck(0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("keysPerPartition").hasMessageContaining("0");
        assertThatThrownBy(() -> KafkaInboxConsumer.builder().sequenceKeysPerPartition(0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("sequenceKeysPerPartition");
        assertThatThrownBy(() -> KafkaInboxConsumer.builder().sequenceHoldTimeout(Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("sequenceHoldTimeout");
        assertThatThrownBy(() -> KafkaInboxConsumer.builder().onSequenceBreak(null))
                .isInstanceOf(NullPointerException.class).hasMessageContaining("onSequenceBreak");
    }
}
