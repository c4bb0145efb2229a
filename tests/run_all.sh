#!/usr/bin/env bash
# Runs every test suite after the build (`make test` calls it): the GoogleTest binary, then the
# command-line tests if present. Each suite's output stays visible; the last line sums them as
# "N passed, N failed". Exits non-zero if any test failed or a suite ended without its summary.
# Extra arguments go to bin/unit_tests (e.g. --gtest_filter=Adam*).
set -u -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1

UNIT_TESTS=bin/unit_tests
CLI_TESTS=tests/cli_tests.sh
passed=0
failed=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# Output without colour codes, so the summary lines parse whatever GTEST_COLOR says.
plain() { sed 's/\x1b\[[0-9;]*m//g' "$log"; }

# $1: the suite's name, $2: its exit status, $3/$4: the counts parsed from its summary ("" if none).
add_suite() {
  local name=$1 rc=$2 npass=$3 nfail=$4
  if [[ -z $npass && -z $nfail ]]; then
    echo "$name: no summary line (exit status $rc): counted as 1 failed"
    failed=$((failed + 1))
    return
  fi
  npass=${npass:-0}
  nfail=${nfail:-0}
  if (( rc != 0 && nfail == 0 )); then
    echo "$name: exit status $rc with no failed test reported: counted as 1 failed"
    nfail=1
  fi
  passed=$((passed + npass))
  failed=$((failed + nfail))
}

echo "=== unit tests: $UNIT_TESTS${*:+ $*}"
if [[ -x $UNIT_TESTS ]]; then
  "$UNIT_TESTS" "$@" 2>&1 | tee "$log"
  rc=$?
  # GoogleTest's summary: "[  PASSED  ] 12 tests." and "[  FAILED  ] 2 tests, listed below:".
  npass=$(plain | sed -nE 's/^\[  PASSED  \] ([0-9]+) tests?\..*/\1/p' | tail -n1)
  nfail=$(plain | sed -nE 's/^\[  FAILED  \] ([0-9]+) tests?, listed below.*/\1/p' | tail -n1)
  nskip=$(plain | sed -nE 's/^\[  SKIPPED \] ([0-9]+) tests?, listed below.*/\1/p' | tail -n1)
  [[ -n $nskip ]] && echo "unit tests: $nskip skipped (listed above)"
  add_suite "unit tests" "$rc" "$npass" "$nfail"
else
  echo "unit tests: $UNIT_TESTS not found (run 'make' first): counted as 1 failed"
  failed=$((failed + 1))
fi

echo "=== command-line tests: $CLI_TESTS"
if [[ -f $CLI_TESTS ]]; then
  bash "$CLI_TESTS" 2>&1 | tee "$log"
  rc=$?
  counts=$(plain | sed -nE 's/.*\b([0-9]+) passed, ([0-9]+) failed.*/\1 \2/p' | tail -n1)
  add_suite "command-line tests" "$rc" "${counts% *}" "${counts#* }"
else
  echo "command-line tests: $CLI_TESTS not present, none run"
fi

echo "=== all suites"
echo "$passed passed, $failed failed"
(( failed == 0 ))
