#!/bin/sh
# Results of an overloaded run do not depend on SystemC's process order (ctest
# vhca_sim_overload_order). The speed-only scenario with a PCIe latency of 20 us: the CQE flood
# outruns the link's credit loop, so the DMA engine's write queue, which six blocks feed, fills.
# Each speed-only switch changes which processes run when (and so the order SystemC runs two of
# them on one edge); with a count of free slots shared by every producer, the last slot went to
# whichever producer asked first and the results moved with the switches. Each producer now has
# slots of its own (model/common/stream.h): the JSON must be identical in every run, and the
# queue must have filled, else the run proves nothing.
set -u
sim=$1
scenario="$(dirname "$0")/speed_only_mixed.yaml"
. "$(dirname "$0")/scenario_runs.sh"
slow="--set pcie.latency=20us"
run_each_switch_off $slow
# The queue's line: its bound (64 slots for each of its six producers) and its high-water mark.
bound_and_mark=$(grep '^host0.hca.dma.s_write ' "$work/default.txt" | awk '{print $2, $3}')
set -- $bound_and_mark
[ "$#" -eq 2 ] || fail "no host0.hca.dma.s_write line in the queue report"
[ "$2" -gt $(($1 / 6)) ] || fail "the DMA write queue held at most $2 items: no producer filled its share"
same_results_each_switch_off
echo "the DMA write queue held up to $2 items ($(($1 / 6)) a producer); identical results with each speed-only switch off"
