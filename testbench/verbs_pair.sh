#!/bin/sh
# A pair of unmodified verbs programs against `vhca-sim serve`: the server side on vhca0, the
# client on vhca1 (over loopback TCP for their own address exchange), their work requests and
# completions carried by the modelled HCAs. Debian's ibv_*_pingpong load the drop-in libibverbs;
# perftest's ib_* load the preload variant (LD_PRELOAD), which leaves Debian's libibverbs for the
# libraries perftest also loads. Both programs must exit 0 having done every iteration, and the
# server's report for each side must show what the program's loop implies: doorbells and
# completion events, every send WQE completed exactly once, the receives consumed, nothing left
# to release, and the simulated latencies (report line and JSON). A run that stalled, lost or
# duplicated a completion, or bypassed the device fails.
#   verbs_pair.sh VHCA_SIM LIBDIR PROGRAM ITERS EXPECT [ARGS...]
# EXPECT: comma-separated checks on each side's report, KEY=VALUE with KEY one of doorbells,
# events, sends0, recvs0, sends1, recvs1 (sendsN / recvsN: side N's send WQEs / receives), and
# "oneway" (the one-way message latency must be reported), oneway_p50=US and completion_p50=US
# (the one-way or the post-to-CQE latency's p50 within 1 ns of US).
set -eu
sim=$1
lib=$2
prog=$3
iters=$4
expect=$5
shift 5
command -v $prog >/dev/null || { echo "FAIL: $prog not found: install ibverbs-utils and perftest (tools/bootstrap.sh does)"; exit 1; }
. "$(dirname "$0")/verbs_common.sh"
dir=$(mktemp -d)
# Debian's ibv_*_pingpong use only verbs (an empty poll waits in the server; they never spin on
# memory), so the spin rule's grace only guards them against being preempted on a loaded machine:
# with the default 1 ms, a program preempted between an event and its re-arm let simulated time run
# on, two completions fell under one event, and ibv_rc_pingpong -e rang 3000 doorbells, not 3001
# (seen once in a full ctest -j2 run). perftest's programs poll memory and keep the default.
grace=""
case "$prog" in ibv_*) grace="--spin-grace-us 10000000" ;; esac
start_server "$sim" "$lib" --json "$dir/clients.json" --timeline "$dir/timeline.json" $grace
want() {  # want KEY: the expected value, or empty
  echo ",$expect," | sed -n "s/.*,$1=\([^,]*\),.*/\1/p"
}
run_pair $prog $iters "$@"

# Both clients' reports (printed as each connection closes).
wait_reports 2
side=0
for dev in vhca0 vhca1; do
  line=$(grep "on $dev left at" "$dir/serve.out") || fail "no report for $dev"
  doorbells=$(echo "$line" | sed -n 's/.*: \([0-9]*\) doorbells (0 refused).*/\1/p')
  events=$(echo "$line" | sed -n 's/.* \([0-9]*\) completion events.*/\1/p')
  [ -n "$doorbells" ] || fail "$dev: refused doorbells or no doorbell count"
  w=$(want doorbells); [ -z "$w" ] || [ "$doorbells" = "$w" ] || fail "$dev rang $doorbells doorbells, not $w"
  w=$(want events); [ -z "$w" ] || [ "$events" = "$w" ] || fail "$dev had $events completion events, not $w"
  echo "$line" | grep -q "released 0 QPs, 0 CQs, 0 MRs, 0 PDs" || fail "$dev left objects for the server to release"
  client=$(echo "$line" | sed -n 's/.*client pid \([0-9]*\) on.*/\1/p')
  ledger=$(grep "client pid $client: send WQEs" "$dir/serve.out") || fail "$dev: no ledger line"
  sends=$(want sends$side)
  recvs=$(want recvs$side)
  echo "$ledger" | grep -q "send WQEs $sends posted, $sends completed, 0 outstanding; receives $recvs completed; 0 error CQEs, 0 unexpected completions" ||
    fail "$dev: not $sends send WQEs completed exactly once and $recvs receives"
  if [ "$sends" -gt 0 ]; then
    echo "$ledger" | grep -q "post-to-CQE latency p50 [0-9.]* us, p99 [0-9.]* us" || fail "$dev: no completion latency"
  fi
  if [ -n "$(echo ",$expect," | grep ',oneway,')" ]; then
    echo "$ledger" | grep -q "one-way message latency p50 [0-9.]* us" || fail "$dev: no message latency"
  fi
  for key in oneway_p50:one-way_message_latency completion_p50:post-to-CQE_latency; do
    w=$(want ${key%%:*})
    [ -n "$w" ] || continue
    what=$(echo "${key#*:}" | tr _ ' ')
    got=$(echo "$ledger" | sed -n "s/.*$what p50 \([0-9.]*\) us.*/\1/p")
    awk -v g="${got:-0}" -v w="$w" 'BEGIN { d = g - w; exit !(d <= 0.001 && d >= -0.001) }' ||
      fail "$dev: $what p50 ${got:-none} us, the model's scenario gives $w us"
    echo "$dev: $what p50 $got us, the model's scenario $w us"
  done
  grep -q "\"pid\": $client, \"device\": \"$dev\".*\"sends_completed\": $sends," "$dir/clients.json" || fail "$dev: not in the JSON report"
  side=$((side + 1))
done
echo "$prog $*: $iters iterations, both sides exit 0"
grep "client pid" "$dir/serve.out"
stop_server
# The Perfetto timeline, written as the server stops: both devices, each client's QP track with a
# span per signaled send WQE (post to CQE).
for want in '"name": "host0"' '"name": "host1"' 'send WQE: post to CQE'; do
  grep -q "$want" "$dir/timeline.json" || fail "the timeline has no '$want'"
done
# As many spans as the ledgers have post-to-CQE samples.
spans=$(grep -o 'send WQE: post to CQE' "$dir/timeline.json" | wc -l)
samples=$(sed -n 's/.*post-to-CQE latency p50 [0-9.]* us, p99 [0-9.]* us (of \([0-9]*\)).*/\1/p' "$dir/serve.out" | awk '{ n += $1 } END { print n + 0 }')
[ "$spans" -eq "$samples" ] || fail "the timeline has $spans send spans, the ledgers $samples samples"
echo "timeline: $spans send WQE spans, as the ledgers"
