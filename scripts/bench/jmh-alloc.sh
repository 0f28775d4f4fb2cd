#!/usr/bin/env bash
# Bytes allocated per collective call (JMH with its GC profiler; read the gc.alloc.rate.norm rows, B/op) for
# nccl4j's collectives, against the stub NCCL and a fake CUDA runtime: no GPU, no NCCL needed.
#
#   scripts/bench/jmh-alloc.sh [JMH options]        e.g. -f 1 -wi 2 -i 3 for a quicker run
#
# Builds the examples' test classes (mvn -DskipTests package builds the stub NCCL too), then runs
# org.openjdk.jmh.Main CollectiveAllocationBenchmark -prof gc on the test class path, then the same stub call
# from C (scripts/bench/native/stub_call_cost.c) for the time per call side by side.
set -euo pipefail
cd "$(dirname "$0")/../.."
mvn -q -B -pl nccl4j-examples -am -DskipTests package dependency:build-classpath \
    -Dmdep.includeScope=test -Dmdep.outputFile=target/test-classpath.txt
cp="nccl4j-examples/target/test-classes:nccl4j-examples/target/classes:$(cat nccl4j-examples/target/test-classpath.txt)"
stub="$PWD/nccl4j-native/target/nccl-stub/libnccl-stub.so"
java -Dnccl4j.library="$stub" -cp "$cp" org.openjdk.jmh.Main CollectiveAllocationBenchmark -prof gc "$@"
# The native baseline in the same run: the same stub call from C. JMH's allReduceRaw ns/op minus this is what
# the binding adds per call.
mkdir -p scripts/bench/native/build
gcc -O2 -o scripts/bench/native/build/stub_call_cost scripts/bench/native/stub_call_cost.c -ldl
echo "# native baseline (scripts/bench/native/stub_call_cost.c), the same stub:"
scripts/bench/native/build/stub_call_cost "$stub"
