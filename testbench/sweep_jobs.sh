#!/bin/sh
# Sweeps at scale (ctest vhca_sim_sweep_emitted_jobs): the lines `sweep --emit-jobs` prints run as
# printed, from another folder, under GNU parallel (or xargs -P where it is missing) and under the
# Slurm array template (docs/sweep-slurm.sbatch, its tasks started here as Slurm would, one
# SLURM_ARRAY_TASK_ID each); --collect then merges every point. A sweep whose every point fails
# its checks exits 1.
set -u
sim=$1 root=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
scenario=$root/traces/pingpong.yaml
grid="--grid count=1,8 --grid mode=eqe,cqe --set duration=300us"
fail() { echo "FAIL: $*"; exit 1; }

# GNU parallel (or xargs), run from a folder other than the one the sweep was emitted in.
"$sim" sweep "$scenario" $grid --out "$work/par" --emit-jobs >"$work/jobs.txt" 2>/dev/null || fail "emit"
[ "$(wc -l <"$work/jobs.txt")" -eq 4 ] || fail "4 job lines expected"
[ -d "$work/par" ] || fail "--emit-jobs did not create the output folder"
mkdir "$work/elsewhere"
if command -v parallel >/dev/null; then
  (cd "$work/elsewhere" && parallel -j 2 <"$work/jobs.txt"); rc=$?; runner=parallel
else
  (cd "$work/elsewhere" && xargs -d '\n' -P 2 -I{} sh -c '{}' <"$work/jobs.txt"); rc=$?; runner=xargs
fi
echo "$runner exit $rc (points whose checks fail exit 1)"
[ "$(ls "$work/par"/point-*.csv | wc -l)" -eq 4 ] || fail "$runner: not every point wrote its CSV"
"$sim" sweep "$scenario" $grid --out "$work/par" --collect >"$work/collect.txt" 2>&1 || fail "collect after $runner"
[ "$(tail -n +2 "$work/par/sweep.csv" | wc -l)" -eq 4 ] || fail "sweep.csv lacks points"
[ -s "$work/par/pareto.png" ] || fail "no plot"

# The Slurm template, each array task as Slurm would start it.
"$sim" sweep "$scenario" $grid --out "$work/slurm" --emit-jobs >"$work/slurm-jobs.txt" 2>/dev/null || fail "emit"
for k in 1 2 3 4; do
  (cd "$work/elsewhere" && SLURM_ARRAY_TASK_ID=$k bash "$root/docs/sweep-slurm.sbatch" "$work/slurm-jobs.txt")
done
(SLURM_ARRAY_TASK_ID=5 bash "$root/docs/sweep-slurm.sbatch" "$work/slurm-jobs.txt" 2>/dev/null) && fail "task 5 of 4 ran"
"$sim" sweep "$scenario" $grid --out "$work/slurm" --collect >/dev/null 2>&1 || fail "collect after the Slurm tasks"
cmp "$work/par/sweep.csv" "$work/slurm/sweep.csv" || fail "the Slurm tasks' sweep.csv differs from parallel's"

# Every point failing is a failed sweep.
"$sim" sweep "$scenario" --grid count=8,32 --set duration=300us --out "$work/bad" >"$work/bad.txt" 2>&1
[ $? -eq 1 ] || fail "a sweep of failing points exited 0"
grep -q "every point failed its checks" "$work/bad.txt" || fail "no message for the failed sweep"
echo "emitted jobs ran under $runner and the Slurm template; collected 4 points each; all-failed sweep exit 1"
