#!/bin/sh
# A perftest latency program through the device server gives the model's own figure: the server's
# p50 equals, within 1 ns, what `vhca-sim run` measures for the same set-up as a scenario (with the
# server's hardware: the baseline profile and a 400 ns link). Both paths drive one model, so a
# difference means the verbs path adds or loses work the scenario path does not.
#   verbs_matches_model.sh VHCA_SIM LIBDIR TRACES_DIR send|write
# send:  ib_send_lat's one-way latency (the peer's post to the RECV CQE) against
#        traces/send-lat.yaml's RECV CQE p50 for 2-byte SENDs;
# write: ib_write_lat's post-to-CQE latency against traces/write-lat.yaml's RDMA_WRITE CQE p50
#        (perftest's 1-entry send CQ in both).
set -eu
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
case $4 in
  send) scenario=send-lat; field=RECV_cqe_p50_us; prog=ib_send_lat; key=oneway_p50; recvs=1000 ;;
  write) scenario=write-lat; field=RDMA_WRITE_cqe_p50_us; prog=ib_write_lat; key=completion_p50; recvs=0 ;;
  *) echo "FAIL: send or write, not '$4'"; exit 1 ;;
esac
"$1" run "$3/$scenario.yaml" --set hca.profile=baseline --set link.latency=400ns --set workload.size=2B \
  --json "$out/model.json" >/dev/null
model=$(sed -n "s/.*\"$field\": \([0-9.e+-]*\).*/\1/p" "$out/model.json")
[ -n "$model" ] || { echo "FAIL: no $field from $scenario"; exit 1; }
model=$(awk -v m="$model" 'BEGIN { printf "%.3f", m }')
exec sh "$(dirname "$0")/verbs_pair.sh" "$1" "$2" $prog 1000 \
  "sends0=1000,recvs0=$recvs,sends1=1000,recvs1=$recvs,$key=$model" -s 2
