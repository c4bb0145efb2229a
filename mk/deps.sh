#!/usr/bin/env bash
# Installs what building, testing and analysing mlpscale needs, or says what is missing.
#   Debian/Ubuntu as root: apt-get installs the missing system packages.
#   Debian/Ubuntu, not root: lists them with the sudo line to run, exits 1.
#   Elsewhere (clusters with environment modules), or with MLPSCALE_DEPS_PROBE=1: probes for the
#   compiler wrapper, libraries and headers the build uses, lists what is missing, exits 1 if any.
#   Always: the Python analysis packages (analysis/requirements.txt) go into .venv.
# --check only reports, never installs (exit 1 if something is missing).
# Fast when all is present: one dpkg-query and one Python import.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

usage() {
  echo "usage: bash mk/deps.sh [--check]"
  echo "  --check   only report what is missing (exit 1 if anything is), install nothing"
  echo "  MLPSCALE_DEPS_PROBE=1   skip apt and probe for tools and headers (as on non-Debian systems)"
}

CHECK_ONLY=0
for arg in "$@"; do
  case "$arg" in
    --check) CHECK_ONLY=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "deps: unknown argument '$arg'" >&2; usage >&2; exit 2 ;;
  esac
done

# libopenblas-openmp-dev: the OpenBLAS build whose threads the CPU kernels share (mk/detect.mk).
SYSTEM_PACKAGES=(mpich libmpich-dev libhdf5-dev libopenblas-dev libopenblas-openmp-dev
                 nlohmann-json3-dev libcli11-dev zlib1g-dev libgtest-dev libbenchmark-dev
                 dataset-fashion-mnist pkg-config make g++ libtbb-dev)
PYTHON=${PYTHON:-python3}
VENV=.venv
REQUIREMENTS=analysis/requirements.txt
PY_IMPORTS='import h5py, numpy, matplotlib'
status=0

venv_ready() { [[ -x $VENV/bin/python ]] && "$VENV/bin/python" -c "$PY_IMPORTS" >/dev/null 2>&1; }
# Debian ships venv without ensurepip unless python3-venv is installed, so probe both.
python_can_make_venv() { "$PYTHON" -c 'import venv, ensurepip' >/dev/null 2>&1; }

VENV_READY=0
if venv_ready; then VENV_READY=1; fi

# ---------------------------------------------------------------- Debian/Ubuntu: apt packages
apt_packages() {
  local wanted=("${SYSTEM_PACKAGES[@]}")
  if (( ! VENV_READY )) && ! python_can_make_venv; then wanted+=(python3 python3-venv); fi

  # One dpkg-query for all; unknown packages are simply absent from its output.
  local -A installed=()
  local name state
  while read -r name state; do
    if [[ ${state:1:1} == i ]]; then installed[$name]=1; fi
  done < <(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${wanted[@]}" 2>/dev/null || true)
  local missing=() pkg
  for pkg in "${wanted[@]}"; do
    [[ -n ${installed[$pkg]:-} ]] || missing+=("$pkg")
  done

  if (( ${#missing[@]} == 0 )); then
    echo "deps: system packages present"
    return 0
  fi
  if (( CHECK_ONLY )); then
    echo "deps: missing system packages: ${missing[*]}"
    status=1
    return 0
  fi
  if (( EUID != 0 )); then
    echo "deps: missing system packages: ${missing[*]}"
    echo "deps: install them with: sudo apt-get install -y --no-install-recommends ${missing[*]}"
    echo "deps: (or, if environment modules provide them: MLPSCALE_DEPS_PROBE=1 make deps)"
    exit 1
  fi
  echo "deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get update -qq </dev/null \
     || ! apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null; then
    echo "deps: apt-get could not install: ${missing[*]}" >&2
    exit 1
  fi
  echo "deps: installed ${missing[*]}"
}

# ---------------------------------------------------------------- elsewhere: probe what the build uses
probe_cxx() {
  if [[ -n ${CXX:-} ]]; then echo "$CXX"
  elif command -v c++ >/dev/null 2>&1; then echo c++
  else echo "${MPICXX:-mpicxx}"
  fi
}

# True if the header is found with CPPFLAGS, the given extra flags and the compiler's own paths.
have_header() {
  local header=$1; shift
  # shellcheck disable=SC2086  # CPPFLAGS holds several flags
  echo "#include <$header>" | "$PROBE_CXX" -E -x c++ - ${CPPFLAGS:-} "$@" -o /dev/null >/dev/null 2>&1
}

pkg_cflags() { pkg-config --cflags "$1" 2>/dev/null || true; }

probe_system() {
  local missing=() mpicxx=${MPICXX:-mpicxx} prefix
  PROBE_CXX=$(probe_cxx)

  command -v "$mpicxx" >/dev/null 2>&1 \
    || missing+=("MPI: no '$mpicxx' on PATH (load an MPI module or set MPICXX=/path/to/mpicxx)")
  if ! command -v "$PROBE_CXX" >/dev/null 2>&1; then
    missing+=("C++ compiler: no '$PROBE_CXX' on PATH (set CXX or load a compiler module)")
  fi

  prefix=${HDF5_DIR:-${HDF5_ROOT:-${HDF5_HOME:-}}}
  if [[ -n $prefix ]]; then
    [[ -f $prefix/include/hdf5.h ]] || missing+=("HDF5: no hdf5.h in $prefix/include (from HDF5_DIR/HDF5_ROOT)")
  elif ! command -v h5cc >/dev/null 2>&1 && ! pkg-config --exists hdf5 2>/dev/null \
       && ! have_header hdf5.h; then
    missing+=("HDF5: not found (load an HDF5 module, set HDF5_DIR=<prefix>, or put h5cc on PATH)")
  fi

  prefix=${OPENBLAS_DIR:-${OPENBLAS_ROOT:-${OPENBLAS_HOME:-}}}
  if [[ -n $prefix ]]; then
    [[ -f $prefix/include/cblas.h ]] || missing+=("OpenBLAS: no cblas.h in $prefix/include (from OPENBLAS_DIR/OPENBLAS_ROOT)")
  elif ! pkg-config --exists openblas 2>/dev/null && ! have_header cblas.h; then
    missing+=("OpenBLAS: not found (load an OpenBLAS module or set OPENBLAS_DIR=<prefix>)")
  fi

  if command -v "$PROBE_CXX" >/dev/null 2>&1; then
    # shellcheck disable=SC2046,SC2086  # flags are word lists
    {
      have_header nlohmann/json.hpp ${JSON_CFLAGS:-} $(pkg_cflags nlohmann_json) \
        || missing+=("nlohmann-json: no nlohmann/json.hpp (set CPPFLAGS=-I<dir> or JSON_CFLAGS)")
      have_header CLI/CLI.hpp ${CLI11_CFLAGS:-} $(pkg_cflags CLI11) \
        || missing+=("CLI11: no CLI/CLI.hpp (set CPPFLAGS=-I<dir> or CLI11_CFLAGS)")
      have_header zlib.h $(pkg_cflags zlib) \
        || missing+=("zlib: no zlib.h (set CPPFLAGS=-I<dir>)")
      have_header gtest/gtest.h $(pkg_cflags gtest) \
        || missing+=("GoogleTest: no gtest/gtest.h (set CPPFLAGS=-I<dir> and GTEST_LIBS)")
      have_header benchmark/benchmark.h $(pkg_cflags benchmark) \
        || missing+=("Google Benchmark: no benchmark/benchmark.h (set CPPFLAGS=-I<dir> and BENCHMARK_LIBS)")
    }
  fi
  if (( ! VENV_READY )) && ! python_can_make_venv; then
    missing+=("Python: '$PYTHON' cannot create a virtual environment (need Python 3 with venv and ensurepip; set PYTHON=)")
  fi

  if (( ${#missing[@]} == 0 )); then
    echo "deps: build tools and headers found"
    return 0
  fi
  local line
  for line in "${missing[@]}"; do echo "deps: missing $line"; done
  status=1
}

# ---------------------------------------------------------------- Python analysis packages
python_packages() {
  if (( VENV_READY )); then
    echo "deps: python packages present in $VENV"
    return 0
  fi
  if (( CHECK_ONLY )); then
    echo "deps: $VENV lacks the analysis packages ($REQUIREMENTS)"
    status=1
    return 0
  fi
  if ! { [[ -x $VENV/bin/python ]] && "$VENV/bin/python" -c '' >/dev/null 2>&1; }; then
    # Missing, or broken (e.g. its interpreter moved): make it afresh.
    if ! "$PYTHON" -m venv --clear "$VENV" </dev/null; then
      echo "deps: '$PYTHON -m venv $VENV' failed (see above; on Debian/Ubuntu python3-venv provides venv)" >&2
      exit 1
    fi
  fi
  if ! "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$REQUIREMENTS" </dev/null; then
    echo "deps: pip could not install $REQUIREMENTS into $VENV (is PyPI reachable?)" >&2
    exit 1
  fi
  if ! venv_ready; then
    echo "deps: $VENV still cannot '$PY_IMPORTS' after pip install" >&2
    exit 1
  fi
  echo "deps: installed python packages into $VENV ($REQUIREMENTS)"
}

if [[ -f /etc/debian_version && -z ${MLPSCALE_DEPS_PROBE:-} ]] && command -v dpkg-query >/dev/null 2>&1; then
  apt_packages
else
  probe_system
fi
# Without the system part (python3-venv may be among it) the venv cannot be made; say so once.
if (( status != 0 && ! CHECK_ONLY )); then exit "$status"; fi
python_packages
exit "$status"
