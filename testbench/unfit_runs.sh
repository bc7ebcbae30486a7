#!/bin/sh
# Issue 14, item 3 (ctest vhca_sim_refuses_unfit_runs): a run that would need more simulated host
# memory than host.memory, or more QP contexts than the HCA has, is refused before it starts, with
# exit 2 and the numbers; raising host.memory lets it run; a sweep refuses before any point runs.
set -u
sim=$1 root=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
refused() {  # refused PATTERN ARGS...: exit 2 and stderr matching PATTERN, within a second
  pattern=$1; shift
  out=$(timeout 10 "$sim" "$@" 2>&1 >/dev/null); rc=$?
  [ $rc -eq 2 ] || fail "exit $rc, not 2, for: $*"
  echo "$out" | grep -q "$pattern" || fail "no '$pattern' in: $out"
  echo "refused: $(echo "$out" | tail -1 | cut -c1-160)..."
}
mixed=$root/traces/many-qp-mixed.yaml
refused "93.8 GiB of buffers: 3 x 1000 QPs x 32 WQEs x 1048576 B.*more than host.memory 4.0 GiB" \
  run "$mixed" --set qps.count=1000 --set workload.size=1MiB
# CQ rings count (the driver writes every entry when it creates a CQ).
pingpong=$root/traces/pingpong.yaml
refused "of CQs: 1 x 1048576 CQEs x 64 B), more than host.memory 32.0 MiB" \
  run "$pingpong" --set host.memory=32MiB --set cqs.size=1048576
"$sim" run "$pingpong" --set host.memory=128MiB --set cqs.size=1048576 >/dev/null 2>&1 ||
  fail "with host.memory raised the run should fit and pass"
refused "host.memory: '0.5MiB' is outside 1 MiB .. 1024 GiB" run "$mixed" --set host.memory=0.5MiB
# QPs over all groups: two groups of 600.
cat >"$work/groups.yaml" <<YAML
name: many-groups
duration: 100us
cqs: {count: 2}
workload:
  groups:
    - {name: a, qps: 600, size: 64B, mix: {send: 1}, arrival: {process: poisson, rate: 100k/s}}
    - {name: b, qps: 600, size: 64B, mix: {send: 1}, arrival: {process: poisson, rate: 100k/s}}
YAML
refused "1200 QPs on each HCA (over all QP groups), more than its 1022 QP contexts" run "$work/groups.yaml"
# A sweep checks every point before running any.
refused "point qps.count=1000: the run does not fit" \
  sweep "$mixed" --grid qps.count=8,1000 --set workload.size=1MiB --out "$work/sweep"
[ ! -e "$work/sweep/point-000.csv" ] || fail "the sweep ran a point before refusing"
echo "unfit runs refused before they start"
