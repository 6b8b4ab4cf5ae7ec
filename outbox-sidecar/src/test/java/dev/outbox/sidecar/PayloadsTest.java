package dev.outbox.sidecar;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

/** The payload preview: at most {@link Payloads#PREVIEW_BYTES} bytes, text cut between characters. */
class PayloadsTest {

    @Test
    void aShortValueIsShownWhole() {
        Payloads.Preview p = Payloads.preview("{\"order\":1}".getBytes(StandardCharsets.UTF_8), false);
        assertThat(p.shown()).isEqualTo("{\"order\":1}");
        assertThat(p.hex()).isFalse();
        assertThat(p.hiddenBytes()).isZero();
        assertThat(Payloads.preview(new byte[]{(byte) 0xff, 0x00}, false)).isEqualTo(new Payloads.Preview("ff 00",
                true, 2, 2));
    }

    @Test
    void aLongTextIsCutBeforeACharacterThatWouldNotFitWhole() {
        // 4,095 ASCII bytes, then "€" (3 bytes: e2 82 ac) across the limit, then more.
        String text = "a".repeat(Payloads.PREVIEW_BYTES - 1) + "€" + "b".repeat(100);
        Payloads.Preview p = Payloads.preview(text.getBytes(StandardCharsets.UTF_8), false);
        assertThat(p.hex()).isFalse();
        assertThat(p.shown()).isEqualTo("a".repeat(Payloads.PREVIEW_BYTES - 1));
        assertThat(p.shownBytes()).isEqualTo(Payloads.PREVIEW_BYTES - 1);
        assertThat(p.size()).isEqualTo(Payloads.PREVIEW_BYTES - 1 + 3 + 100);
        assertThat(p.hiddenBytes()).isEqualTo(103);
    }

    @Test
    void aLongBinaryValueOrOneAskedForInHexShowsItsFirstBytesInHex() {
        byte[] value = new byte[10_000];
        value[0] = (byte) 0xc3; // not valid UTF-8 on its own
        Payloads.Preview p = Payloads.preview(value, false);
        assertThat(p.hex()).isTrue();
        assertThat(p.shownBytes()).isEqualTo(Payloads.PREVIEW_BYTES);
        assertThat(p.shown()).hasSize(Payloads.PREVIEW_BYTES * 3 - 1).startsWith("c3 00 00");
        assertThat(Payloads.preview("abc".getBytes(StandardCharsets.UTF_8), true).shown()).isEqualTo("61 62 63");
    }
}
