#!/usr/bin/env bash
# Tests of the scaling-study tools in jobs/ under a real single-node Slurm that this script starts
# in a temporary directory (munged, slurmctld and slurmd from Debian's slurm-wlm, a generated
# slurm.conf declaring 8 CPUs, private ports, state, spool and logs): the tiny sweep of
# tests/lib/sweep.sh goes through sbatch and srun --mpi=pmi2, every job must complete and every
# point must leave a valid HDF5 file (tests/check_sweep_results.py), and a job launched without
# PMI must be refused by the executable with the reason. The daemons are stopped whatever
# happens (trap); every wait has a timeout. jobs/sweep on its own: tests/sweep_tests.sh.
# Slurm missing: as root on Debian it installs slurm-wlm and munge with apt-get, quietly; if it
# still cannot run Slurm it prints "skip - local Slurm: <reason>" and counts none of those checks.
# Ends with "N passed, N failed". MLPSCALE_KEEP_SLURM_TMP=1 keeps the temporary directory.
source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
source "$repo/tests/lib/slurm.sh"

rmdir "$tmp"  # the harness's: Slurm's daemons need a directory of their own, below
tmp=$(mktemp -d /tmp/mlpscale-slurm.XXXXXX) || exit 1
chmod 755 "$tmp"  # munged wants every directory above its socket searchable by all
daemon_pids=()
job_ids=()

no_active_jobs() { [[ -z $(squeue -h -o %i 2>/dev/null) ]]; }

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
source "$repo/tests/lib/sweep.sh"  # writes into $tmp: after the one above

# ------------------------------------------------------------------ a real single-node Slurm

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
AuthInfo=socket=$tmp/run/munge.sock
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/run/slurmctld.pid
SlurmdPidFile=$tmp/run/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
$(slurm_conf_settings)
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
      "slurmctld: $(log_errors "$tmp/log/slurmctld.log");" \
      "slurmd: $(log_errors "$tmp/log/slurmd.log" "$tmp/log/slurmd.out")"
  fi
}

reason=$(slurm_unavailable "$tmp/apt.log")
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
