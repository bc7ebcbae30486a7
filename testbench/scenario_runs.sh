# Sourced by the scripts that run one scenario several ways and compare the results
# (speed_only.sh, overload_order.sh, edge_order.sh), once they have set $sim; they set $scenario
# before they run. Runs keep their files in $work, removed at exit.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# run NAME [ARGS...]: the scenario with ARGS and --queues. Keeps its report (NAME.txt), its JSON
# without the wall-clock lines (NAME.cmp), and its queue report without the wall-clock lines and
# those that count the speed-only shortcuts themselves or the work done ahead of a process (which
# depend on the order SystemC runs processes in; NAME.queues).
run() {
  name=$1
  shift
  "$sim" run "$scenario" "$@" --queues --json "$work/$name.json" >"$work/$name.txt" 2>&1 ||
    fail "run ($name): $(tail -3 "$work/$name.txt")"
  grep -v '"wall\|per_wall' "$work/$name.json" >"$work/$name.cmp"
  sed -n '/^queues between blocks/,$p' "$work/$name.txt" |
    grep -v 'issued ahead\|passed on early\|told early\|slept through\|one order on an edge\|taken from the link\|run ahead of their\|wall' >"$work/$name.queues"
}
# run_each_switch_off [ARGS...]: the scenario with ARGS (run "default"), then with each speed-only
# switch off in turn (runs "KEY_off"). Each switch changes which processes run when, and so the
# order SystemC runs two of them in on one edge.
speed_only_switches="writes_ahead early_injection early_completions wait_for_credits rx_takes_arrivals run_ahead"
# The scenario key of a speed-only switch: the HCA's, or the host's (run_ahead).
switch_key() { if [ "$1" = run_ahead ]; then echo "host.$1"; else echo "hca.$1"; fi; }
run_each_switch_off() {
  run default "$@"
  for key in $speed_only_switches; do run "${key}_off" "$@" --set "$(switch_key "$key")=off"; done
}
# same_results NAME OTHER [WHAT]: fails unless the two runs gave the same JSON (WHAT names them).
same_results() {
  cmp -s "$work/$1.cmp" "$work/$2.cmp" || { diff "$work/$1.cmp" "$work/$2.cmp" | head -20; fail "results differ (${3:-$1 vs $2})"; }
}
# Fails unless every run of run_each_switch_off gave the default run's JSON.
same_results_each_switch_off() {
  for key in $speed_only_switches; do same_results default "${key}_off"; done
}
