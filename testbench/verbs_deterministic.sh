#!/bin/sh
# The time rule is deterministic for programs that only use verbs: the same ibv_rc_pingpong run
# twice, on fresh servers, gives the same simulated latency for every completion and message and
# the same post-to-post interval (which includes the program's own steps: its empty polls), in
# order (the --json samples, to within one device clock cycle), however the two runs fell on the
# host's CPUs. The spin grace is
# set far above any pause of a loaded machine, so that a program descheduled between two verbs
# still holds simulated time (a program that only uses verbs never needs the spin rule).
#   verbs_deterministic.sh VHCA_SIM LIBDIR
set -eu
command -v ibv_rc_pingpong >/dev/null || { echo "FAIL: ibv_rc_pingpong not found: install ibverbs-utils"; exit 1; }
. "$(dirname "$0")/verbs_common.sh"
dir=$(mktemp -d)
# samples RUN: every client's completion and message latency samples, keyed by device.
samples() {
  awk '/"device":/ { match($0, /"device": "[a-z0-9]*"/); dev = substr($0, RSTART, RLENGTH) }
       /"(completion_latency|message_latency|post_interval)_us":/ { print dev, $0 }' "$dir/run$1.json" | sort
}
for run in 1 2; do
  start_server "$1" "$2" --json "$dir/run$run.json" --spin-grace-us 10000000
  run_pair ibv_rc_pingpong 1000
  wait_reports 2
  stop_server
  rm -f "$dir/serve.out"
  port=$((port + 1))
done
samples 1 >"$dir/samples1.txt"
samples 2 >"$dir/samples2.txt"
[ "$(wc -l <"$dir/samples1.txt")" -eq 6 ] || fail "expected 3 sample lists per device"
[ "$(grep -c '"count": 1000' "$dir/samples1.txt")" -eq 4 ] || fail "expected 1000 completion and 1000 message samples per device"
[ "$(grep -c '"count": 999' "$dir/samples1.txt")" -eq 2 ] || fail "expected 999 post-to-post intervals per device"
# Sample by sample, equal to within one device clock cycle (2 ns at 500 MHz): the instant the
# first program starts falls at another phase of the device clock from run to run.
flat() { sed 's/.*"samples": \[//; s/\].*//' "$dir/samples$1.txt" | tr ',' '\n' | tr -d ' '; }
flat 1 >"$dir/flat1.txt"
flat 2 >"$dir/flat2.txt"
n=$(wc -l <"$dir/flat1.txt")
[ "$n" -eq "$(wc -l <"$dir/flat2.txt")" ] || fail "the runs have different numbers of samples"
paste "$dir/flat1.txt" "$dir/flat2.txt" | awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > 0.002) { bad++; if (!first) first = NR } }
  END { if (bad) { printf "%d samples differ by more than 2 ns (first: line %d)\n", bad, first; exit 1 } }' >"$dir/diff.txt" ||
  fail "the two runs' latencies differ: $(cat "$dir/diff.txt")"
echo "two runs of ibv_rc_pingpong: the same $n latency and interval samples, in order, to within one device cycle"
