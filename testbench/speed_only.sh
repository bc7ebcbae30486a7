#!/bin/sh
# A speed-only switch must not change results (ctest vhca_sim_early_injection, vhca_sim_writes_ahead,
# vhca_sim_early_completions, vhca_sim_wait_for_credits, vhca_sim_rx_takes_arrivals,
# vhca_sim_run_ahead).
#   speed_only.sh VHCA_SIM early_injection   the completion arbiter passing injected records on
#       ahead of its turn, taking one back when a transport record put before that turn could win
#       the round robin (decisions.md 39), and lone transport records at once (decisions.md 42)
#   speed_only.sh VHCA_SIM writes_ahead      the DMA engine putting a lone CQE on the PCIe link at
#       once, for the edge of its turn (decisions.md 41), and a lone EQE or MSI-X message when the
#       blocks of the ranks before it can push nothing more on its cycle (decisions.md 43), and a
#       lone payload write the same way (decisions.md 47, 48)
#   speed_only.sh VHCA_SIM early_completions the PCIe link telling the DMA engine a read's
#       completion at the far-side stage, and again when a TLP entering before it passes it
#       (decisions.md 44)
#   speed_only.sh VHCA_SIM wait_for_credits  the DMA write channel sleeping through a turn the PCIe
#       link's credits cannot serve by its edge (decisions.md 46); the flood with pcie.latency=20us,
#       which outruns the credit loop
#   speed_only.sh VHCA_SIM rx_takes_arrivals the receiver taking the packets arrived from the IB
#       link when it looks (before each take; idle, it wakes for the first arrival), the link not
#       waking on each arrival (decisions.md 49); many-qp-mixed, whose packets meet both a busy
#       and an idle receiver
#   speed_only.sh VHCA_SIM run_ahead         a host core doing its work's next quiet step, MMIO
#       write or end before its instant when nothing else in the simulation comes first
#       (decisions.md 50; the key is host.run_ahead); many-qp-mixed, whose interrupts and polls
#       meet the device's and the other contexts' work, so the core is also held back
# A scenario floods one CQ with injected CQEs (filling the CQ writer's input) while SEND, WRITE and
# READ traffic completes through the same arbiter and shares the DMA engine and the link (early
# completions: traces/many-qp-mixed.yaml, below). It runs
# with the switch on and off, and again with the other switch off; the JSON must be identical in
# all four runs and the queue report in each on/off pair, and the run must have used the shortcut
# (and met the case it must undo or yield to), else it proves nothing.
set -u
sim=$1
key=$2
case "$key" in
  early_injection) other=writes_ahead ;;
  writes_ahead) other=early_injection ;;
  early_completions | wait_for_credits | rx_takes_arrivals | run_ahead) other=writes_ahead ;;
  *) echo "usage: speed_only.sh VHCA_SIM early_injection|writes_ahead|early_completions|wait_for_credits|rx_takes_arrivals|run_ahead"; exit 2 ;;
esac
. "$(dirname "$0")/scenario_runs.sh"
# Host doorbells meet read completions on the PCIe wire only with many QPs posting: early
# completions run the shipped many-QP scenario (its reads: SEND and RDMA READ WQEs, payloads);
# so do arrivals, whose packets meet both a busy and an idle receiver there.
scenario="$(dirname "$0")/speed_only_mixed.yaml"
case "$key" in early_completions | rx_takes_arrivals | run_ahead) scenario="$(dirname "$0")/../traces/many-qp-mixed.yaml" ;; esac
# The DMA write channel waits for credits only where the flood outruns the PCIe credit loop; with
# a trace, the link gives a write's credits back as it lands (not when it is sent), so returns
# are also given back while the channel sleeps.
slow=""
[ "$key" = wait_for_credits ] && slow="--set pcie.latency=20us --trace $work/trace.json"
run on $slow
setting=$(switch_key "$key")
run off $slow --set "$setting=off"
run on_other_off $slow --set "hca.$other=off"
run off_other_off $slow --set "$setting=off" --set "hca.$other=off"
if [ "$key" = early_injection ]; then
  label="completion arbiter:"
  counts='.*: \([0-9]*\) injections passed on early, \([0-9]*\) taken back.*'
  none="completion arbiter: 0 injections passed on early, 0 taken back"
  unused="records passed on early: the flood did not fill the CQ writer's input"
  unmet="no record was taken back: the transport never met the flood"
elif [ "$key" = early_completions ]; then
  label="PCIe link: [0-9]* read completions"
  counts='.*: \([0-9]*\) read completions told early, \([0-9]*\) of them passed.*'
  none="PCIe link: 0 read completions told early"
  unused="read completions told early: the traffic read too little"
  unmet="no completion told early was passed: no host write met one"
elif [ "$key" = wait_for_credits ]; then
  # used: turns slept through; met: turns the channel woke for and found no credits (between two
  # returns, or with a waiter on the turn): the cases it must not sleep through.
  label="DMA write channel: [0-9]* turns held"
  counts='.*: \([0-9]*\) turns held for PCIe credits, \([0-9]*\) of them slept.*'
  none="turns held for PCIe credits, 0 of them slept through"
  unused="turns slept through: the flood did not outrun the credits"
  unmet="every turn held was slept through: no turn woke to find no credits"
elif [ "$key" = rx_takes_arrivals ]; then
  label="port: [0-9]* packets taken"
  # used: packets sent while the receiver was busy (taken when it looked, with no wake of their
  # own); met: wake-ups asked for an arrival (an idle receiver, which must not miss its packet).
  counts='.*looked (\([0-9]*\) sent while it was busy), \([0-9]*\) wake-ups.*'
  none="port: 0 packets taken"
  unused="packets sent while the receiver was busy: the traffic did not queue packets at it"
  unmet="no wake-up was asked for an arrival: the receiver was never idle"
elif [ "$key" = run_ahead ]; then
  # used: steps run ahead; met: times something else came first (the core waited for the instant).
  label="host0 cores: [0-9]* activations"
  counts='.*instant: \([0-9]*\) steps, .* ends; \([0-9]*\) times something else.*'
  none="run ahead of their instant: 0 steps, 0 MMIO writes, 0 ends"
  unused="steps run ahead: the host's work never had its core's future to itself"
  unmet="nothing else ever came first: the core was never held back"
else
  label="DMA write channel: [0-9]* writes issued ahead"
  counts='.*: \([0-9]*\) writes issued ahead (.*); PCIe link: \([0-9]*\) TLPs.*'
  none="DMA write channel: 0 writes issued ahead"
  unused="writes issued ahead: the flood did not reach the DMA engine alone"
  unmet="no TLP was placed before another: nothing met a write issued ahead"
fi
line=$(grep "$label" "$work/on.txt") || fail "no '$label' line"
used=$(echo "$line" | sed "s/$counts/\1/")
met=$(echo "$line" | sed "s/$counts/\2/")
[ "$key" = wait_for_credits ] && { held=$used; used=$met; met=$((held - used)); }
least=1000
[ "$key" = early_completions ] && least=200  # a read every few hundred nanoseconds of the traffic
[ "$key" = rx_takes_arrivals ] && least=50  # packets meet a busy receiver only in bursts (many-qp-mixed: 80)
[ "$key" = run_ahead ] && least=200  # many-qp-mixed: 1,184 steps
[ "$used" -gt "$least" ] || fail "only $used $unused"
if [ "$key" = writes_ahead ]; then  # EQEs and MSI-X messages go ahead on their rank guards' word
  events=$(echo "$line" | sed 's/.*(\([0-9]*\) EQEs and MSI-X messages.*/\1/')
  held=$(echo "$line" | sed 's/.*, \([0-9]*\) held by a rank guard.*/\1/')
  breaks=$(echo "$line" | sed 's/.*; \([0-9]*\) rank-order breaks.*/\1/')
  [ "$events" -gt 20 ] || fail "only $events EQEs and MSI-X messages issued ahead"
  [ "$held" -gt 0 ] || fail "no rank guard held an EQE or MSI-X message: the case they exist for was not met"
  [ "$breaks" -eq 0 ] || fail "$breaks writes pushed against the order of one issued ahead"
  # Payload writes go ahead where the DMA queue is often empty (the flood keeps it busy): shipped
  # scenarios switched on and off, one with SENDs (receive payloads), one with RDMA READs (the
  # responses' data placed by the requester, rank `other`, with the other outbox's guard).
  for payload_scenario in two-tenants storage-4k-reads; do
    scenario="$(dirname "$0")/../traces/$payload_scenario.yaml"
    run payloads_on
    run payloads_off --set hca.writes_ahead=off
    pline=$(grep "$label" "$work/payloads_on.txt") || fail "no '$label' line ($payload_scenario)"
    payloads=$(echo "$pline" | sed 's/.*messages, \([0-9]*\) payloads.*/\1/')
    breaks=$(echo "$pline" | sed 's/.*; \([0-9]*\) rank-order breaks.*/\1/')
    [ "$payloads" -gt 100 ] || fail "only $payloads payload writes issued ahead ($payload_scenario)"
    [ "$breaks" -eq 0 ] || fail "$breaks writes pushed against the order of one issued ahead ($payload_scenario)"
    same_results payloads_on payloads_off "$payload_scenario, on vs off"
    echo "$payload_scenario: $payloads payload writes issued ahead, identical results on and off"
  done
fi
[ "$met" -gt 0 ] || fail "$unmet"
if [ "$key" = wait_for_credits ]; then  # a turn slept through is one that would have been held
  held_off=$(grep "$label" "$work/off.txt" | sed "s/$counts/\1/")
  [ "$held_off" = "$held" ] || fail "$held turns held with the sleep, $held_off without"
fi
grep -q "$none" "$work/off.txt" || fail "$setting off still took the shortcut"
echo "on: $line"
for other_run in off on_other_off off_other_off; do same_results on "$other_run"; done
for pair in "on off" "on_other_off off_other_off"; do
  set -- $pair
  cmp -s "$work/$1.queues" "$work/$2.queues" || { diff "$work/$1.queues" "$work/$2.queues" | head -20; fail "queue report differs ($1 vs $2)"; }
done
echo "identical results and queue reports with $setting on and off (and hca.$other on and off)"
