# What the Slurm test suites share (source it after tests/lib/harness.sh): a poller, Slurm's
# installation check, and the first error of a daemon's log.

# wait_until SECONDS COMMAND...: polls COMMAND every half second; false when time runs out.
wait_until() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    ((SECONDS >= deadline)) && return 1
    sleep 0.5
  done
}
process_gone() { ! kill -0 "$1" 2>/dev/null; }

slurm_tools=(munged munge slurmctld slurmd sbatch srun squeue scontrol sinfo scancel)
first_missing() {
  local tool
  for tool in "${slurm_tools[@]}" "$@"; do
    command -v "$tool" >/dev/null || { echo "$tool"; return; }
  done
}

# slurm_unavailable LOG [TOOL...]: prints why Slurm (and the extra TOOLs) cannot run here, or
# nothing; as root on Debian it installs slurm-wlm and munge first, apt-get's output in LOG.
slurm_unavailable() {
  local log=$1
  shift
  if ((EUID != 0)); then
    echo "needs root (slurmd runs jobs as their owner)"
    return
  fi
  [[ -z $(first_missing "$@") ]] && return
  if ! command -v apt-get >/dev/null || [[ ! -r /etc/debian_version ]]; then
    echo "$(first_missing "$@") not found and this is not Debian (install Slurm and munge)"
    return
  fi
  echo "# installing slurm-wlm and munge with apt-get" >&2
  local install=(apt-get install -y -qq --no-install-recommends slurm-wlm munge)
  export DEBIAN_FRONTEND=noninteractive
  if ! timeout 300 "${install[@]}" </dev/null >"$log" 2>&1; then
    timeout 300 apt-get update -qq </dev/null >>"$log" 2>&1
    timeout 300 "${install[@]}" </dev/null >>"$log" 2>&1
  fi
  [[ -z $(first_missing "$@") ]] && return
  echo "apt-get could not install slurm-wlm and munge ($(first_missing "$@") missing;" \
    "$(grep -v '^\s*$' "$log" | tail -n 1))"
}

# log_errors FILE...: a daemon's first error or fatal line (what stopped it: e.g. "Unexpected fs
# type on /sys/fs/cgroup"), then its last one when that differs; "no error logged" if none.
log_errors() {
  local lines first last
  lines=$(cat "$@" 2>/dev/null | grep -i -E 'fatal|error')
  first=$(head -n 1 <<<"$lines")
  last=$(tail -n 1 <<<"$lines")
  if [[ -z $first ]]; then
    echo "no error logged"
  elif [[ $first == "$last" ]]; then
    echo "$first"
  else
    echo "$first ... last: $last"
  fi
}

# job_state ID [RUNNER...]: "STATE EXITCODE" from the controller, e.g. "COMPLETED 0:0"; RUNNER
# (e.g. cluster_run) runs scontrol where the controller is.
job_state() {
  local id=$1
  shift
  "$@" scontrol show job -o "$id" 2>/dev/null |
    sed -nE 's/.*JobState=([A-Z_]+) .* ExitCode=([0-9:]+).*/\1 \2/p'
}

# The slurm.conf settings every test cluster shares: daemons and jobs as root, munge, no cgroups
# (proctrack/linuxproc, task/none), the CPUs the node lines declare whatever the machine has
# (config_overrides), no accounting, finished jobs kept 10 minutes for scontrol.
slurm_conf_settings() {
  local settings=(
    SlurmUser=root SlurmdUser=root AuthType=auth/munge CredType=cred/munge
    ProctrackType=proctrack/linuxproc TaskPlugin=task/none SwitchType=switch/none MpiDefault=none
    SelectType=select/cons_tres SelectTypeParameters=CR_CPU SlurmdParameters=config_overrides
    SchedulerType=sched/builtin JobAcctGatherType=jobacct_gather/none
    AccountingStorageType=accounting_storage/none JobCompType=jobcomp/none MailProg=/bin/true
    ReturnToService=2 MinJobAge=600 KillWait=5)
  printf '%s\n' "${settings[@]}"
}
