#!/bin/sh
# The transport's blocks act on an edge in one order whichever process SystemC runs first (ctest
# vhca_sim_edge_order; decisions.md 48): the timers due, the reads usable, the receiver's packet,
# then the transmit arbiter's decision. many-qp-mixed on two host cores with a PCIe latency of
# 5 us is where the arbiter met a read completion and the receiver's RDMA READ request on its
# edge: before the rule, its results moved when a speed-only switch (which changes which processes
# run when, and so SystemC's order on one edge) was turned off. The JSON must be identical in
# every run, and the run must have met both feeders on the arbiter's edge, else it proves nothing.
set -u
sim=$1
scenario="$(dirname "$0")/../traces/many-qp-mixed.yaml"
. "$(dirname "$0")/scenario_runs.sh"
run_each_switch_off --set host.cores=2 --set pcie.latency=5us
line=$(grep '^host0 transport, one order on an edge' "$work/default.txt") || fail "no transport order line in the queue report"
reads=$(echo "$line" | sed -n 's/.* \([0-9]*\) reads answered.*/\1/p')
packets=$(echo "$line" | sed -n 's/.* \([0-9]*\) packets handed on.*/\1/p')
[ "${reads:-0}" -gt 0 ] || fail "no read completion met the transmit arbiter on its edge: $line"
[ "${packets:-0}" -gt 0 ] || fail "no packet of the receiver met the transmit arbiter on its edge: $line"
same_results_each_switch_off
echo "$reads reads and $packets packets met the transmit arbiter on its edge; identical results with each speed-only switch off"
