# Sourced by the scripts that run one scenario several ways and compare the results
# (speed_only.sh, overload_order.sh), once they have set $sim, $scenario and $work.
fail() { echo "FAIL: $*"; exit 1; }
# run NAME [ARGS...]: the scenario with ARGS and --queues. Keeps its report (NAME.txt), its JSON
# without the wall-clock lines (NAME.cmp), and its queue report without the wall-clock lines and
# those that count the speed-only shortcuts themselves (NAME.queues).
run() {
  name=$1
  shift
  "$sim" run "$scenario" "$@" --queues --json "$work/$name.json" >"$work/$name.txt" 2>&1 ||
    fail "run ($name): $(tail -3 "$work/$name.txt")"
  grep -v '"wall\|per_wall' "$work/$name.json" >"$work/$name.cmp"
  sed -n '/^queues between blocks/,$p' "$work/$name.txt" |
    grep -v 'issued ahead\|passed on early\|told early\|slept through\|wall' >"$work/$name.queues"
}
