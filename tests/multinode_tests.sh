#!/usr/bin/env bash
# Multi-node tests on a 4-node Slurm cluster that this script starts on this one machine
# (tests/lib/cluster.sh: each node a hostname of its own, all in a private network namespace):
# Slurm spreads a step over the nodes, the MPI tests see 2 ranks on each of 2 nodes, every
# scheme's fp64 --verify passes with its ranks on 2 nodes, hybrid sharding trains the same loss
# (to 1e-12) with its shard groups inside the nodes (block) and across them (cyclic), each run's
# own prediction pricing its groups on the links they really use, and the
# cluster is gone after it stops: no process in its namespace, no directory. Timings on shared
# cores mean nothing here; GPU binding needs GPUs. Not root, or Slurm not installable: one
# "skip - 4-node cluster: <reason>" line. Ends with "N passed, N failed".
source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
source "$repo/tests/lib/slurm.sh"
source "$repo/tests/lib/cluster.sh"

trap 'cluster_stop >/dev/null; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM HUP

cluster_stop_stale  # those of an earlier run killed before it could stop them
reason=$(slurm_unavailable "$tmp/apt.log" unshare nsenter ip)
if [[ -n $reason ]]; then
  skip "4-node cluster" "$reason"
  finish
fi
# Not in $(...): the cluster's settings must reach this shell.
if ! cluster_start 4 >"$tmp/start.out" 2>&1; then
  not_ok "4-node cluster up" "$(tr '\n' ' ' <"$tmp/start.out")"
  finish
fi
ok "4-node cluster up (node1-node4, 2 CPUs each) in $(cat "$tmp/start.out") s"

# step NAME SECONDS CMD...: CMD on the login node, output in $tmp/NAME.out; its status. In the
# background and waited for, so that a signal to this script stops the cluster at once (bash
# runs a trap only after a foreground command ends).
step() {
  local name=$1 limit=$2
  shift 2
  cluster_run timeout "$limit" "$@" >"$tmp/$name.out" 2>&1 &
  wait $!
}
last_line() { grep -v '^\s*$' "$tmp/$1.out" | tail -n 1; }

if step hostname 60 srun -N 4 hostname &&
  [[ $(sort -u "$tmp/hostname.out" | tr '\n' ' ') == "node1 node2 node3 node4 " ]]; then
  ok "srun -N 4 hostname: one task on each of node1-node4"
else
  not_ok "srun -N 4 hostname" "$(sort -u "$tmp/hostname.out" | tr '\n' ' ')"
fi

# The MPI tests with 2 ranks on each of 2 nodes: local ranks and sizes per node, placement by
# host (PlacementCountsTheRanksOfEachHost runs; the one-host test says why it skips).
if step mpi_tests 240 srun -N 2 -n 4 --mpi=pmi2 bin/mpi_tests &&
  grep -q '^\[  PASSED  \]' "$tmp/mpi_tests.out" && ! grep -q '^\[  FAILED  \]' "$tmp/mpi_tests.out" &&
  grep -q '^\[       OK \] MpiTest.PlacementCountsTheRanksOfEachHost' "$tmp/mpi_tests.out"; then
  ok "srun -N 2 -n 4 bin/mpi_tests: $(grep -m1 -oE '^\[  PASSED  \] [0-9]+ tests' "$tmp/mpi_tests.out" |
    tr -d '[]' | tr -s ' '), PlacementCountsTheRanksOfEachHost among them; $(grep -m1 -oE \
    '^\[  SKIPPED \] [0-9]+ tests' "$tmp/mpi_tests.out" | tr -d '[]' | tr -s ' ') (GPU, one host)"
else
  not_ok "srun -N 2 -n 4 bin/mpi_tests" "$(grep -E '^\[  FAILED  \]' "$tmp/mpi_tests.out" | head -n 3 | tr '\n' ' ')$(last_line mpi_tests)"
fi

# Every scheme's fp64 --verify with its ranks on 2 nodes (2 per node), on a tiny model.
tiny=(--hidden 32 --layers 4 --image-size 8 --batch 16 --iters 3 --warmup 1 --print-every 0
      --precision fp64 --verify --data synthetic)
verify_across_nodes() { # NAME EXECUTABLE FLAGS...
  local name=$1 exe=$2
  shift 2
  if step "$name" 120 srun -N 2 -n 4 --mpi=pmi2 "bin/$exe" "$@" "${tiny[@]}" --out "$tmp/$name.h5" &&
    grep -q '^verify: PASS' "$tmp/$name.out" &&
    [[ $("$python" -c "import h5py,sys; print(h5py.File(sys.argv[1])['/'].attrs['hosts'])" \
      "$tmp/$name.h5" 2>/dev/null) == "node1,node2" ]]; then
    ok "bin/$exe $* on 2 nodes x 2 ranks: verify PASS, hosts node1,node2"
  else
    not_ok "bin/$exe $* on 2 nodes x 2 ranks" "$(grep -m1 '^verify' "$tmp/$name.out") $(last_line "$name")"
  fi
}
for zero in 0 1 2 3; do verify_across_nodes "data-zero$zero" data --zero "$zero"; done
verify_across_nodes pipeline pipeline --pp 2 --micro-batches 4 --schedule 1f1b
verify_across_nodes tensor1d tensor1d --tp 2
verify_across_nodes tensor2d tensor2d --tp-dims 2,2
verify_across_nodes tensor3d tensor3d --tp-dims 2,1,2

# Hybrid sharding: shard groups of 2 inside each node (block), then across the nodes (cyclic).
# The same sums, but MPICH may reduce over a group in another order when its ranks sit on two
# nodes, so the losses agree to fp64's rounding, not bit for bit. Each run's own prediction
# places its groups on the nodes they really use: in block the shard groups' collectives are
# intra-node and the replicas' ("data") inter-node, in cyclic the other way round.
for m in block cyclic; do
  step "hybrid-$m" 120 srun -N 2 -n 4 -m "$m" --mpi=pmi2 bin/data --zero 3 --shard-group 2 \
    "${tiny[@]}" --machine inputs/machines/h100-cluster.json --out "$tmp/hybrid-$m.h5"
done
same_loss=$("$python" - "$tmp/hybrid-block.h5" "$tmp/hybrid-cyclic.h5" <<'PY' 2>&1
import sys, h5py, numpy as np
a, b = (h5py.File(p)["/train/loss"][()] for p in sys.argv[1:])
worst = float(np.max(np.abs(a - b) / np.abs(a))) if a.shape == b.shape else float("inf")
print("equal" if worst <= 1e-12 else f"differ by up to {worst:.3g}: {a} vs {b}", f"{worst:.1e}")
PY
)
if grep -q '^verify: PASS' "$tmp/hybrid-block.out" && grep -q '^verify: PASS' "$tmp/hybrid-cyclic.out" &&
  [[ $same_loss == equal* ]]; then
  ok "hybrid sharding (--zero 3 --shard-group 2) on 2 nodes: block and cyclic placement verify PASS, losses equal to ${same_loss#equal } relative"
else
  not_ok "hybrid sharding in block and cyclic placement" \
    "block: $(last_line hybrid-block); cyclic: $(last_line hybrid-cyclic); loss: $same_loss"
fi
links=$("$python" - "$tmp/hybrid-block.h5" "$tmp/hybrid-cyclic.h5" <<'PY' 2>&1
import sys, h5py
problems = []
for path, nodes in zip(sys.argv[1:], ([0, 0, 1, 1], [0, 1, 0, 1])):
    with h5py.File(path) as f:
        placed = (f["/placement/node"][()].tolist(), f["/placement/local_rank"][()].tolist())
    if placed != (nodes, [0, 1, 0, 1] if nodes[1] == 0 else [0, 0, 1, 1]):
        problems.append(f"{path}: /placement node {placed[0]}, local_rank {placed[1]}")
block, cyclic = (dict(h5py.File(p)["/prediction"].attrs) for p in sys.argv[1:])
links = {m: {k[len("inter_node:"):]: int(v) for k, v in p.items() if k.startswith("inter_node:")}
         for m, p in (("block", block), ("cyclic", cyclic))}
if not links["block"] or links["block"].keys() != links["cyclic"].keys():
    problems.append(f"collectives differ: {links}")
for key in links["block"]:
    group = key.rsplit(":", 1)[-1]
    want = {"shard": (0, 1), "data": (1, 0)}.get(group)
    if want and (links["block"][key], links["cyclic"][key]) != want:
        problems.append(f"{key}: inter-node {links['block'][key]} in block, "
                        f"{links['cyclic'][key]} in cyclic")
    if links["block"][key] == links["cyclic"][key] and \
            block["comm_seconds:" + key] != cyclic["comm_seconds:" + key]:
        problems.append(f"{key} on the same link but priced differently")
print("; ".join(problems) or ", ".join(f"{k} {'inter' if v else 'intra'}/"
                                       f"{'inter' if links['cyclic'][k] else 'intra'}"
                                       for k, v in sorted(links["block"].items())))
sys.exit(1 if problems else 0)
PY
)
if [[ $? == 0 ]]; then
  ok "hybrid sharding's files record each rank's node and local rank, and their predictions put each group on the link it uses (block/cyclic): $links"
else
  not_ok "hybrid sharding's recorded predictions" "$links"
fi

cluster_stop >"$tmp/stop.out"
stop_seconds=$(cat "$tmp/stop.out")
left=$(cluster_leftovers)
if [[ -z $left ]] && ((stop_seconds <= 15)); then
  ok "cluster stopped in $stop_seconds s; no process in its namespace, no directory left"
else
  not_ok "cluster stopped and gone" "in $stop_seconds s; left: $left"
fi
finish
