# Shared by tests/sweep_tests.sh and tests/slurm_tests.sh (sourced after tests/lib/harness.sh,
# once $tmp is final): a clean environment, the tiny sweep both run ($tmp/tiny.json, $points
# and $skipped_points) and check_results, which validates a finished study's files.

export PATH=$PATH:/usr/sbin:/sbin
# A Slurm job or a site choice around this test must not leak into the sweep or the private cluster.
for name in $(compgen -e SLURM_) MLPSCALE_SITE MLPSCALE_SRUN_MPI MLPSCALE_STUDY MLPSCALE_ROOT; do
  unset "$name"
done

# A tiny sweep: 14 points run (serial at 1 rank, DDP and ZeRO-3 at 1, 2 and 4, strong and weak),
# 10 skipped (serial at 2 and 4 ranks; --dp 3 never fits). fp64 and --verify: each point must
# also match serial under its launcher.
iters=4
cat >"$tmp/tiny.json" <<EOF
{
  "study": "tiny",
  "description": "tests/lib/sweep.sh",
  "nodes": [1],
  "tasks_per_node": [1, 2, 4],
  "scaling": {"strong": {"batch": 8}, "weak": {"batch_per_rank": 2}},
  "schemes": [
    {"executable": "serial"},
    {"executable": "data", "grids": [{"zero": 0}, {"zero": 3}, {"dp": 3}]}
  ],
  "options": {"hidden": 24, "layers": 1, "ffn-mult": 2, "image-size": 8, "iters": $iters,
              "warmup": 1, "print-every": 0, "eval-samples": 20, "precision": "fp64",
              "verify": true},
  "time": "00:02:00"
}
EOF
points=14
skipped_points=10

# count_checks FILE: adds the ok / not ok lines that a checker printed.
count_checks() {
  local line
  while IFS= read -r line; do
    echo "$line"
    case $line in
      "ok - "*) passed=$((passed + 1)) ;;
      "not ok - "*) failed=$((failed + 1)) ;;
    esac
  done <"$1"
}
# check_results DIR NAME: every point of the study in DIR left a valid file.
check_results() {
  if ((have_h5py)); then
    "$python" tests/check_sweep_results.py "$1" "$points" >"$tmp/check.out" 2>&1
    count_checks "$tmp/check.out"
  else
    skip "$2 result files" ".venv/bin/python3 with h5py not found (run make deps)"
  fi
}
