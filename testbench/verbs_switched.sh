#!/bin/sh
# More than two devices: `vhca-sim serve --devices 4` cables four HCAs to one IB switch that routes
# by LID. ibv_devices lists vhca0..vhca3; two ibv_rc_pingpong pairs run at once across the switch
# (vhca0 with vhca2, vhca1 with vhca3: each QP's remote LID, from the program's ah_attr, picks its
# peer), both exit 0 with every send WQE completed exactly once, and the switch reports what it
# forwarded with nothing unroutable. A pair that reached the wrong HCA would have no peer QP and
# fail on retries.
#   verbs_switched.sh VHCA_SIM LIBDIR
set -eu
sim=$1
lib=$2
command -v ibv_rc_pingpong >/dev/null || { echo "FAIL: ibv_rc_pingpong not found: install ibverbs-utils (tools/bootstrap.sh does)"; exit 1; }
. "$(dirname "$0")/verbs_common.sh"
start_server "$sim" "$lib" --devices 4
grep -q "4 devices (vhca0 LID 1, vhca1 LID 2, vhca2 LID 3, vhca3 LID 4)" "$dir/serve.out" || fail "the server did not announce four devices"
ibv_devices >"$dir/devices.txt" 2>&1 || fail "ibv_devices exited with an error"
for n in 0 1 2 3; do
  grep -Eq "^ +vhca$n +.564843410000000$((n + 1))$" "$dir/devices.txt" || fail "ibv_devices does not list vhca$n"
done

iters=500
base=$port
for pair in 0 1; do
  port=$((base + pair))
  timeout 300 ibv_rc_pingpong -d vhca$pair -p $port -n $iters >"$dir/server$pair.out" 2>&1 &
  eval server_pid$pair=$!
  eval wait_listening \$server_pid$pair
done
for pair in 0 1; do
  timeout 300 ibv_rc_pingpong -d vhca$((pair + 2)) -p $((base + pair)) -n $iters 127.0.0.1 >"$dir/client$pair.out" 2>&1 &
  eval client_pid$pair=$!
done
for who in server_pid0 server_pid1 client_pid0 client_pid1; do
  eval p=\$$who
  wait $p || fail "$who exited with an error"
done
for f in server0 server1 client0 client1; do
  grep -q "^$iters iters in" "$dir/$f.out" || fail "$f did not report $iters iterations"
done
wait_reports 4
for dev in vhca0 vhca1 vhca2 vhca3; do
  client=$(grep "on $dev left at" "$dir/serve.out" | sed -n 's/.*client pid \([0-9]*\) on.*/\1/p')
  [ -n "$client" ] || fail "no report for $dev"
  grep "client pid $client: send WQEs" "$dir/serve.out" |
    grep -q "send WQEs $iters posted, $iters completed, 0 outstanding; receives $iters completed; 0 error CQEs, 0 unexpected completions" ||
    fail "$dev: not $iters send WQEs and receives completed exactly once"
done
stop_server
line=$(grep "switch: " "$dir/serve.out") || fail "no switch report"
echo "$line"
# Each iteration is a SEND and its ACK each way per pair: at least 4 packets per iteration and pair.
forwarded=$(echo "$line" | sed -n 's/.*switch: \([0-9]*\) packets forwarded, \([0-9]*\) unroutable.*/\1/p')
unroutable=$(echo "$line" | sed -n 's/.*forwarded, \([0-9]*\) unroutable.*/\1/p')
[ "${unroutable:-x}" = 0 ] || fail "the switch could not route $unroutable packets"
[ "${forwarded:-0}" -ge $((4 * 2 * iters)) ] || fail "the switch forwarded only ${forwarded:-0} packets"
echo "two ibv_rc_pingpong pairs across the switch: $iters iterations each, both sides exit 0"
