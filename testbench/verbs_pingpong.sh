#!/bin/sh
# Debian's own ibv_rc_pingpong / ibv_ud_pingpong, unmodified, through the drop-in libibverbs
# against `vhca-sim serve`: the server side on vhca0, the client on vhca1, their work requests and
# completions carried by the modelled HCAs (WQEs from the programs' rings, CQEs into memory they
# poll, completion events on their channels). Both programs must exit 0 having done every
# iteration, and the server must report each client with the doorbells and events the program's
# loop implies (so a run that stalled, lost a completion or bypassed the device fails), every send
# WQE completed exactly once, every message received, and the simulated latencies (in its report
# line and its JSON).
#   verbs_pingpong.sh VHCA_SIM LIBDIR PROGRAM ITERS DOORBELLS EVENTS [ARGS...]
# DOORBELLS and EVENTS are what each side's report must show; "-" skips the check.
set -eu
sim=$1
lib=$2
prog=$3
iters=$4
want_doorbells=$5
want_events=$6
shift 6
command -v $prog >/dev/null || { echo "FAIL: $prog not found: install ibverbs-utils (tools/bootstrap.sh does)"; exit 1; }
. "$(dirname "$0")/verbs_common.sh"
dir=$(mktemp -d)
start_server "$sim" "$lib" --json "$dir/clients.json"

timeout 300 $prog -d vhca0 -p $port -n $iters "$@" >"$dir/side0.out" 2>&1 &
side0=$!
wait_listening $side0
rc1=0
timeout 300 $prog -d vhca1 -p $port -n $iters "$@" 127.0.0.1 >"$dir/side1.out" 2>&1 || rc1=$?
rc0=0
wait $side0 || rc0=$?
[ $rc0 -eq 0 ] || fail "$prog on vhca0 exited with $rc0"
[ $rc1 -eq 0 ] || fail "$prog on vhca1 exited with $rc1"
for side in 0 1; do
  grep -q "^$iters iters in" "$dir/side$side.out" || fail "side $side did not report $iters iterations"
done

# Both clients' reports (printed as each connection closes).
wait_reports 2
for dev in vhca0 vhca1; do
  line=$(grep "on $dev left at" "$dir/serve.out") || fail "no report for $dev"
  doorbells=$(echo "$line" | sed -n 's/.*: \([0-9]*\) doorbells (0 refused).*/\1/p')
  events=$(echo "$line" | sed -n 's/.* \([0-9]*\) completion events.*/\1/p')
  [ -n "$doorbells" ] || fail "$dev: refused doorbells or no doorbell count"
  [ "$want_doorbells" = - ] || [ "$doorbells" = "$want_doorbells" ] || fail "$dev rang $doorbells doorbells, not $want_doorbells"
  [ "$want_events" = - ] || [ "$events" = "$want_events" ] || fail "$dev had $events completion events, not $want_events"
  echo "$line" | grep -q "released 0 QPs, 0 CQs, 0 MRs, 0 PDs" || fail "$dev left objects for the server to release"
  client=$(echo "$line" | sed -n 's/.*client pid \([0-9]*\) on.*/\1/p')
  ledger=$(grep "client pid $client: send WQEs" "$dir/serve.out") || fail "$dev: no ledger line"
  echo "$ledger" | grep -q "send WQEs $iters posted, $iters completed, 0 outstanding; receives $iters completed; 0 error CQEs, 0 unexpected completions" ||
    fail "$dev: not every WQE completed exactly once"
  echo "$ledger" | grep -q "post-to-CQE latency p50 [0-9.]* us, p99 [0-9.]* us (of $iters)" || fail "$dev: no completion latency"
  if [ "$prog" = ibv_rc_pingpong ]; then
    echo "$ledger" | grep -q "one-way message latency p50 [0-9.]* us" || fail "$dev: no message latency"
  fi
  grep -q "\"pid\": $client, \"device\": \"$dev\".*\"sends_completed\": $iters," "$dir/clients.json" || fail "$dev: not in the JSON report"
done
echo "$prog $*: $iters iterations each side, exit 0; server: $(grep -c 'left at' "$dir/serve.out") clients reported"
grep "client pid" "$dir/serve.out"

stop_server
