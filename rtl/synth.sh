#!/bin/sh
# Generic synthesis of an RTL module with yosys (Debian's), and what an RTL review asks of it:
# memories inferred (and whether each can become a RAM: every read port registered, at most two
# ports), gate cells, flip-flop bits, and the longest combinational path in logic levels.
#
#   rtl/synth.sh [--require-rams N] [--require-ram MEMORY]... [--max-levels N] [--report FILE] TOP [NAME=VALUE ...] -- FILE.v ...
#
# The flow: coarse synthesis with memories kept as memories (`synth -run begin:fine`, which ends
# with `memory -nomap`), then generic gates (techmap, abc onto simple two-input gates and MUX,
# mapped for delay as a timing-driven flow would: `strash; dch; map`);
# the longest path is yosys' `ltp -noff` over those gates (flip-flops cut paths; a memory cell
# counts as one level). --require-rams N fails (exit 1) when fewer than N RAM-able memories are
# inferred: a table written as flip-flop arrays, or read combinationally, is not one.
# --require-ram MEMORY (repeatable) fails unless that memory (its hierarchical name as reported,
# e.g. ctx_table.ram.mem) is inferred and RAM-able. --max-levels N fails when the longest path is
# deeper than N logic levels.
# Exit codes: 0 ok, 1 a requirement failed or yosys failed, 2 bad usage.
set -eu
require=0
report=""
max_levels=""
named=""
while [ $# -gt 0 ]; do
  case $1 in
    --require-rams) require=$2; shift 2 ;;
    --require-ram) named="$named $2"; shift 2 ;;
    --report) report=$2; shift 2 ;;
    --max-levels) max_levels=$2; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) break ;;
  esac
done
[ $# -ge 3 ] || { echo "usage: rtl/synth.sh [--require-rams N] [--require-ram MEMORY]... [--max-levels N] [--report FILE] TOP [NAME=VALUE ...] -- FILE.v ..." >&2; exit 2; }
command -v yosys >/dev/null || { echo "rtl/synth.sh: yosys not found: install the Debian package yosys (tools/bootstrap.sh does)" >&2; exit 1; }
top=$1
shift
chparams=""
params=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case $1 in
    *=*) chparams="$chparams -chparam ${1%%=*} ${1#*=}"; params="$params $1" ;;
    *) echo "rtl/synth.sh: '$1' is not NAME=VALUE" >&2; exit 2 ;;
  esac
  shift
done
[ "${1:-}" = "--" ] || { echo "rtl/synth.sh: no '--' before the Verilog files" >&2; exit 2; }
shift
[ $# -gt 0 ] || { echo "rtl/synth.sh: no Verilog file" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
rtl_dir=$(cd "$(dirname "$0")" && pwd)
cat >"$dir/flow.ys" <<YS
read_verilog -I$rtl_dir $*
hierarchy -check -top $top $chparams
synth -top $top -flatten -run begin:fine
tee -q -o $dir/mems.txt dump t:\$mem_v2
techmap
opt -fast
abc -g AND,NAND,OR,NOR,XOR,XNOR,ANDNOT,ORNOT,MUX -script +strash;dch;map
opt_clean
tee -q -o $dir/gates.txt stat
tee -q -o $dir/ltp.txt ltp -noff
YS
if ! yosys -q -l "$dir/yosys.log" "$dir/flow.ys" >/dev/null 2>&1; then
  echo "rtl/synth.sh: yosys failed on $top:" >&2
  grep -E "ERROR|Error" "$dir/yosys.log" >&2 || tail -5 "$dir/yosys.log" >&2
  exit 1
fi
# One line per memory: name, size, width, read ports, write ports, registered-read mask.
awk '/cell \$mem_v2/ { if (name) print name, size, width, rd, wr, clk; name = $3; size = width = rd = wr = clk = "" }
     /parameter \\SIZE / { size = $3 } /parameter \\WIDTH / { width = $3 }
     /parameter \\RD_PORTS / { rd = $3 } /parameter \\WR_PORTS / { wr = $3 }
     /parameter \\RD_CLK_ENABLE / { clk = $3 }
     END { if (name) print name, size, width, rd, wr, clk }' "$dir/mems.txt" >"$dir/mem_lines.txt"
rams=0
mems=0
: >"$dir/mem_report.txt"
while read -r name size width rd wr clk; do
  mems=$((mems + 1))
  bits=${clk#*\'}
  registered=yes
  case $bits in *0*) registered=no ;; esac
  if [ "$registered" = yes ] && [ $((rd + wr)) -le 2 ]; then
    rams=$((rams + 1))
    verdict="RAM-able"
  else
    verdict="NOT RAM-able"
  fi
  read_kind=$([ "$registered" = yes ] && echo registered || echo "not all registered")
  echo "  ${name#\\}: $size x $width bits, $wr write and $rd read ports (reads $read_kind): $verdict" >>"$dir/mem_report.txt"
done <"$dir/mem_lines.txt"
cells=$(awk '/Number of cells:/ { n = $4 } END { print n + 0 }' "$dir/gates.txt")
mem_cells=$(awk '$1 == "$mem_v2" { n += $2 } END { print n + 0 }' "$dir/gates.txt")
ffs=$(awk '$1 ~ /^\$_.*DFF/ { n += $2 } END { print n + 0 }' "$dir/gates.txt")
levels=$(sed -n 's/.*Longest topological path in .* (length=\([0-9]*\)).*/\1/p' "$dir/ltp.txt" | head -1)
{
  echo "synthesis of $top${params:+ (${params# })}: $(yosys -V | cut -d' ' -f1-2), generic gates"
  echo "memories: $mems inferred, $rams RAM-able (every read registered, at most two ports)"
  cat "$dir/mem_report.txt"
  echo "gate cells: $((cells - mem_cells)) (memories excluded)"
  echo "flip-flop bits: $ffs"
  echo "longest combinational path: ${levels:-0} logic levels"
} >"$dir/report.txt"
cat "$dir/report.txt"
[ -z "$report" ] || cp "$dir/report.txt" "$report"
if [ "$rams" -lt "$require" ]; then
  echo "rtl/synth.sh: $top: $rams RAM-able memories inferred, $require required" >&2
  exit 1
fi
for mem in $named; do
  if ! grep -q "^  $mem: .*: RAM-able\$" "$dir/mem_report.txt"; then
    echo "rtl/synth.sh: $top: memory $mem is not inferred as a RAM-able memory" >&2
    exit 1
  fi
done
if [ -n "$max_levels" ] && [ "${levels:-0}" -gt "$max_levels" ]; then
  echo "rtl/synth.sh: $top: longest combinational path ${levels} logic levels, at most $max_levels allowed" >&2
  exit 1
fi
