# The shell test suites' shared harness (source it): one "ok - NAME" / "not ok - NAME: WHY" /
# "skip - NAME: WHY" line per check and a closing "N passed, N failed" that tests/run_all.sh
# parses. Sourcing sets: repo (the checkout), python (its .venv, else python3 on the PATH: a GPU
# node running a build made elsewhere has no .venv), have_h5py (1 when that python
# imports h5py, else 0), tmp (removed at exit), and OPENBLAS_NUM_THREADS=1 (ranks oversubscribe
# the cores).
set -u -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
repo=$PWD
python=$repo/.venv/bin/python3
[[ -x $python ]] || python=$(command -v python3 || echo python3)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OPENBLAS_NUM_THREADS=1
have_h5py=0
[[ -x $python ]] && "$python" -c 'import h5py' 2>/dev/null && have_h5py=1
passed=0
failed=0
skipped=0

ok() { echo "ok - $1"; passed=$((passed + 1)); }
not_ok() { echo "not ok - $1: $2"; failed=$((failed + 1)); }
# A skip says why, and is never counted as passed.
skip() { echo "skip - $1: $2"; skipped=$((skipped + 1)); }

# Checks that gather several findings: problem WHY... for each, then report NAME ("ok" when
# there were none, else one "not ok" line listing them).
problems=()
problem() { problems+=("$*"); }
report() {
  if ((${#problems[@]} == 0)); then
    ok "$1"
  else
    local why
    why=$(printf '; %s' "${problems[@]}")
    not_ok "$1" "${why:2}"
  fi
  problems=()
}

finish() {
  ((skipped > 0)) && echo "$skipped skipped (not counted as passed)"
  echo "$passed passed, $failed failed"
  ((failed == 0))
  exit
}

# expect_refusal NAME RANKS PATTERN COMMAND...: COMMAND (run under mpiexec -n RANKS, at most 60 s)
# must exit non-zero but not time out, print exactly one stderr line per rank, each naming
# PATTERN, and leave $tmp/refused.h5 (pass it as --out) absent.
expect_refusal() {
  local name=$1 ranks=$2 pattern=$3
  shift 3
  local status=0
  rm -f "$tmp/refused.h5"
  timeout 60 mpiexec -n "$ranks" "$@" >"$tmp/refusal.out" 2>"$tmp/refusal.err" || status=$?
  local lines named
  lines=$(grep -c . "$tmp/refusal.err")
  named=$(grep -c -F -- "$pattern" "$tmp/refusal.err")
  if ((status == 0 || status == 124)); then
    not_ok "$name" "exit status $status"
  elif ((lines != ranks || named != ranks)); then
    not_ok "$name" "expected $ranks lines naming '$pattern', got: $(head -c 600 "$tmp/refusal.err" | tr '\n' '|')"
  elif [[ -e $tmp/refused.h5 ]] || compgen -G "$tmp/refused.h5.*" >/dev/null; then
    not_ok "$name" "a result file or temporary was left at --out"
  else
    ok "$name is refused on every rank in one line"
  fi
}

# run_verified NAME SECONDS LOG RANKS COMMAND...: COMMAND under mpiexec -n RANKS (at most SECONDS),
# output in LOG, must exit 0 and print "verify: PASS"; else one "not ok - NAME" and false.
run_verified() {
  local name=$1 seconds=$2 log=$3 ranks=$4 status=0
  shift 4
  timeout "$seconds" mpiexec -n "$ranks" "$@" >"$log" 2>&1 || status=$?
  if ((status != 0)); then
    not_ok "$name" "exit status $status ($(tail -n 2 "$log" | tr '\n' ' '))"
    return 1
  fi
  if ! grep -q "verify: PASS" "$log"; then
    not_ok "$name" "$(grep 'verify:' "$log" | tail -n 1)"
    return 1
  fi
}
# The verify line's figure in LOG: "relative error 2.9e-16 at block0.norm.bias".
verify_figure() { grep -m 1 -o 'relative error [^ ]* at [^,]*' "$1"; }

# expect_output NAME COMMAND...: "ok - NAME: OUTPUT" when COMMAND (a checker printing one line)
# exits 0, else "not ok - NAME: OUTPUT".
expect_output() {
  local name=$1 why
  shift
  if why=$("$@"); then
    ok "$name: $why"
  else
    not_ok "$name" "$why"
  fi
}

# compare_checkpointing NAME CHECK SECONDS RANKS COMMAND...: COMMAND under mpiexec -n RANKS (at
# most SECONDS a run) without and with --checkpoint-activations, into $tmp/full.h5 and
# $tmp/checkpointed.h5, then tests/check_checkpointing.py CHECK (same-losses or lower-peak) on
# the two as the check NAME; skipped without h5py.
compare_checkpointing() {
  local name=$1 check=$2 seconds=$3 ranks=$4
  shift 4
  if ((!have_h5py)); then
    skip "$name" "h5py not available in .venv"
    return
  fi
  local status=0 mode extra
  for mode in full checkpointed; do
    extra=()
    [[ $mode == checkpointed ]] && extra=(--checkpoint-activations)
    rm -f "$tmp/$mode.h5"
    timeout "$seconds" mpiexec -n "$ranks" "$@" "${extra[@]}" --out "$tmp/$mode.h5" \
      >"$tmp/$mode.log" 2>&1 || status=$?
    if ((status != 0)); then
      not_ok "$name" "$mode run: exit status $status ($(tail -n 2 "$tmp/$mode.log" | tr '\n' ' '))"
      return
    fi
  done
  expect_output "$name" "$python" tests/check_checkpointing.py "$check" "$tmp/full.h5" \
    "$tmp/checkpointed.h5"
}

# check_result_file NAME CHECKER FILE ARGS...: the check "NAME (result file)": FILE was written and
# $python CHECKER FILE ARGS... exits 0 (else its output is the problem); skipped without h5py.
check_result_file() {
  local name="$1 (result file)" checker=$2 file=$3
  shift 3
  if ((!have_h5py)); then
    skip "$name" "h5py not available ($python)"
    return
  fi
  local out
  if [[ ! -f $file ]]; then
    problem "$file not written"
  elif ! out=$("$python" "$checker" "$file" "$@" 2>&1); then
    problem "$file: $out"
  fi
  report "$name"
}
