#!/bin/sh
# Port events reach unmodified programs. 1) Four devices on a switch, `--port-down vhca1@100+50`:
# Debian's ibv_asyncwatch on vhca1 prints IBV_EVENT_PORT_ERR and then IBV_EVENT_PORT_ACTIVE for
# port 1, in that order and nothing else, while one on vhca2 (whose cable stays up) prints
# nothing; ibv_devinfo shows vhca1's port DOWN while the link is down. 2) Two devices on one link
# down for 100 us in the middle of an ibv_rc_pingpong (from its 200th SEND): the packets lost are retransmitted, both
# sides exit 0 and every send WQE completes exactly once.
#   verbs_port_events.sh VHCA_SIM LIBDIR
set -eu
sim=$1
lib=$2
for tool in ibv_asyncwatch ibv_rc_pingpong ibv_devinfo; do
  command -v $tool >/dev/null || { echo "FAIL: $tool not found: install ibverbs-utils (tools/bootstrap.sh does)"; exit 1; }
done
. "$(dirname "$0")/verbs_common.sh"

# wait_for FILE PATTERN: until FILE has a line matching PATTERN (30 s at most).
wait_for() {
  i=0
  until grep -Eq "$2" "$1" 2>/dev/null; do
    i=$((i + 1))
    [ $i -le 300 ] || fail "no line matching '$2' in $1"
    sleep 0.1
  done
}

start_server "$sim" "$lib" --devices 4 --port-down vhca1@100+50 --port-down vhca3@100
# The watcher on vhca2 opens first, so that an event for it could not pass before it listens.
ibv_asyncwatch -d vhca2 >"$dir/watch2.txt" 2>&1 &
watch2=$!
wait_for "$dir/watch2.txt" "^vhca2: async event FD"
ibv_asyncwatch -d vhca3 >"$dir/watch3.txt" 2>&1 &
watch3=$!
wait_for "$dir/watch3.txt" "IBV_EVENT_PORT_ERR"
# vhca3's link stays down: its port reads DOWN.
ibv_devinfo -d vhca3 >"$dir/devinfo3.txt" 2>&1 || fail "ibv_devinfo -d vhca3 failed"
grep -Eq "state:.*PORT_DOWN \(1\)" "$dir/devinfo3.txt" || fail "vhca3's port is not DOWN while its link is down"
ibv_asyncwatch -d vhca1 >"$dir/watch1.txt" 2>&1 &
watch1=$!
wait_for "$dir/watch1.txt" "IBV_EVENT_PORT_ACTIVE"
sleep 0.5  # a further event would arrive in this time
for w in $watch1 $watch2 $watch3; do kill -0 $w 2>/dev/null || fail "a watcher (pid $w) exited early"; done
kill $watch1 $watch2 $watch3 2>/dev/null || true
grep "event_type" "$dir/watch1.txt" >"$dir/events1.txt" || true
printf '  event_type IBV_EVENT_PORT_ERR (10), port 1\n  event_type IBV_EVENT_PORT_ACTIVE (9), port 1\n' >"$dir/want1.txt"
cmp -s "$dir/events1.txt" "$dir/want1.txt" || fail "vhca1's watcher did not see exactly PORT_ERR then PORT_ACTIVE for port 1"
if grep -q "event_type" "$dir/watch2.txt"; then fail "vhca2, whose cable stayed up, had a port event"; fi
ibv_devinfo -d vhca1 >"$dir/devinfo1.txt" 2>&1 || fail "ibv_devinfo -d vhca1 failed"
grep -Eq "state:.*PORT_ACTIVE \(4\)" "$dir/devinfo1.txt" || fail "vhca1's port is not ACTIVE again"
grep -q "vhca1's link down at" "$dir/serve.out" || fail "the server did not report vhca1's link going down"
grep -q "vhca1's link up at .*: 0 packets lost while it was down" "$dir/serve.out" || fail "the server did not report vhca1's link coming back"
echo "ibv_asyncwatch: vhca1 saw PORT_ERR then PORT_ACTIVE; vhca2 nothing; vhca3 stayed DOWN"
stop_server

# An outage in the middle of a pingpong: at vhca1's 200th doorbell (its program's 200th SEND; a
# time would not do: simulated time runs free while a program sleeps outside verbs, so the
# outage could pass before the traffic starts), 100 us down. The spin rule's grace is long, as in
# verbs_deterministic: a program preempted for a millisecond on a loaded machine would otherwise
# let simulated time run on, and the outage would catch other packets than in a quiet run.
rm -f "$dir/serve.out"
start_server "$sim" "$lib" --port-down vhca1@doorbell:200+100 --spin-grace-us 10000000
run_pair ibv_rc_pingpong 500
wait_reports 2
lost=$(sed -n "s/.*vhca1's link up at .*: \([0-9]*\) packets lost while it was down/\1/p" "$dir/serve.out")
[ "${lost:-0}" -gt 0 ] || fail "no packet was lost during the outage (it did not fall inside the run)"
for dev in vhca0 vhca1; do
  client=$(grep "on $dev left at" "$dir/serve.out" | sed -n 's/.*client pid \([0-9]*\) on.*/\1/p')
  grep "on $dev left at" "$dir/serve.out" | grep -q ", 2 async events;" || fail "$dev's program was not sent the two port events"
  grep "client pid $client: send WQEs" "$dir/serve.out" |
    grep -q "send WQEs 500 posted, 500 completed, 0 outstanding; receives 500 completed; 0 error CQEs, 0 unexpected completions" ||
    fail "$dev: not every send WQE completed exactly once across the outage"
done
echo "ibv_rc_pingpong across a 100 us outage: $lost packets lost and retransmitted, both sides exit 0"
stop_server
