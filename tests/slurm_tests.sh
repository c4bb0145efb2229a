#!/usr/bin/env bash
# Tests of the scaling-study tools in jobs/. First jobs/sweep on its own: bad configs are refused
# with one line and exit status 2, --dry-run prints the sbatch lines and skips grids that do not
# fit, --launcher mpiexec runs a tiny sweep here. Then under a real single-node Slurm that this
# script starts in a temporary directory (munged, slurmctld and slurmd from Debian's slurm-wlm,
# a generated slurm.conf declaring 8 CPUs, private ports, state, spool and logs): the same sweep
# goes through sbatch and srun --mpi=pmi2, every job must complete and every point must leave a
# valid HDF5 file (tests/check_sweep_results.py), and a job launched without PMI must be refused
# by the executable with the reason. The daemons are stopped whatever happens (trap); every wait
# has a timeout.
# Slurm missing: as root on Debian it installs slurm-wlm and munge with apt-get, quietly; if it
# still cannot run Slurm it prints "skip - local Slurm: <reason>" and counts none of those checks.
# Ends with "N passed, N failed". MLPSCALE_KEEP_SLURM_TMP=1 keeps the temporary directory.
source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"

export PATH=$PATH:/usr/sbin:/sbin
# A Slurm job or a site choice around this test must not leak into the private cluster.
for name in $(compgen -e SLURM_) MLPSCALE_SITE MLPSCALE_SRUN_MPI MLPSCALE_STUDY MLPSCALE_ROOT; do
  unset "$name"
done

rmdir "$tmp"  # the harness's: Slurm's daemons need a directory of their own, below
tmp=$(mktemp -d /tmp/mlpscale-slurm.XXXXXX) || exit 1
chmod 755 "$tmp"  # munged wants every directory above its socket searchable by all
daemon_pids=()
job_ids=()

# wait_until SECONDS COMMAND...: polls COMMAND every half second; false when time runs out.
wait_until() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    ((SECONDS >= deadline)) && return 1
    sleep 0.5
  done
}
no_active_jobs() { [[ -z $(squeue -h -o %i 2>/dev/null) ]]; }
process_gone() { ! kill -0 "$1" 2>/dev/null; }

cleanup() {
  local status=$?
  if ((${#daemon_pids[@]})); then
    if ((${#job_ids[@]})); then
      scancel "${job_ids[@]}" 2>/dev/null
      wait_until 20 no_active_jobs || echo "# jobs still active while stopping Slurm"
    fi
    local i pid
    for ((i = ${#daemon_pids[@]} - 1; i >= 0; i--)); do
      pid=${daemon_pids[i]}
      kill -TERM "$pid" 2>/dev/null
      wait_until 10 process_gone "$pid" || kill -KILL "$pid" 2>/dev/null
    done
  fi
  if [[ ${MLPSCALE_KEEP_SLURM_TMP:-0} == 1 ]]; then
    echo "# kept $tmp"
  else
    rm -rf "$tmp"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# ------------------------------------------------------------------ the sweep driver on its own

# A tiny sweep: 14 points run (serial at 1 rank, DDP and ZeRO-3 at 1, 2 and 4, strong and weak),
# 10 skipped (serial at 2 and 4 ranks; --dp 3 never fits). fp64 and --verify: each point must
# also match serial under its launcher.
iters=4
cat >"$tmp/tiny.json" <<EOF
{
  "study": "tiny",
  "description": "tests/slurm_tests.sh",
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

# expect_refusal NAME PATTERN JSON [ARGS...]: the sweep must exit 2 with one stderr line
# matching PATTERN and print no command line.
expect_refusal() {
  local name=$1 pattern=$2 json=$3 status=0
  shift 3
  printf '%s\n' "$json" >"$tmp/bad.json"
  timeout 30 jobs/sweep "$tmp/bad.json" --dry-run "$@" >"$tmp/out" 2>"$tmp/err" || status=$?
  if ((status != 2)); then
    not_ok "$name" "exit status $status, expected 2 ($(tr '\n' '|' <"$tmp/err"))"
  elif [[ $(grep -c . "$tmp/err") -ne 1 ]] || ! grep -q -- "$pattern" "$tmp/err"; then
    not_ok "$name" "expected one line naming '$pattern', got: $(tr '\n' '|' <"$tmp/err")"
  elif grep -q -E 'sbatch|mpiexec' "$tmp/out"; then
    not_ok "$name" "printed command lines anyway"
  else
    ok "$name is refused: $(cat "$tmp/err")"
  fi
}
base='"nodes": [1], "tasks_per_node": [1], "scaling": {"strong": {"batch": 8}}'
expect_refusal "unknown config key" "unknown key 'bogus'" \
  "{$base, \"schemes\": [{\"executable\": \"serial\"}], \"bogus\": 1}"
expect_refusal "missing schemes" "missing key 'schemes'" "{$base}"
expect_refusal "unknown scheme" 'unknown scheme "hybrid"' \
  "{$base, \"schemes\": [{\"executable\": \"hybrid\"}]}"
expect_refusal "scheme without executable" "missing key 'executable'" \
  "{$base, \"schemes\": [{\"grids\": [{}]}]}"
expect_refusal "grid flag of another scheme" "'pp' is not a grid flag of data" \
  "{$base, \"schemes\": [{\"executable\": \"data\", \"grids\": [{\"pp\": 2}]}]}"
expect_refusal "non-square tensor2d grid" "tp-dims must be square" \
  "{$base, \"schemes\": [{\"executable\": \"tensor2d\", \"grids\": [{\"tp-dims\": \"2,3\"}]}]}"
expect_refusal "unknown option" "unknown option 'hiden'" \
  "{$base, \"schemes\": [{\"executable\": \"serial\"}], \"options\": {\"hiden\": 8}}"
expect_refusal "batch among the options" "options.batch is set by the sweep" \
  "{$base, \"schemes\": [{\"executable\": \"serial\"}], \"options\": {\"batch\": 8}}"
expect_refusal "unknown scaling mode" "unknown scaling mode 'medium'" \
  '{"nodes": [1], "tasks_per_node": [1], "scaling": {"medium": {"batch": 8}},
    "schemes": [{"executable": "serial"}]}'
expect_refusal "zero node count" "nodes entry must be a positive integer" \
  '{"nodes": [0], "tasks_per_node": [1], "scaling": {"strong": {"batch": 8}},
    "schemes": [{"executable": "serial"}]}'
expect_refusal "invalid JSON" "not valid JSON" "{$base,"
expect_refusal "unknown site" "jobs/site/nosuch.env not found" \
  "{$base, \"schemes\": [{\"executable\": \"serial\"}]}" --site nosuch
# Grid values become file, log and job names: no path separators, no shell metacharacters.
expect_refusal "grid value with a path separator" "may hold only" \
  "{$base, \"schemes\": [{\"executable\": \"pipeline\", \"grids\": [{\"pp\": 1, \"schedule\": \"../x\"}]}]}"
expect_refusal "grid value with shell metacharacters" "may hold only" \
  "{$base, \"schemes\": [{\"executable\": \"pipeline\", \"grids\": [{\"pp\": 1, \"schedule\": \"1f1b;id\"}]}]}"
expect_refusal "JSON nested 100000 deep" "nested too deeply" \
  "$(python3 -c 'print("[" * 100000 + "]" * 100000)')"
# Not a dry run: the results directory is checked before anything runs.
printf '%s\n' "{$base, \"schemes\": [{\"executable\": \"serial\"}]}" >"$tmp/one.json"
status=0
timeout 30 jobs/sweep "$tmp/one.json" --launcher mpiexec --results /proc/mlpscale \
  >"$tmp/out" 2>"$tmp/err" || status=$?
if ((status == 2)) && [[ $(grep -c . "$tmp/err") -eq 1 ]] && grep -q -- "--results" "$tmp/err"; then
  ok "unusable --results is refused: $(cat "$tmp/err")"
else
  not_ok "unusable --results" "exit status $status: $(tr '\n' '|' <"$tmp/err")"
fi
# The local site has one node: a point on 2 nodes is skipped with the reason.
printf '%s\n' '{"nodes": [1, 2], "tasks_per_node": [1], "scaling": {"weak": {"batch_per_rank": 8}},
  "schemes": [{"executable": "data"}]}' >"$tmp/two-nodes.json"
status=0
jobs/sweep "$tmp/two-nodes.json" --site local --dry-run >"$tmp/out" 2>&1 || status=$?
if ((status == 0)) && grep -q "skip .*2 nodes exceed the site's 1" "$tmp/out" &&
   [[ $(grep -c 'sbatch ' "$tmp/out") -eq 1 ]]; then
  ok "points on more nodes than the site has are skipped"
else
  not_ok "points beyond the site's nodes" "exit status $status: $(tr '\n' '|' <"$tmp/out")"
fi

# --dry-run: one sbatch line per point that fits, a reason per point that does not, no files.
status=0
jobs/sweep "$tmp/tiny.json" --dry-run --results "$tmp/dry" >"$tmp/dry.out" 2>&1 || status=$?
lines=$(grep -c ' sbatch --parsable ' "$tmp/dry.out")
skips=$(grep -c '^# skip ' "$tmp/dry.out")
if ((status != 0 || lines != points || skips != skipped_points)); then
  not_ok "dry run" "exit status $status, $lines sbatch lines (expected $points), $skips skips" \
    "(expected $skipped_points): $(head -c 600 "$tmp/dry.out" | tr '\n' '|')"
elif [[ -e $tmp/dry ]]; then
  not_ok "dry run" "created $tmp/dry"
else
  ok "dry run prints $lines sbatch lines and $skips skipped points, creates nothing"
fi
if grep -q -F -x '# skip strong-data-dp3-1x4: --dp 3 does not match the 4 ranks (data parallelism uses all of them)' "$tmp/dry.out" &&
   grep -q -F -x '# skip weak-serial-1x2: bin/serial runs on exactly one rank, not 2 (use bin/data for several)' "$tmp/dry.out"; then
  ok "skipped points say why (--dp 3 on 4 ranks, serial on 2)"
else
  not_ok "skip reasons" "$(grep '^# skip' "$tmp/dry.out" | head -n 3 | tr '\n' '|')"
fi
# batch_of LABEL: the --batch of that point's sbatch line.
batch_of() { sed -nE "s/.*job-name=mlpscale-$1 .* --batch ([0-9]+) .*/\1/p" "$tmp/dry.out"; }
weak=$(batch_of weak-data-zero3-1x2)/$(batch_of weak-data-zero3-1x4)
strong=$(batch_of strong-data-zero3-1x2)/$(batch_of strong-data-zero3-1x4)
if [[ $weak == 4/8 && $strong == 8/8 ]]; then
  ok "weak scaling: batch 2 per rank gives 4 and 8 at 2 and 4 ranks; strong keeps 8"
else
  not_ok "batch per mode" "weak $weak (expected 4/8), strong $strong (expected 8/8)"
fi

# A GPU site: the template asks for 4 GPUs per node, so 8 tasks per node cannot fit.
sed 's/"tasks_per_node": \[1, 2, 4\]/"tasks_per_node": [4, 8]/' "$tmp/tiny.json" >"$tmp/gpu.json"
status=0
jobs/sweep "$tmp/gpu.json" --site template --dry-run >"$tmp/gpu.out" 2>&1 || status=$?
if ((status == 0)) &&
   grep -q -- '--partition=gpu .*--gpus-per-node=4 .*--exclusive' "$tmp/gpu.out" &&
   grep -q "^# skip strong-data-zero0-1x8: 8 tasks per node exceed the site's 4 GPUs per node" \
     "$tmp/gpu.out"; then
  ok "site template: partition, GPUs per node, extra flags reach sbatch; 8 tasks on 4 GPUs skipped"
else
  not_ok "site template" "exit status $status: $(head -c 600 "$tmp/gpu.out" | tr '\n' '|')"
fi

# Grids of the schemes still to come are checked the same way (a dry run needs no binary), on
# the template site, which has as many nodes as asked for (the local one has one).
cat >"$tmp/grids.json" <<'EOF'
{"nodes": [1, 2], "tasks_per_node": [4], "scaling": {"strong": {"batch": 16}},
 "schemes": [{"executable": "pipeline", "grids": [{"pp": 3}, {"pp": 2}]},
             {"executable": "tensor1d", "grids": [{"tp": 3}]},
             {"executable": "tensor2d", "grids": [{"tp-dims": "2,2", "dp": 1}]},
             {"executable": "tensor3d", "grids": [{"tp-dims": [2, 2, 2]},
                                                  {"tp-dims": "2,2,1", "dp": 1}]}]}
EOF
status=0
jobs/sweep "$tmp/grids.json" --site template --dry-run >"$tmp/grids.out" 2>&1 || status=$?
expected_skips=(
  "strong-pipeline-pp3-1x4: --pp 3 does not divide the 4 ranks"
  "strong-tensor1d-tp3-2x4: --tp 3 does not divide the 8 ranks"
  "strong-tensor2d-tp-dims2x2-dp1-2x4: --tp-dims 2,2 --dp 1 needs 4 ranks (q·q·dp), not 8"
  "strong-tensor3d-tp-dims2x2x2-1x4: --tp-dims 2,2,2: 4 ranks are not a multiple of x·y·z = 8")
missing_skips=()
for line in "${expected_skips[@]}"; do
  grep -q -F -x "# skip $line" "$tmp/grids.out" || missing_skips+=("$line")
done
lines=$(grep -c ' sbatch --parsable ' "$tmp/grids.out")
skips=$(grep -c '^# skip ' "$tmp/grids.out")
if ((status == 0 && lines == 5 && skips == 7 && ${#missing_skips[@]} == 0)); then
  ok "pipeline and tensor grids: products checked against the ranks, 5 fit, 7 skipped"
else
  not_ok "pipeline and tensor grids" "exit status $status, $lines lines, $skips skips," \
    "missing: ${missing_skips[*]:-none}; $(head -c 600 "$tmp/grids.out" | tr '\n' '|')"
fi

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
have_h5py=0
if [[ -x $python ]] && "$python" -c 'import h5py' 2>/dev/null; then have_h5py=1; fi
# check_results DIR NAME: every point of the study in DIR left a valid file.
check_results() {
  if ((have_h5py)); then
    "$python" tests/check_sweep_results.py "$1" "$points" >"$tmp/check.out" 2>&1
    count_checks "$tmp/check.out"
  else
    skip "$2 result files" ".venv/bin/python3 with h5py not found (run make deps)"
  fi
}

# --launcher mpiexec: the same points here, one after another.
status=0
timeout 300 jobs/sweep "$tmp/tiny.json" --launcher mpiexec --results "$tmp/mpiexec" \
  >"$tmp/mpiexec.out" 2>&1 || status=$?
if ((status == 0)) && grep -q "^$points ran, $skipped_points skipped, 0 failed" "$tmp/mpiexec.out"; then
  ok "--launcher mpiexec ran $points points"
  check_results "$tmp/mpiexec/tiny" "mpiexec"
else
  not_ok "--launcher mpiexec" "exit status $status: $(tail -n 4 "$tmp/mpiexec.out" | tr '\n' '|')"
fi

# ------------------------------------------------------------------ a real single-node Slurm

slurm_tools=(munged munge slurmctld slurmd sbatch srun squeue scontrol sinfo scancel)
first_missing() {
  local tool
  for tool in "${slurm_tools[@]}"; do
    command -v "$tool" >/dev/null || { echo "$tool"; return; }
  done
}

# Prints why Slurm cannot run here, or nothing; installs it when it can.
slurm_unavailable() {
  if ((EUID != 0)); then
    echo "needs root (slurmd runs jobs as their owner)"
    return
  fi
  [[ -z $(first_missing) ]] && return
  if ! command -v apt-get >/dev/null || [[ ! -r /etc/debian_version ]]; then
    echo "$(first_missing) not found and this is not Debian (install Slurm and munge)"
    return
  fi
  echo "# installing slurm-wlm and munge with apt-get" >&2
  local install=(apt-get install -y -qq --no-install-recommends slurm-wlm munge)
  export DEBIAN_FRONTEND=noninteractive
  if ! timeout 300 "${install[@]}" </dev/null >"$tmp/apt.log" 2>&1; then
    timeout 300 apt-get update -qq </dev/null >>"$tmp/apt.log" 2>&1
    timeout 300 "${install[@]}" </dev/null >>"$tmp/apt.log" 2>&1
  fi
  [[ -z $(first_missing) ]] && return
  echo "apt-get could not install slurm-wlm and munge ($(first_missing) missing;" \
    "$(grep -v '^\s*$' "$tmp/apt.log" | tail -n 1))"
}

# Starts munged, slurmctld and slurmd on private ports and directories; prints why not, if not.
start_slurm() {
  node=$(hostname -s 2>/dev/null || hostname)
  mkdir -p "$tmp/munge-key" "$tmp/run" "$tmp/state" "$tmp/spool" "$tmp/log"
  chmod 700 "$tmp/munge-key"
  chmod 755 "$tmp/run"
  head -c 1024 /dev/urandom >"$tmp/munge-key/munge.key"
  chmod 400 "$tmp/munge-key/munge.key"
  munged -F --key-file="$tmp/munge-key/munge.key" --socket="$tmp/run/munge.sock" \
    --pid-file="$tmp/run/munged.pid" --seed-file="$tmp/run/munged.seed" \
    --log-file="$tmp/log/munged.log" </dev/null >"$tmp/log/munged.out" 2>&1 &
  daemon_pids+=($!)
  if ! wait_until 15 test -S "$tmp/run/munge.sock"; then
    echo "munged did not start: $(tail -n 1 "$tmp/log/munged.out")"
    return
  fi

  local ports
  ports=$(python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("", 0))
print(*[x.getsockname()[1] for x in s])') || { echo "no free ports"; return; }
  read -r ctld_port slurmd_port <<<"$ports"
  # config_overrides: slurmd registers the 8 CPUs declared here, whatever the machine has.
  cat >"$tmp/slurm.conf" <<EOF
ClusterName=mlpscaletest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$tmp/run/munge.sock
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/run/slurmctld.pid
SlurmdPidFile=$tmp/run/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
SchedulerType=sched/builtin
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MailProg=/bin/true
ReturnToService=2
MinJobAge=600
KillWait=5
NodeName=$node NodeAddr=127.0.0.1 CPUs=8 RealMemory=1000 State=UNKNOWN
PartitionName=local Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
  export SLURM_CONF=$tmp/slurm.conf
  slurmctld -D -f "$SLURM_CONF" </dev/null >"$tmp/log/slurmctld.out" 2>&1 &
  daemon_pids+=($!)
  slurmd -D -f "$SLURM_CONF" -N "$node" </dev/null >"$tmp/log/slurmd.out" 2>&1 &
  daemon_pids+=($!)
  node_idle() { [[ $(sinfo -h -n "$node" -o %t 2>/dev/null) == idle ]]; }
  if ! wait_until 40 node_idle; then
    echo "node $node not idle after 40 s (sinfo: $(sinfo -h -o '%t %N' 2>&1 | head -n 1));" \
      "slurmctld: $(grep -i -E 'fatal|error' "$tmp/log/slurmctld.log" 2>/dev/null | tail -n 1);" \
      "slurmd: $(grep -i -E 'fatal|error' "$tmp/log/slurmd.log" 2>/dev/null | tail -n 1)"
  fi
}

# job_state ID: "STATE EXITCODE" from the controller, e.g. "COMPLETED 0:0".
job_state() {
  scontrol show job -o "$1" 2>/dev/null |
    sed -nE 's/.*JobState=([A-Z_]+) .* ExitCode=([0-9:]+).*/\1 \2/p'
}

reason=$(slurm_unavailable)
if [[ -n $reason ]]; then
  skip "local Slurm" "$reason"
else
  start_slurm >"$tmp/start.out"
  if [[ -s $tmp/start.out ]]; then
    not_ok "local Slurm starts" "$(cat "$tmp/start.out")"
  else
    ok "local Slurm up: munged, slurmctld, slurmd on $node, ports $ctld_port/$slurmd_port, 8 CPUs"
    if srun --mpi=list 2>&1 | grep -q -w pmi2; then
      ok "srun --mpi=list offers pmi2"
    else
      not_ok "srun --mpi=list" "no pmi2: $(srun --mpi=list 2>&1 | tr '\n' ' ')"
    fi

    # The sweep through sbatch and srun.
    status=0
    timeout 60 jobs/sweep "$tmp/tiny.json" --site local --results "$tmp/slurm" \
      >"$tmp/sweep.out" 2>&1 || status=$?
    mapfile -t job_ids < <(sed -nE 's/^submitted [^ ]+: job ([0-9]+) .*/\1/p' "$tmp/sweep.out")
    if ((status == 0 && ${#job_ids[@]} == points)); then
      ok "sweep submitted $points jobs through sbatch (jobs ${job_ids[0]}-${job_ids[-1]})"
    else
      not_ok "sweep through sbatch" "exit status $status, ${#job_ids[@]} jobs:" \
        "$(tail -n 3 "$tmp/sweep.out" | tr '\n' '|')"
    fi

    if ((${#job_ids[@]})); then
      local_start=$SECONDS
      if wait_until 150 no_active_jobs; then
        ok "all jobs left the queue in $((SECONDS - local_start)) s"
      else
        not_ok "jobs finish" "still queued after 150 s: $(squeue -h -o '%i %T' | tr '\n' ' ')"
        scancel "${job_ids[@]}" 2>/dev/null
      fi
      bad=()
      for id in "${job_ids[@]}"; do
        state=$(job_state "$id")
        [[ $state == "COMPLETED 0:0" ]] || bad+=("$id: ${state:-unknown}")
      done
      if ((${#bad[@]} == 0)); then
        ok "every job COMPLETED with exit code 0"
      else
        not_ok "job states" "${bad[*]}; $(tail -n 2 "$tmp"/slurm/tiny/logs/*.out 2>/dev/null |
          tail -n 4 | tr '\n' '|')"
      fi
      launched=$(grep -l -e '^+ srun --mpi=pmi2 .*bin/' "$tmp"/slurm/tiny/logs/*.out 2>/dev/null |
        wc -l)
      if ((launched == ${#job_ids[@]})); then
        ok "every job log shows srun --mpi=pmi2 launching the executable"
      else
        not_ok "job logs" "$launched of ${#job_ids[@]} show '+ srun --mpi=pmi2 ... bin/...'"
      fi
      check_results "$tmp/slurm/tiny" "Slurm"
    fi

    # srun without PMI starts singletons; the executable must say so and write nothing.
    status=0
    id=$(MLPSCALE_SRUN_MPI=none MLPSCALE_SITE=local MLPSCALE_ROOT=$repo timeout 30 \
      sbatch --parsable --ntasks=2 --chdir="$repo" --output="$tmp/no-pmi.out" jobs/data.sbatch \
      --hidden 8 --layers 1 --image-size 8 --iters 3 --warmup 1 --print-every 0 \
      --out "$tmp/no-pmi.h5" 2>"$tmp/no-pmi.err") || status=$?
    if ((status != 0)); then
      not_ok "job without PMI" "sbatch failed: $(cat "$tmp/no-pmi.err")"
    else
      job_ids+=("$id")
      wait_until 60 no_active_jobs
      state=$(job_state "$id")
      if [[ $state != FAILED* ]] || [[ -e $tmp/no-pmi.h5 ]] ||
         ! grep -q 'use srun --mpi=pmi2' "$tmp/no-pmi.out"; then
        not_ok "job without PMI" "state ${state:-unknown}: $(tail -n 2 "$tmp/no-pmi.out" |
          tr '\n' '|')"
      else
        ok "MLPSCALE_SRUN_MPI=none: the job fails naming srun --mpi=pmi2 ($state)"
      fi
    fi
  fi
fi

finish
