#!/bin/sh
# perftest's ib_send_lat through the device server gives the model's own one-way latency: the
# server's p50 (the peer's post to the RECV CQE landing) equals, within 1 ns, what `vhca-sim run`
# measures for the same set-up as a scenario (traces/send-lat.yaml with the server's hardware:
# the baseline profile, a 400 ns link, 2-byte SENDs): both paths drive one model, so a difference
# means the verbs path adds or loses work the scenario path does not.
#   verbs_matches_model.sh VHCA_SIM LIBDIR TRACES_DIR
set -eu
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$1" run "$3/send-lat.yaml" --set hca.profile=baseline --set link.latency=400ns --set workload.size=2B \
  --json "$out/model.json" >/dev/null
model=$(sed -n 's/.*"RECV_cqe_p50_us": \([0-9.e+-]*\).*/\1/p' "$out/model.json")
[ -n "$model" ] || { echo "FAIL: no RECV_cqe_p50_us from the scenario"; exit 1; }
model=$(awk -v m="$model" 'BEGIN { printf "%.3f", m }')
exec sh "$(dirname "$0")/verbs_pair.sh" "$1" "$2" ib_send_lat 1000 \
  "sends0=1000,recvs0=1000,sends1=1000,recvs1=1000,oneway_p50=$model" -s 2
