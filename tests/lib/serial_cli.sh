# Helpers of tests/cli_tests.sh (sourced after tests/lib/harness.sh, with $serial set): the tiny
# run's arguments, refusals, IDX files, result-file checks and good runs of bin/serial.
# The tiny run as args=(...); any option the caller gives itself replaces the tiny one, and
# "--without OPTION" drops one (so a config file can set it).
tiny_args() {
  local -a tiny=(--hidden 16 --layers 1 --image-size 8 --iters 4 --warmup 1 --print-every 0
                 --eval-samples 64)
  local -a given=() drop=()
  while (($# > 0)); do
    if [[ $1 == --without ]]; then
      drop+=("$2")
      shift 2
    else
      given+=("$1")
      shift
    fi
  done
  local i option
  args=()
  for ((i = 0; i < ${#tiny[@]}; i += 2)); do
    for option in "${given[@]}" "${drop[@]}"; do [[ $option == "${tiny[i]}" ]] && continue 2; done
    args+=("${tiny[i]}" "${tiny[i + 1]}")
  done
  args+=("${given[@]}")
}

# Runs a command in the empty directory $tmp/run; sets rc, stdout/stderr in $tmp/stdout, stderr.
run_in_empty_dir() {
  rm -rf "$tmp/run"
  mkdir "$tmp/run"
  (cd "$tmp/run" && timeout 60 "$@" >"$tmp/stdout" 2>"$tmp/stderr")
  rc=$?
  ((rc == 124)) && problem "timed out after 60 s"
}
line_count() { grep -c '' "$1"; }
first_line() { head -n 1 "$1"; }

# expect_input_error NAME PATTERN ARGS...: bin/serial on the tiny run plus ARGS fails with status
# 2, one stderr line "serial: error: ..." matching PATTERN (extended regex, any case), an empty stdout and no file written.
expect_input_error() {
  local name=$1 pattern=$2
  shift 2
  tiny_args "$@"
  run_in_empty_dir "$serial" "${args[@]}" --out "$tmp/run/x.h5"
  ((rc == 2)) || problem "exit status $rc, expected 2"
  local lines
  lines=$(line_count "$tmp/stderr")
  ((lines == 1)) || problem "$lines stderr lines, expected 1: $(head -c 300 "$tmp/stderr" | tr '\n' '|')"
  grep -q '^serial: error: ' "$tmp/stderr" ||
    problem "stderr does not start with 'serial: error: ': $(first_line "$tmp/stderr")"
  grep -qiE -- "$pattern" "$tmp/stderr" ||
    problem "stderr does not match '$pattern': $(first_line "$tmp/stderr")"
  [[ -s $tmp/stdout ]] && problem "stdout not empty: $(head -c 300 "$tmp/stdout" | tr '\n' '|')"
  local left
  left=$(cd "$tmp/run" && find . -mindepth 1 | tr '\n' ' ')
  [[ -n $left ]] && problem "files left behind: $left"
  report "$name"
}

# A big-endian 32-bit integer as 4 raw bytes.
be32() {
  local n=$1 format
  printf -v format '\\x%02x\\x%02x\\x%02x\\x%02x' $((n >> 24 & 255)) $((n >> 16 & 255)) \
    $((n >> 8 & 255)) $((n & 255))
  printf '%b' "$format"
}
# N raw bytes: byte i is (i * STEP + i / 7) mod MODULUS (pixels: 256, labels: 10).
pattern_bytes() {
  local count=$1 step=$2 modulus=$3 i hex format=''
  for ((i = 0; i < count; i++)); do
    printf -v hex '\\x%02x' $(((i * step + i / 7) % modulus))
    format+=$hex
  done
  printf '%b' "$format"
}
# write_idx_dir DIR TRAIN TEST SIDE [TRAIN_IMAGES_MAGIC]: an MNIST-layout directory of raw files.
write_idx_dir() {
  local dir=$1 train=$2 test=$3 side=$4 magic=${5:-$((0x803))}
  mkdir -p "$dir"
  { be32 "$magic"; be32 "$train"; be32 "$side"; be32 "$side"; pattern_bytes $((train * side * side)) 37 256; } \
    >"$dir/train-images-idx3-ubyte"
  { be32 $((0x801)); be32 "$train"; pattern_bytes "$train" 3 10; } >"$dir/train-labels-idx1-ubyte"
  { be32 $((0x803)); be32 "$test"; be32 "$side"; be32 "$side"; pattern_bytes $((test * side * side)) 53 256; } \
    >"$dir/t10k-images-idx3-ubyte"
  { be32 $((0x801)); be32 "$test"; pattern_bytes "$test" 7 10; } >"$dir/t10k-labels-idx1-ubyte"
}

# check_result NAME FILE ITERATIONS EXPECTATIONS...: the result file's contents, as its own check.
check_result() {
  local name=$1
  shift
  check_result_file "$name" tests/check_serial_result.py "$@"
}

# expect_run NAME OUT ARGS...: a good tiny run with --out OUT (inside $tmp/run) exits 0 and
# writes OUT with no temporary file left.
expect_run() {
  local name=$1 out=$2
  shift 2
  tiny_args "$@"
  run_in_empty_dir "$serial" "${args[@]}" --out "$tmp/run/$out"
  ((rc == 0)) || problem "exit status $rc: $(head -c 300 "$tmp/stderr" | tr '\n' '|')"
  [[ -f $tmp/run/$out ]] || problem "no result file $out"
  local temps
  temps=$(cd "$tmp/run" && find . -name '*.tmp.*' | tr '\n' ' ')
  [[ -n $temps ]] && problem "temporary files left: $temps"
  report "$name"
}

# Parameters of FC_Net: embed S²→H, L blocks, classifier H→10 (src/model/model_config.h).
parameters() {
  local side=$1 hidden=$2 layers=$3 block=$4 ffn=$((4 * $2)) per_block
  if [[ $block == plain ]]; then
    per_block=$((hidden * hidden + hidden))
  else
    per_block=$((2 * hidden + hidden * ffn + ffn + ffn * hidden + hidden))
  fi
  echo $((side * side * hidden + hidden + layers * per_block + hidden * 10 + 10))
}
