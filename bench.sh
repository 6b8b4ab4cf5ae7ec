#!/usr/bin/env bash
# Outbox benchmark: drain rate against the database and broker ceilings, latency under load, take-over.
# Builds the benchmark module and what it depends on (never installs anything), then runs it:
#   ./bench.sh                 # everything on embedded Postgres 17 and Kafka, 1,000,000 rows
#   ./bench.sh --rows 100000 --repeat 1
#   ./bench.sh --help
#   ./bench.sh headers-codec [records] [rounds] [mysql|mariadb]   # the MySQL headers column: Jackson vs SQL JSON
#   ./bench.sh observability --rows 300000 --repeat 5   # the drain without vs with metrics and tracing
#   ./bench.sh writer-cost [seconds per cell] [rounds]   # Postgres writer: table INSERT vs WAL emit, commits/s
#   ./bench.sh --scenarios writer-cost,drain,drain-wal,cursor,wal-ceiling,broker,latency,latency-wal \
#       --rows 300000 --repeat 2 --rates 10,100,5000,20000   # the WAL harvest next to the cursor harvest
#   ./bench.sh --scenarios peers [--systems cursor,wal,modulith,debezium] [--crash-rate 1000 --crash-seconds 20] \
#       [--rates 10,100,1000,5000] [--duration 20]   # Spring Modulith and Debezium (child JVMs) next to our harvests
#   ./bench.sh engine-ab <revision> [<revision B>] [records] [rounds]   # the engine alone, two revisions in one JVM
#   BENCH_MAIN=PurgeShapeBenchmark ./bench.sh 100000 mysql all 2000 scattered 2   # MySQL purge: statement shapes
# Results: a table on standard output, and outbox-benchmarks/target/benchmark/results.{txt,csv,json}.
# JAVA_OPTS adds JVM options (e.g. JAVA_OPTS="-XX:StartFlightRecording=filename=bench.jfr").
set -euo pipefail
cd "$(dirname "$0")"

if [[ "${1:-}" == "engine-ab" ]]; then
  shift
  exec outbox-benchmarks/engine-ab.sh "$@"
fi

# --scenarios peers: the side-by-side run of outbox-benchmarks-peers (results-peers.txt).
module_name=outbox-benchmarks
args=" $* "
if [[ "$args" == *" --scenarios peers "* ]]; then
  module_name=outbox-benchmarks-peers
  BENCH_MAIN=${BENCH_MAIN:-PeerBenchmark}
fi

if [[ "${BENCH_SKIP_BUILD:-}" != "1" ]]; then
  # Without the sources and Javadoc jars that publishing needs.
  ./mvnw -q -B -pl "$module_name" -am -DskipTests -Dmaven.source.skip=true -Dmaven.javadoc.skip=true package
fi

main="dev.outbox.benchmarks.${BENCH_MAIN:-Benchmark}"
if [[ "${1:-}" == "headers-codec" ]]; then
  main=dev.outbox.benchmarks.HeadersCodecBenchmark
  shift
elif [[ "${1:-}" == "observability" ]]; then
  main=dev.outbox.benchmarks.ObservabilityBenchmark
  shift
elif [[ "${1:-}" == "writer-cost" ]]; then
  main=dev.outbox.benchmarks.WriterCostBenchmark
  shift
fi
module=$module_name/target
cp="$module/classes:$(cat "$module/classpath.txt")"
exec java -Xms1g -Xmx2g ${JAVA_OPTS:-} \
  -Dbench.command="./bench.sh $*" \
  -Dbench.out="$module/benchmark" \
  -Doutbox.test.servers.dir="$module/outbox-test-servers" \
  -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
  -Dorg.slf4j.simpleLogger.showDateTime=true \
  -Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS \
  -cp "$cp" "$main" "$@"
