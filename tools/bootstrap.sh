#!/usr/bin/env bash
# One-command set-up for a fresh Debian machine: install what is missing (Debian packages only),
# configure and build, then run either the main job or the whole test suite.
#   bash tools/bootstrap.sh sim [vhca-sim args...]   build and run vhca-sim on its default scenario
#   bash tools/bootstrap.sh test                     build and run every test under ctest
#   bash tools/bootstrap.sh sanitize                 the same suite built with ASan + UBSan (build-asan/)
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-sim}
shift || true

packages=(cmake make g++ pkg-config ccache libsystemc-dev verilator catch2 libfmt-dev libyaml-cpp-dev iverilog gnuplot-nox valgrind
          libibverbs-dev ibverbs-utils perftest yosys gtkwave parallel)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi

jobs=$(nproc 2>/dev/null || echo 2)
# ccache (Debian) makes a repeated clean build, in a fresh clone on the same machine, take about
# a minute instead of ten. Paths are made relative to the clone and the working directory is left
# out of the hash (with debug info it is in by default), so clones in other folders share it.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=true
build=build
sanitize=OFF
[ "$mode" = sanitize ] && { build=build-asan; sanitize=ON; }
cmake -S . -B $build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DVHCA_SANITIZE=$sanitize >/dev/null

case "$mode" in
  sim)  # only what the simulator needs: no test is built
    cmake --build build -j "$jobs" --target vhca-sim
    exec ./build/vhca-sim "$@" ;;
  test)
    cmake --build build -j "$jobs"
    cd build && exec ctest --output-on-failure -j "$jobs" "$@" ;;
  sanitize)
    # Every test under AddressSanitizer (leaks checked at each program's exit) and
    # UndefinedBehaviorSanitizer; any report fails its test (docs/testing.md).
    cmake --build $build -j "$jobs"
    export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
    cd $build && exec ctest --output-on-failure -j "$jobs" "$@" ;;
  *) echo "usage: bash tools/bootstrap.sh sim|test|sanitize" >&2; exit 2 ;;
esac
