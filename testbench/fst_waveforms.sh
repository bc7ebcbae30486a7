#!/bin/sh
# Waveforms as FST as well as VCD (issue 13, item 6): the co-simulation's window around a
# mismatch (`vhca-sim cosim --fault owner`) and a scenario's chosen signals (`vhca-sim run
# --vcd/--fst`) are written both ways; GTKWave's fst2vcd turns each FST back into a dump with the
# same signals, the same instants and as many value changes as the VCD, and the FST is the smaller.
# Without vcd2fst on the PATH, --fst fails with a message naming the package.
#   fst_waveforms.sh VHCA_SIM SOURCE_DIR
set -eu
sim=$1
src=$2
for tool in vcd2fst fst2vcd; do
  command -v $tool >/dev/null || { echo "FAIL: $tool not found: install gtkwave (tools/bootstrap.sh does)"; exit 1; }
done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $1"; exit 1; }

# same VCD FST WHAT: the FST, read back, has the VCD's signals, instants and number of changes.
same() {
  fst2vcd "$2" >"$dir/back.vcd" 2>/dev/null || fail "$3: fst2vcd cannot read $2"
  names() { grep '\$var' "$1" | awk '{ print $5 }' | sort; }
  names "$1" >"$dir/names1"
  names "$dir/back.vcd" >"$dir/names2"
  cmp -s "$dir/names1" "$dir/names2" || fail "$3: the FST's signals differ from the VCD's"
  [ -s "$dir/names1" ] || fail "$3: no signal in the VCD"
  body() { sed -n '/\$enddefinitions/,$p' "$1" | grep -v '^\$' | grep -v '^#' | grep -vc '^$'; }
  inst() { grep -c '^#' "$1"; }
  [ "$(inst "$1")" -eq "$(inst "$dir/back.vcd")" ] || fail "$3: $(inst "$1") instants in the VCD, $(inst "$dir/back.vcd") in the FST"
  [ "$(grep '^#' "$1" | tail -1)" = "$(grep '^#' "$dir/back.vcd" | tail -1)" ] || fail "$3: the last instants differ"
  [ "$(body "$1")" -eq "$(body "$dir/back.vcd")" ] || fail "$3: $(body "$1") value changes in the VCD, $(body "$dir/back.vcd") in the FST"
  [ "$(wc -c <"$2")" -lt "$(wc -c <"$1")" ] || fail "$3: the FST is not smaller than the VCD"
  echo "$3: FST of $(wc -c <"$2") bytes = VCD of $(wc -c <"$1") bytes ($(wc -l <"$dir/names1") signals, $(inst "$1") instants)"
}

rc=0
"$sim" cosim --cqes 20000 --fault owner --vcd "$dir/mismatch.vcd" --fst "$dir/mismatch.fst" >"$dir/cosim.out" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "cosim with an injected fault exited $rc, not 1"
grep -q "waveform around the mismatch (FST): $dir/mismatch.fst" "$dir/cosim.out" || fail "cosim did not report the FST"
same "$dir/mismatch.vcd" "$dir/mismatch.fst" "cosim window"

"$sim" run "$src/traces/pingpong.yaml" --set duration=400us --vcd "$dir/run.vcd" --fst "$dir/run.fst" >/dev/null 2>&1 || fail "run with --vcd and --fst failed"
same "$dir/run.vcd" "$dir/run.fst" "run"
# --fst alone leaves no VCD behind, and writes the same FST.
"$sim" run "$src/traces/pingpong.yaml" --set duration=400us --fst "$dir/alone.fst" >/dev/null 2>&1 || fail "run with --fst alone failed"
# (Compared as read back, less the header's date: vcd2fst stamps the wall-clock second.)
dated() { fst2vcd "$1" 2>/dev/null | sed '/^\$date/,/^\$end/d'; }
dated "$dir/run.fst" >"$dir/run.back"
dated "$dir/alone.fst" >"$dir/alone.back"
[ -s "$dir/run.back" ] && cmp -s "$dir/run.back" "$dir/alone.back" || fail "--fst alone wrote another FST"
[ ! -e "$dir/alone.fst.vcd" ] || fail "--fst alone left its temporary VCD"

mkdir "$dir/nobin"
rc=0
PATH="$dir/nobin" "$sim" cosim --cqes 20000 --fault owner --fst "$dir/none.fst" >"$dir/none.out" 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "cosim --fst without vcd2fst exited $rc, not 2"
grep -q "vcd2fst not found: install the Debian package gtkwave" "$dir/none.out" || fail "no message naming gtkwave"
echo "without vcd2fst: refused, naming the package"
