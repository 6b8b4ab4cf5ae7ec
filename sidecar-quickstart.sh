#!/bin/sh
# The sidecar's quick start: builds outbox-sidecar.jar and runs it against an embedded PostgreSQL and an in-process
# Kafka with a sample configuration, writes a few rows (one poison), and prints where the console is. Nothing to
# install but a JDK 17+. --port N serves the console on port N instead of 8080. See README "Sidecar".
set -eu
cd "$(dirname "$0")"
root=$(pwd)

# Build only what the sidecar needs (tests are compiled, not run; no sources or Javadoc jars). Never installs
# anything.
./mvnw -q -B -pl outbox-sidecar -am -DskipTests -Dmaven.source.skip=true -Dmaven.javadoc.skip=true package

exec "${JAVA_HOME:+$JAVA_HOME/bin/}java" -Doutbox.test.servers=embedded \
  -Doutbox.test.servers.dir="$root/outbox-sidecar/target/outbox-test-servers" \
  -Doutbox.sidecar.jar="$root/outbox-sidecar/target/outbox-sidecar.jar" \
  -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
  -cp "$root/outbox-sidecar/target/test-classes:$root/outbox-sidecar/target/classes:$(cat "$root/outbox-sidecar/target/quickstart.classpath")" \
  dev.outbox.sidecar.QuickStart "$@"
