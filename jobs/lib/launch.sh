# shellcheck shell=bash
# The shared body of jobs/<executable>.sbatch: runs bin/<executable> on the job's allocation
# with srun, one MPI rank per task, after loading the site's environment. Sourced, not run.
#
# Environment (jobs/sweep sets all of them; by hand, MLPSCALE_SITE at least):
#   MLPSCALE_ROOT      repository root (default: the directory sbatch was called from)
#   MLPSCALE_SITE      site name, for jobs/site/<name>.env (default: local)
#   MLPSCALE_STUDY     results/<study>/ when the options carry no --out (default: adhoc)
#   MLPSCALE_SRUN_MPI  srun --mpi value, overriding the site's SITE_SRUN_MPI (default: pmi2)

mlpscale_fail() {
  echo "mlpscale job: $*" >&2
  exit 2
}

# Makes `module` available in a non-login batch shell (Lmod or Environment Modules).
mlpscale_find_module_command() {
  type module >/dev/null 2>&1 && return 0
  local init
  for init in "${LMOD_PKG:+$LMOD_PKG/init/bash}" /etc/profile.d/lmod.sh \
      /etc/profile.d/modules.sh /usr/share/lmod/lmod/init/bash \
      /usr/share/modules/init/bash; do
    # shellcheck disable=SC1090
    [[ -n $init && -r $init ]] && source "$init" && type module >/dev/null 2>&1 && return 0
  done
  return 1
}

# $1: executable name (bin/<name>); the rest: its options, passed through unchanged.
mlpscale_launch() {
  local executable=$1
  shift
  local root=${MLPSCALE_ROOT:-${SLURM_SUBMIT_DIR:-$PWD}}
  cd "$root" || mlpscale_fail "cannot enter MLPSCALE_ROOT $root"
  [[ -f jobs/lib/launch.sh ]] ||
    mlpscale_fail "$root is not the mlpscale repository (set MLPSCALE_ROOT or submit from it)"

  local site=${MLPSCALE_SITE:-local}
  local site_file=jobs/site/$site.env
  [[ -r $site_file ]] || mlpscale_fail "site file $site_file not found (MLPSCALE_SITE=$site)"
  # shellcheck disable=SC1090
  source "$site_file" || mlpscale_fail "site file $site_file failed"

  if [[ -n ${SITE_MODULES:-} ]]; then
    mlpscale_find_module_command ||
      mlpscale_fail "$site_file sets SITE_MODULES but no 'module' command was found"
    # shellcheck disable=SC2086
    module load $SITE_MODULES || mlpscale_fail "module load $SITE_MODULES failed"
  fi
  if declare -F site_setup >/dev/null; then
    site_setup || mlpscale_fail "site_setup of $site_file failed"
  fi

  local binary=bin/$executable
  [[ -x $binary ]] || mlpscale_fail "$root/$binary not found (run make; is the scheme built yet?)"

  # The suite's options pass through; a default --out keeps results under results/<study>/.
  local args=("$@") has_out=0 arg
  for arg in "$@"; do
    [[ $arg == --out || $arg == --out=* ]] && has_out=1
  done
  if ((!has_out)); then
    args+=(--out "results/${MLPSCALE_STUDY:-adhoc}/$executable-${SLURM_JOB_ID:-nojob}.h5")
  fi

  # One BLAS/OpenMP thread per allocated core of the task.
  export OPENBLAS_NUM_THREADS=${SLURM_CPUS_PER_TASK:-1}
  export OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK:-1}

  local srun_flags=("--mpi=${MLPSCALE_SRUN_MPI:-${SITE_SRUN_MPI:-pmi2}}")
  # Slurm 22.05 stopped srun inheriting the job's --cpus-per-task; pass it on explicitly.
  [[ -n ${SLURM_CPUS_PER_TASK:-} ]] && srun_flags+=("--cpus-per-task=$SLURM_CPUS_PER_TASK")
  if ((${SITE_GPUS_PER_NODE:-0} > 0)) && [[ ${SITE_GPU_BINDING:-per-task} == per-task ]]; then
    srun_flags+=(--gpus-per-task=1)
  fi
  local extra=()
  eval "extra=(${SITE_SRUN_FLAGS:-})" || \
    mlpscale_fail "SITE_SRUN_FLAGS of $site_file does not parse"
  srun_flags+=("${extra[@]}")

  echo "mlpscale job ${SLURM_JOB_ID:-?}: ${SLURM_NTASKS:-?} tasks on ${SLURM_JOB_NUM_NODES:-?}" \
       "node(s) (${SLURM_JOB_NODELIST:-?}); site $site${SITE_DESCRIPTION:+: $SITE_DESCRIPTION}"
  echo "+ srun ${srun_flags[*]} $binary$(printf ' %q' "${args[@]}")"
  srun "${srun_flags[@]}" "$binary" "${args[@]}"
}
