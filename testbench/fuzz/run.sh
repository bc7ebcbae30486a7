#!/bin/sh
# The fuzzers (issue 14, item 4) with libFuzzer: builds the fuzz targets with clang, libFuzzer's
# coverage, ASan and UBSan in build-fuzz/ (ccache as the launcher), then runs each for SECONDS
# (default 600) on a copy of its seed corpus, and prints executions, coverage and findings.
#   testbench/fuzz/run.sh [SECONDS] [TARGET...]      (targets: parsers commands mmio; default all)
# A finding leaves its input as build-fuzz/findings/TARGET/crash-*; make it a regression input in
# testbench/fuzz/corpus/TARGET/ once fixed (the replay ctests run every corpus file).
set -eu
cd "$(dirname "$0")/../.."
seconds=${1:-600}
[ $# -gt 0 ] && shift
targets=${*:-parsers commands mmio}
command -v clang++-14 >/dev/null || { echo "run.sh: clang++-14 not found: apt-get install clang-14 libclang-rt-14-dev" >&2; exit 2; }
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=true
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DVHCA_FUZZ=ON >/dev/null
status=0
for t in $targets; do
  [ -f "testbench/fuzz/fuzz_$t.cpp" ] || { echo "run.sh: no target $t" >&2; exit 2; }
  cmake --build build-fuzz -j "$(nproc)" --target "fuzz_$t" >/dev/null
  work=build-fuzz/corpus/$t findings=build-fuzz/findings/$t
  mkdir -p "$work" "$findings"
  cp testbench/fuzz/corpus/$t/* "$work"/
  # LeakSanitizer cannot walk SystemC's coroutine stacks (it crashes in its tracer): the targets
  # that run the model check for leaks no further than ASan's other checks.
  leaks=1
  [ "$t" = parsers ] || leaks=0
  echo "== fuzz_$t for $seconds s"
  if ! ASAN_OPTIONS=detect_leaks=$leaks build-fuzz/testbench/fuzz_$t -max_total_time="$seconds" -print_final_stats=1 \
       -detect_leaks=$leaks -artifact_prefix="$findings/" -timeout=20 -rss_limit_mb=4096 "$work" 2>"build-fuzz/fuzz_$t.log"; then
    status=1
    echo "FINDING: see build-fuzz/fuzz_$t.log and $findings/"
  fi
  grep -E "^#[0-9]+ *(DONE|pulse)|stat::number_of_executed_units|stat::peak_rss_mb|cov:" "build-fuzz/fuzz_$t.log" | tail -3
done
exit $status
