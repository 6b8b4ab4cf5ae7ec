package com.example.orders;

import java.math.BigDecimal;

/** The event of the README's method (glue of .ci/new-user-path.sh). */
public record OrderPlaced(long id, String customer, BigDecimal total) {
}
