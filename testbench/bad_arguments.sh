#!/bin/sh
# Bad input found while writing docs/errors.md (ctest vhca_sim_refuses_bad_arguments): each is
# refused at once, before any run, with exit 2 and a message naming what is wrong.
set -u
sim=$1 root=$2
fail() { echo "FAIL: $*"; exit 1; }
refused() {  # refused PATTERN ARGS...
  pattern=$1; shift
  out=$(timeout 20 "$sim" "$@" 2>&1 >/dev/null); rc=$?
  [ $rc -eq 2 ] || fail "exit $rc, not 2, for: $*"
  echo "$out" | grep -q -- "$pattern" || fail "no '$pattern' for: $* (got: $(echo "$out" | grep vhca-sim | head -2))"
}
p=$root/traces/pingpong.yaml
refused "traces/: cannot be read: it is a folder" run "$root/traces/"
refused "traces/: cannot be read: it is a folder" sweep "$root/traces/" --grid count=1
refused "unknown command 'foo'" foo
refused "run: the scenario file comes first" run --set duration=100us "$p"
refused "'bogus' is not a log category" --log bogus
refused "'bogus' is not a log category" run "$p" --log cq,bogus
refused "--vcd: cannot write /nonexistent/x.vcd" run "$p" --vcd /nonexistent/x.vcd
refused "--trace: cannot write /nonexistent/t.json" run "$p" --trace /nonexistent/t.json
refused "--json: cannot write /nonexistent/r.json" run "$p" --json /nonexistent/r.json
refused "--rtl-mirror: the mirror RTL (rtl/cq_writer.v) is retired" --rtl-mirror
refused "--rtl-mirror: the mirror RTL (rtl/cq_writer.v) is retired" inject --rtl-mirror
refused "--writer mirror: the mirror writer (rtl/cq_writer.v) is retired" cosim --writer mirror
refused "--writer: 'x' is not pipelined" cosim --writer x
refused "--vcd: cannot write /nonexistent/c.vcd" cosim --cqes 100 --vcd /nonexistent/c.vcd
refused "point count=abc: --set cqs.moderation.count: 'abc' is not a plain number" sweep "$p" --grid count=abc
printf 'name: x\ncqs: {count: 2}\ncqs: {count: 3}\n' >"${TMPDIR:-/tmp}/vhca-dup-$$.yaml"
refused "dup-$$.yaml:3: key 'cqs': given twice in one map" run "${TMPDIR:-/tmp}/vhca-dup-$$.yaml"
rm -f "${TMPDIR:-/tmp}/vhca-dup-$$.yaml"
refused "the fault was never injected in 500 CQEs" cosim --cqes 500 --fault owner
echo "bad arguments refused before any run"
