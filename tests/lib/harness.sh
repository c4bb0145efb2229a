# The shell test suites' shared harness (source it): one "ok - NAME" / "not ok - NAME: WHY" /
# "skip - NAME: WHY" line per check and a closing "N passed, N failed" that tests/run_all.sh
# parses. Sourcing sets: repo (the checkout), python (its .venv), tmp (removed at exit), and
# OPENBLAS_NUM_THREADS=1 (ranks oversubscribe the cores).
set -u -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
repo=$PWD
python=$repo/.venv/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OPENBLAS_NUM_THREADS=1
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
