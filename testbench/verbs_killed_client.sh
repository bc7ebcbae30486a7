#!/bin/sh
# A verbs program killed in the middle of its traffic (SIGKILL: no verb gets to clean up), as
# driver developers' programs die: the server releases everything it left (its QP first, so no
# more of its traffic is carried; a message already on the wire lands in its pinned pages), its
# peer is left waiting or gets its SEND's retry-exceeded error as on real hardware, and the server
# goes on serving: a new pair of programs runs to the end, and the server stops cleanly.
#   verbs_killed_client.sh VHCA_SIM LIBDIR
set -eu
sim=$1
lib=$2
prog=ibv_rc_pingpong
command -v $prog >/dev/null || { echo "FAIL: $prog not found: install ibverbs-utils (tools/bootstrap.sh does)"; exit 1; }
. "$(dirname "$0")/verbs_common.sh"
start_server "$sim" "$lib"

$prog -d vhca0 -p $port -n 1000000000 >"$dir/victim-peer.out" 2>&1 &
peer=$!
wait_listening $peer
$prog -d vhca1 -p $port -n 1000000000 127.0.0.1 >"$dir/victim.out" 2>&1 &
victim=$!
# Let it run: its doorbells are counted in the report, so the kill is mid-traffic, not before it.
# A pingpong rings no send doorbell before its traffic, and unloaded it rings thousands a second;
# the bar is low (more than 10 in 2 s) because a loaded machine runs the sanitizer build far
# slower (52 in one second, seen once while another build shared the 2 cores).
sleep 2
kill -KILL $victim
wait_reports 1
line=$(grep "on vhca1 left at" "$dir/serve.out") || fail "no report for the killed client"
echo "$line" | grep -q "released 1 QPs, 1 CQs, 1 MRs, 1 PDs it left open" || fail "the killed client's objects were not all released"
doorbells=$(echo "$line" | sed -n 's/.*: \([0-9]*\) doorbells.*/\1/p')
[ "${doorbells:-0}" -gt 10 ] || fail "the client was killed before its traffic ran ($doorbells doorbells)"
# Its peer either waits for a message that will never come (a pingpong has no timeout of its own),
# or, if it had a SEND in flight, gets that SEND's error completion once the retries run out
# (transport retry counter exceeded: 7 retries of 67 ms in simulated time) and exits 1, as on real
# hardware. Either way it must not hang in the server or crash.
sleep 0.5
if kill -0 $peer 2>/dev/null; then
  kill -KILL $peer
  echo "the peer was waiting for its partner's message: killed"
else
  rc=0
  wait $peer || rc=$?
  [ $rc -eq 1 ] && grep -q "Failed status transport retry counter exceeded" "$dir/victim-peer.out" ||
    fail "the peer exited with $rc, not with its SEND's retry-exceeded error"
  echo "the peer's SEND in flight completed with 'transport retry counter exceeded': exit 1"
fi
wait_reports 2
grep "on vhca0 left at" "$dir/serve.out" | grep -q "released 1 QPs, 1 CQs, 1 MRs, 1 PDs it left open" ||
  fail "the peer's objects were not all released"
echo "killed mid-traffic after $doorbells doorbells: both clients' QP, CQ, MR and PD released"
grep "left at" "$dir/serve.out"

# The server goes on: a new pair runs to the end (same QPNs, CQNs and keys handed out again).
port=$((port + 1))
run_pair $prog 200
wait_reports 4
echo "a new pair then ran 200 iterations, exit 0"
stop_server
echo "server stopped on SIGTERM"
