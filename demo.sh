#!/bin/sh
# Runs the orders demo (outbox-examples) on an embedded PostgreSQL and an in-process Kafka: nothing to install
# but a JDK 17+. With --broker rabbitmq it publishes to RabbitMQ instead (Debian's rabbitmq-server, started as a node
# of the demo's own; the leader elected in Postgres). Options go to the demo: ./demo.sh --help
set -eu
cd "$(dirname "$0")"
root=$(pwd)

# Build only what the demo needs (tests are skipped here; ./mvnw -B verify runs them), without the sources and
# Javadoc jars that publishing needs. Never installs anything.
./mvnw -q -B -pl outbox-examples -am -DskipTests -Dmaven.source.skip=true -Dmaven.javadoc.skip=true package

exec "${JAVA_HOME:+$JAVA_HOME/bin/}java" -Doutbox.test.servers.dir="$root/outbox-examples/target/outbox-test-servers" \
  -cp "$root/outbox-examples/target/classes:$(cat "$root/outbox-examples/target/demo.classpath")" \
  dev.outbox.examples.OrdersDemo "$@"
