#!/usr/bin/env bash
# The engine alone, two revisions side by side in one JVM (EngineAB): see docs/performance/index.md.
#   ./bench.sh engine-ab <revision A> [<revision B, default: the working tree>] [records] [rounds] [warm-up rounds]
# Each revision's outbox-core is compiled with javac (it needs slf4j-api only) and with it EngineOnlyDrain: this
# tree's source, or engine-ab/store-port-v1/ for revisions before the store port's split (#43).
set -euo pipefail
cd "$(dirname "$0")/.."
a=${1:?usage: ./bench.sh engine-ab <revision A> [<revision B>] [records] [rounds] [warm-up rounds]}
b=${2:-WORKTREE}
records=${3:-200000}
rounds=${4:-40}
warm=${5:-6}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
./mvnw -q -B -pl outbox-benchmarks -am -DskipTests -Dmaven.source.skip=true -Dmaven.javadoc.skip=true \
  -Djacoco.skip=true package
cp="outbox-benchmarks/target/classes:$(cat outbox-benchmarks/target/classpath.txt)"
slf4j=$(tr ':' '\n' < outbox-benchmarks/target/classpath.txt | grep '/slf4j-api-' | head -1)

build() { # <revision or WORKTREE> <dir>
  local rev=$1 dir=$2
  mkdir -p "$dir/src" "$dir/classes"
  if [[ "$rev" == WORKTREE ]]; then
    cp -r outbox-core/src/main/java/. "$dir/src/"
  else
    git archive "$rev" outbox-core/src/main/java | tar -x -C "$dir"
    cp -r "$dir/outbox-core/src/main/java/." "$dir/src/"
  fi
  local drain=outbox-benchmarks/src/main/java/dev/outbox/benchmarks/engineab/EngineOnlyDrain.java
  if [[ ! -f "$dir/src/dev/outbox/spi/CursorHarvest.java" ]]; then
    drain=outbox-benchmarks/engine-ab/store-port-v1/dev/outbox/benchmarks/engineab/EngineOnlyDrain.java
  fi
  find "$dir/src" -name '*.java' > "$dir/sources.txt"
  echo "$drain" >> "$dir/sources.txt"
  javac -nowarn -encoding UTF-8 --release 17 -proc:none -d "$dir/classes" -cp "$slf4j" @"$dir/sources.txt" \
    2>&1 | grep -v '^Note:' || true
  test -f "$dir/classes/dev/outbox/benchmarks/engineab/EngineOnlyDrain.class"
}
build "$a" "$work/a"
build "$b" "$work/b"
label() { [[ "$1" == WORKTREE ]] && echo "tree" || git rev-parse --short "$1"; }
echo "./bench.sh engine-ab $*  ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
exec java -Xms1g -Xmx2g -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$cp" \
  dev.outbox.benchmarks.engineab.EngineAB "$records" "$rounds" "$warm" "$work/a/classes" "$work/b/classes" \
  "$(label "$a")" "$(label "$b")"
