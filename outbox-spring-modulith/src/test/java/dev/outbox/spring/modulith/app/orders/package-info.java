/** The orders module: places orders and publishes {@link dev.outbox.spring.modulith.app.orders.OrderPlaced}. */
@org.springframework.modulith.ApplicationModule
package dev.outbox.spring.modulith.app.orders;
