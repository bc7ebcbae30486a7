#!/bin/sh
# hca.early_injection is simulation speed only (ctest vhca_sim_early_injection): the completion
# arbiter passing injected records on ahead of its turn, and taking one back when a transport
# record put before that turn could win the round robin, gives the same results as waking the
# arbiter for every record. A scenario that floods the injection port while QP traffic completes
# through the same arbiter runs both ways; the JSON must be identical, and the run must have
# passed records on early and taken some back (else it proves nothing).
set -u
sim=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cat >"$work/mixed.yaml" <<'YAML'
name: early-injection-mixed
duration: 30us
warmup: 5us
seed: 3
host: {vectors: 2}
cqs: {count: 3, size: 16384, moderation: {count: 64, period: 8us, mode: eqe}}
workload:
  groups:
    - name: flood
      qps: 4
      cqs: [0]
      mix: {send: 1}
      size: 64B
      arrival: {process: poisson, kind: cqe, rate: 300M/s}
    - name: traffic
      qps: 8
      cqs: [1, 2]
      mix: {send: 1, write: 1}
      size: 256B
      arrival: {process: poisson, rate: 20M/s}
YAML
"$sim" run "$work/mixed.yaml" --queues --json "$work/on.json" >"$work/on.txt" 2>&1 || fail "run (early on): $(tail -3 "$work/on.txt")"
"$sim" run "$work/mixed.yaml" --set hca.early_injection=off --queues --json "$work/off.json" >"$work/off.txt" 2>&1 ||
  fail "run (early off): $(tail -3 "$work/off.txt")"
line=$(grep "completion arbiter:" "$work/on.txt") || fail "no arbiter line"
echo "early on: $line"
early=$(echo "$line" | sed 's/.*: \([0-9]*\) injections passed on early, \([0-9]*\) taken back/\1/')
back=$(echo "$line" | sed 's/.*: \([0-9]*\) injections passed on early, \([0-9]*\) taken back/\2/')
[ "$early" -gt 1000 ] || fail "only $early records passed on early: the flood did not fill the CQ writer's input"
[ "$back" -gt 0 ] || fail "no record was taken back: the transport never met the flood"
grep -q "completion arbiter: 0 injections passed on early, 0 taken back" "$work/off.txt" || fail "off still passed records on early"
grep -v '"wall\|per_wall' "$work/on.json" >"$work/on.cmp"
grep -v '"wall\|per_wall' "$work/off.json" >"$work/off.cmp"
cmp -s "$work/on.cmp" "$work/off.cmp" || { diff "$work/on.cmp" "$work/off.cmp" | head -20; fail "results differ"; }
echo "identical results with and without early injection"
