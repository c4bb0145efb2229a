#!/usr/bin/env bash
# Command-line tests of bin/serial: every bad input is exit status 2 with one stderr line naming
# the problem, nothing on stdout and no result file left behind; good runs write a result file
# that follows results/README.md. Prints "ok - NAME" / "not ok - NAME: WHY" / "skip - NAME: WHY"
# per check and ends with "N passed, N failed" (tests/run_all.sh parses it); exits non-zero if
# any check failed. Tiny models keep the whole file to a few seconds.
source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"

serial=$repo/bin/serial
fashion_mnist=/usr/share/datasets/fashion-mnist
mkdir -p "$tmp/in"

if [[ ! -x $serial ]]; then
  problem "$serial not found (run 'make bin/serial' first)"
  report "bin/serial exists"
  finish
fi

source "$(dirname "${BASH_SOURCE[0]}")/lib/serial_cli.sh"

# --- bad options -------------------------------------------------------------------------------
expect_input_error "unknown option" "--no-such-option" --no-such-option 3
expect_input_error "non-numeric --hidden" "--hidden" --hidden abc
expect_input_error "--batch 0" "--batch" --batch 0
expect_input_error "negative --hidden" "--hidden" --hidden -3
expect_input_error "fractional --layers" "--layers" --layers 1.5
expect_input_error "bad --precision" "--precision" --precision fp8
expect_input_error "bad --device" "--device" --device tpu
expect_input_error "bad --math" "--math" --math fp8
# Input files that are not files: one line, never an open that blocks (a FIFO) or a stream error.
mkfifo "$tmp/input-fifo"
expect_input_error "--config naming a FIFO" "--config: .* is a FIFO, not a file to read" \
  --config "$tmp/input-fifo"
expect_input_error "--config naming a directory" "is a directory, not a file to read" --config "$tmp"
expect_input_error "--machine naming a FIFO" "--machine .* is a FIFO, not a file to read" \
  --machine "$tmp/input-fifo"
expect_input_error "--machine naming a directory" "--machine .* is a directory" --machine "$tmp"
expect_input_error "--math tf32 with bf16" "--math tf32 applies to fp32" --math tf32 --precision bf16
expect_input_error "--math tf32 on the CPU backend" "--math tf32 needs the CUDA backend" \
  --math tf32 --device cpu
expect_input_error "bad --block" "--block" --block conv
expect_input_error "bad --optimizer" "--optimizer" --optimizer rmsprop
expect_input_error "--lr 0" "--lr" --lr 0
expect_input_error "non-numeric --lr" "--lr" --lr fast
expect_input_error "--lr inf" "--lr.*finite decimal" --lr inf
expect_input_error "--lr nan" "--lr.*finite decimal" --lr nan
expect_input_error "hexadecimal --lr" "--lr.*finite decimal" --lr 0x10
expect_input_error "--warmup equal to --iters" "--warmup" --iters 4 --warmup 4
expect_input_error "--warmup beyond --iters" "--warmup" --iters 3 --warmup 5
expect_input_error "--epochs 0 --iters 0" "--epochs" --epochs 0 --iters 0
# The batch check must come before anything is sized by the batch.
expect_input_error "--batch beyond the synthetic training split" "--batch" --batch 1099511627776

# --- config files ------------------------------------------------------------------------------
printf '{"batch": 8,\n' >"$tmp/in/truncated.json"
printf '{"hiden": 16}\n' >"$tmp/in/unknown_key.json"
printf '{"batch": {"value": 8}}\n' >"$tmp/in/object_value.json"
printf '[{"batch": 8}]\n' >"$tmp/in/array.json"
printf '{"batch": "eight"}\n' >"$tmp/in/string_batch.json"
printf '{"batch": 0}\n' >"$tmp/in/zero_batch.json"
printf '{"hidden": 1e400}\n' >"$tmp/in/overflow.json"
expect_input_error "config that is not valid JSON" "truncated.json" --config "$tmp/in/truncated.json"
expect_input_error "config with an unknown key" "unknown_key\.json.*hiden" --config "$tmp/in/unknown_key.json"
expect_input_error "config with an object value" "batch" --config "$tmp/in/object_value.json"
expect_input_error "config that is not an object" "array.json" --config "$tmp/in/array.json"
expect_input_error "config with a non-numeric value" "batch" --config "$tmp/in/string_batch.json"
expect_input_error "config with an out-of-range value" "batch" --config "$tmp/in/zero_batch.json"
expect_input_error "config with a number JSON cannot hold" "overflow.json" --config "$tmp/in/overflow.json"
expect_input_error "missing config file" "no_such.json" --config "$tmp/in/no_such.json"

# --- data --------------------------------------------------------------------------------------
write_idx_dir "$tmp/in/idx8" 8 4 8
write_idx_dir "$tmp/in/bad_magic" 8 4 8 $((0x804))
write_idx_dir "$tmp/in/truncated_gz" 8 4 8
gzip -c "$tmp/in/truncated_gz/train-images-idx3-ubyte" >"$tmp/in/full.gz"
head -c $(($(wc -c <"$tmp/in/full.gz") / 2)) "$tmp/in/full.gz" \
  >"$tmp/in/truncated_gz/train-images-idx3-ubyte.gz"
rm "$tmp/in/truncated_gz/train-images-idx3-ubyte" "$tmp/in/full.gz"
# A .gz whose 8-byte trailer (CRC-32 and length) is cut off, and one with a wrong CRC: the data
# itself is whole in both.
write_idx_dir "$tmp/in/no_trailer_gz" 8 4 8
gzip -c "$tmp/in/no_trailer_gz/train-images-idx3-ubyte" >"$tmp/in/full.gz"
head -c $(($(wc -c <"$tmp/in/full.gz") - 8)) "$tmp/in/full.gz" \
  >"$tmp/in/no_trailer_gz/train-images-idx3-ubyte.gz"
write_idx_dir "$tmp/in/bad_crc_gz" 8 4 8
{ head -c $(($(wc -c <"$tmp/in/full.gz") - 8)) "$tmp/in/full.gz"; printf '\x00\x00\x00\x00'
  tail -c 4 "$tmp/in/full.gz"; } >"$tmp/in/bad_crc_gz/train-images-idx3-ubyte.gz"
rm "$tmp/in/no_trailer_gz/train-images-idx3-ubyte" "$tmp/in/bad_crc_gz/train-images-idx3-ubyte" \
  "$tmp/in/full.gz"
# A test split of 0 images.
write_idx_dir "$tmp/in/empty_test" 8 0 8
# An uncompressed file longer than its header says.
write_idx_dir "$tmp/in/long_idx" 8 4 8
printf 'x' >>"$tmp/in/long_idx/train-images-idx3-ubyte"
expect_input_error "--data bogus" "bogus" --data bogus
expect_input_error "--data idx: without a directory" "--data" --data idx:
expect_input_error "--data idx: missing directory" "$tmp/in/no_such_dir" --data "idx:$tmp/in/no_such_dir"
expect_input_error "--data idx: directory without files" "missing.*train-images" --data "idx:$tmp/in"
expect_input_error "IDX images file with a wrong magic number" "magic.*train-images-idx3-ubyte" \
  --data "idx:$tmp/in/bad_magic"
expect_input_error "truncated gzip IDX file" \
  "(truncated|end of file).*train-images-idx3-ubyte\.gz|train-images-idx3-ubyte\.gz.*(truncated|end of file)" \
  --data "idx:$tmp/in/truncated_gz"
expect_input_error "gzip IDX file without its trailer" "train-images-idx3-ubyte\.gz" \
  --data "idx:$tmp/in/no_trailer_gz"
expect_input_error "gzip IDX file with a wrong CRC" "train-images-idx3-ubyte\.gz" \
  --data "idx:$tmp/in/bad_crc_gz"
expect_input_error "IDX file longer than its header" "more bytes than its header" \
  --data "idx:$tmp/in/long_idx"
expect_input_error "IDX test split of 0 images" "t10k-images-idx3-ubyte holds no images" \
  --data "idx:$tmp/in/empty_test"
expect_input_error "--batch beyond an 8-sample training split" "--batch 16.* 8 " --data "idx:$tmp/in/idx8" --batch 16

# --- several ranks -----------------------------------------------------------------------------
if command -v mpiexec >/dev/null; then
  tiny_args
  run_in_empty_dir mpiexec -n 2 "$serial" "${args[@]}" --out "$tmp/run/x.h5"
  ((rc != 0 && rc != 124)) || problem "exit status $rc, expected a failure"
  lines=$(line_count "$tmp/stderr")
  ((lines == 2)) || problem "$lines stderr lines, expected one per rank: $(head -c 400 "$tmp/stderr" | tr '\n' '|')"
  for r in 0 1; do
    grep -q "(rank $r).*one rank" "$tmp/stderr" || problem "no line from rank $r naming the rank count"
  done
  [[ -s $tmp/stdout ]] && problem "stdout not empty: $(head -c 300 "$tmp/stdout" | tr '\n' '|')"
  [[ -n $(find "$tmp/run" -mindepth 1) ]] && problem "files left behind"
  report "mpiexec -n 2 bin/serial refuses, one line per rank"
else
  skip "mpiexec -n 2 bin/serial refuses, one line per rank" "mpiexec not found"
fi

# --- help --------------------------------------------------------------------------------------
run_in_empty_dir "$serial" --help
((rc == 0)) || problem "exit status $rc"
[[ -s $tmp/stderr ]] && problem "stderr not empty: $(first_line "$tmp/stderr")"
declared=$(grep -oE '(add_option|add_flag|set_config)\("--[a-z0-9-]+"' src/options/options.cpp | grep -oE -- '--[a-z0-9-]+')
[[ -n $declared ]] || problem "found no options in src/options/options.cpp"
for option in --layers --hidden --batch --verify --config --data --device --precision --out \
  --fused-update $declared; do
  grep -qE -- "(^|[ ,])$option([ =]|$)" "$tmp/stdout" || problem "--help does not mention $option"
done
[[ -n $(find "$tmp/run" -mindepth 1) ]] && problem "--help left files behind"
report "--help lists every option"

# --prefetch: a bad value is refused; on (a loader thread) and off (loading in the data phase)
# train the same losses, and the header and the result file say which ran.
expect_input_error "bad --prefetch" "--prefetch" --prefetch sometimes
for mode in on off; do
  tiny_args --prefetch "$mode"
  run_in_empty_dir "$serial" "${args[@]}" --out "$tmp/prefetch-$mode.h5"
  ((rc == 0)) || problem "--prefetch $mode: exit status $rc: $(first_line "$tmp/stderr")"
done
grep -q 'loaded in the data phase (--prefetch off)' "$tmp/stdout" ||
  problem "header: $(grep '  data ' "$tmp/stdout")"
"$python" - "$tmp/prefetch-on.h5" "$tmp/prefetch-off.h5" <<'EOF2' || problem "see above"
import sys, h5py, numpy as np
on, off = (h5py.File(path, "r") for path in sys.argv[1:])
if (on.attrs["prefetch"], off.attrs["prefetch"]) != (1, 0):
    sys.exit(f"prefetch attributes {on.attrs['prefetch']}, {off.attrs['prefetch']}, expected 1, 0")
if not np.array_equal(on["train/loss"][:], off["train/loss"][:]):
    sys.exit(f"losses differ: {on['train/loss'][:]} against {off['train/loss'][:]}")
EOF2
report "--prefetch on and off train the same losses"

# --- good runs ---------------------------------------------------------------------------------
expect_run "tiny run" r.h5
check_result "tiny run" "$tmp/run/r.h5" 4 config.hidden=16 config.layers=1 attr.precision=fp32 \
  attr.warmup_iterations=1 attr.parameters="$(parameters 8 16 1 mlp)"

printf '{"hidden": 16, "layers": 3, "image-size": 8}\n' >"$tmp/in/small.json"
expect_run "config file with a command-line override" c.h5 --without --hidden \
  --without --image-size --config "$tmp/in/small.json" --layers 2
check_result "config file with a command-line override" "$tmp/run/c.h5" 4 config.hidden=16 \
  config.layers=2 config.image-size=8 attr.parameters="$(parameters 8 16 2 mlp)"

expect_run "inputs/tutorial.json with tiny overrides" t.h5 --config "$repo/inputs/tutorial.json"
check_result "inputs/tutorial.json with tiny overrides" "$tmp/run/t.h5" 4 config.epochs=2 \
  config.hidden=16 config.batch=32 config.ffn-mult=4 config.optimizer=adam config.block=mlp \
  config.lr=0.001

expect_run "plain blocks with SGD" p.h5 --block plain --optimizer sgd
check_result "plain blocks with SGD" "$tmp/run/p.h5" 4 config.block=plain config.optimizer=sgd \
  attr.parameters="$(parameters 8 16 1 plain)"

for precision in fp64 fp32; do
  expect_run "--verify on a tiny $precision run" v.h5 --precision "$precision" --verify
  grep -q 'verify: PASS' "$tmp/stdout" || problem "no 'verify: PASS' line: $(grep verify: "$tmp/stdout" | tail -n 1)"
  report "--verify on a tiny $precision run passes"
done

# --fused-update (the weight update fused into backward) is stated, and its fp64 --verify against
# the unfused reference passes; it is off by default and refused with 16-bit storage.
fused_line='weights updated during backward'
expect_run "--fused-update, fp64 --verify" u.h5 --fused-update --precision fp64 --verify
grep -q "$fused_line" "$tmp/stdout" || problem "no line stating the fused update"
grep -q 'verify: PASS' "$tmp/stdout" || problem "no 'verify: PASS' line"
report "--fused-update is stated and its fp64 --verify passes"
expect_run "default run" o.h5
grep -q "$fused_line" "$tmp/stdout" && problem "the fused update is stated"
report "the update is not fused by default"
expect_input_error "--fused-update with bf16" "--fused-update needs the CPU backend" \
  --fused-update --precision bf16

expect_run "tiny run on a crafted 8-sample IDX directory" i.h5 --data "idx:$tmp/in/idx8" --batch 4
check_result "tiny run on a crafted 8-sample IDX directory" "$tmp/run/i.h5" 4 \
  attr.data="idx:$tmp/in/idx8" config.batch=4

if [[ -d $fashion_mnist ]]; then
  expect_run "Fashion-MNIST at 28x28" f.h5 --data "idx:$fashion_mnist" --image-size 28 --iters 3
  check_result "Fashion-MNIST at 28x28" "$tmp/run/f.h5" 3 attr.data="idx:$fashion_mnist" \
    config.image-size=28
else
  skip "Fashion-MNIST at 28x28" "$fashion_mnist not present"
fi

# Without --out the file goes to results/serial-*.h5 under the working directory.
tiny_args
run_in_empty_dir "$serial" "${args[@]}"
((rc == 0)) || problem "exit status $rc: $(first_line "$tmp/stderr")"
shopt -s nullglob
defaults=("$tmp"/run/results/serial-*.h5)
shopt -u nullglob
((${#defaults[@]} == 1)) || problem "${#defaults[@]} files results/serial-*.h5, expected 1"
grep -q '^results: results/serial-.*\.h5$' "$tmp/stdout" || problem "no 'results: results/serial-...' line"
report "default result path results/serial-*.h5"
((${#defaults[@]} == 1)) && check_result "default result path" "${defaults[0]}" 4 config.hidden=16

# --- stops and failures while the result is written: nothing partial, nothing temporary ---------
files_in() { (cd "$1" && find . -mindepth 1 | tr '\n' ' '); }

# --out naming an existing directory is refused before training.
mkdir -p "$tmp/outdir"
tiny_args
run_in_empty_dir "$serial" "${args[@]}" --out "$tmp/outdir"
((rc == 2)) || problem "exit status $rc, expected 2"
grep -q 'is a directory' "$tmp/stderr" || problem "stderr: $(first_line "$tmp/stderr")"
(($(line_count "$tmp/stderr") == 1)) || problem "$(line_count "$tmp/stderr") stderr lines"
[[ -z $(files_in "$tmp/outdir") ]] || problem "written into the directory: $(files_in "$tmp/outdir")"
report "--out naming an existing directory"

# An output path naming a FIFO or a device is refused before any work and left as it was:
# publishing unlinks what it replaces, which as root would destroy a device such as /dev/full.
# The device is made here with mknod (root only), never /dev's own.
mkdir -p "$tmp/nodes"
mkfifo "$tmp/nodes/fifo"
have_device=0
mknod "$tmp/nodes/full" c 1 7 2>/dev/null && have_device=1
# expect_target_refused NAME PATTERN NODE-TEST COMMAND...: exit 2, one stderr line naming
# PATTERN, and the node still what NODE-TEST ([[ -p ]] or [[ -c ]]) says.
expect_target_refused() {
  local name=$1 pattern=$2 node_test=$3 node=$4
  shift 4
  run_in_empty_dir "$@"
  ((rc == 2)) || problem "exit status $rc, expected 2"
  (($(line_count "$tmp/stderr") == 1)) || problem "$(line_count "$tmp/stderr") stderr lines: $(head -c 300 "$tmp/stderr" | tr '\n' '|')"
  grep -q -- "$pattern" "$tmp/stderr" || problem "stderr: $(first_line "$tmp/stderr")"
  test "$node_test" "$node" || problem "$node is no longer what it was: $(ls -l "$node" 2>&1)"
  report "$name is refused and left as it was"
}
tiny_args
plan_calibrate=(--kernels "$tmp/none.json" --comm-bench "$tmp/none.h5")
for kind in fifo full; do
  node=$tmp/nodes/$kind
  if [[ $kind == fifo ]]; then
    what="is a FIFO" node_test=-p label=FIFO
  elif ((have_device)); then
    what="is a character device" node_test=-c label="character device"
  else
    skip "output paths naming a device" "mknod is not allowed here (not root): no device to test with"
    continue
  fi
  expect_target_refused "--out naming a $label" "--out $node $what" "$node_test" "$node" \
    "$serial" "${args[@]}" --out "$node"
  expect_target_refused "--trace naming a $label" "--trace $node $what" "$node_test" "$node" \
    "$serial" "${args[@]}" --out "$tmp/traced.h5" --trace "$node"
  expect_target_refused "bench_comm --out naming a $label" "$what" "$node_test" "$node" \
    "$repo/bin/bench_comm" -e 1K -n 1 --out "$node"
  expect_target_refused "plan --json naming a $label" "--json $node $what" "$node_test" "$node" \
    "$repo/bin/plan" --world 2 --machine "$repo/inputs/machines/h100-cluster.json" --json "$node"
  expect_target_refused "plan --calibrate naming a $label" "--calibrate $node $what" "$node_test" \
    "$node" "$repo/bin/plan" --calibrate "$node" "${plan_calibrate[@]}"
done

# bin/bench_floor reads bench_kernels' JSON: a directory there is one line, exit 2.
run_in_empty_dir "$repo/bin/bench_floor" --kernels "$tmp/outdir" --hidden 16 --layers 1 \
  --image-size 8 --iters 4 --warmup 1
((rc == 2)) || problem "exit status $rc, expected 2"
(($(line_count "$tmp/stderr") == 1)) || problem "$(line_count "$tmp/stderr") stderr lines: $(head -c 300 "$tmp/stderr" | tr '\n' '|')"
grep -q "cannot read a file there" "$tmp/stderr" || problem "stderr: $(first_line "$tmp/stderr")"
report "bench_floor --kernels naming a directory"

# bench_kernels, then bench_floor on its rates at a tiny model: every phase beside its floor, the
# step's ratio, the optimizer's bandwidth, and Adam beside its single-thread reference loop.
floor_model=(--hidden 16 --layers 1 --image-size 8 --batch 4)
run_in_empty_dir "$repo/bin/bench_kernels" "${floor_model[@]}" --benchmark_min_time=0.01 \
  --benchmark_out="$tmp/kernels.json" --benchmark_out_format=json
((rc == 0)) || problem "bench_kernels: exit status $rc: $(first_line "$tmp/stderr")"
run_in_empty_dir "$repo/bin/bench_floor" --kernels "$tmp/kernels.json" "${floor_model[@]}" \
  --iters 4 --warmup 1 --print-every 0 --out "$tmp/floor.h5"
((rc == 0)) || problem "bench_floor: exit status $rc: $(first_line "$tmp/stderr")"
for phase in forward backward optimizer data step; do
  grep -Eq "^  $phase +[0-9]+\.[0-9]+ +[0-9]+\.[0-9]+ " "$tmp/stdout" || problem "no $phase row"
done
grep -Eq '^  optimizer +[0-9.]+ GB/s = [0-9]+% of the all-core copy' "$tmp/stdout" ||
  problem "no optimizer bandwidth line"
grep -Eq '^  adam +[0-9.]+ GB/s, single-thread reference loop [0-9.]+ GB/s' "$tmp/stdout" ||
  problem "no Adam against its reference"
report "bench_floor prints each phase beside its floor"

# bin/bench_kernels checks the Google Benchmark flags that library would accept and mishandle.
for bad in "--benchmark_filter=[:not a regular expression" \
           "--benchmark_repetitions=-3:must be a positive integer"; do
  run_in_empty_dir "$repo/bin/bench_kernels" "${bad%%:*}" --hidden 8 --layers 1 --image-size 4 \
    --batch 2
  ((rc == 2)) || problem "exit status $rc, expected 2"
  (($(line_count "$tmp/stderr") == 1)) || problem "$(line_count "$tmp/stderr") stderr lines: $(head -c 300 "$tmp/stderr" | tr '\n' '|')"
  grep -q -- "${bad#*:}" "$tmp/stderr" || problem "stderr: $(first_line "$tmp/stderr")"
  [[ -s $tmp/stdout ]] && problem "benchmarks ran: $(head -c 200 "$tmp/stdout" | tr '\n' '|')"
  report "bench_kernels ${bad%%:*}"
done

# SIGKILL while the finished image waits to be linked into place (held there for 20 s on
# purpose): the unnamed file is open (/proc/PID/fd shows it deleted), and killing the writer then
# leaves no file at all in the result directory.
rm -rf "$tmp/killed" && mkdir "$tmp/killed"
if ! "$python" -c 'import os, sys; os.close(os.open(sys.argv[1], os.O_TMPFILE | os.O_WRONLY))' \
     "$tmp/killed" 2>/dev/null; then
  skip "SIGKILL during the result write leaves nothing" \
    "this file system has no O_TMPFILE (a SIGKILL can leave <out>.tmp.<pid> there)"
else
  tiny_args
  MLPSCALE_TEST_PUBLISH_DELAY_MS=20000 "$serial" "${args[@]}" --out "$tmp/killed/k.h5" \
    >"$tmp/stdout" 2>"$tmp/stderr" &
  writer=$!
  held=0
  for _ in $(seq 1 300); do
    if ls -l "/proc/$writer/fd" 2>/dev/null | grep -q "$tmp/killed/.*(deleted)"; then
      held=1
      break
    fi
    sleep 0.1
  done
  kill -KILL "$writer" 2>/dev/null
  wait "$writer" 2>/dev/null
  ((held)) || problem "the writer never held an unnamed file in $tmp/killed"
  [[ -z $(files_in "$tmp/killed") ]] || problem "left behind: $(files_in "$tmp/killed")"
  report "SIGKILL during the result write leaves nothing"
fi

# SIGTERM mid-run: one line, the conventional status 128 + 15, no file.
rm -rf "$tmp/stopped" && mkdir "$tmp/stopped"
tiny_args --iters 1000000
"$serial" "${args[@]}" --out "$tmp/stopped/s.h5" >"$tmp/stdout" 2>"$tmp/stderr" &
writer=$!
sleep 2
kill -TERM "$writer"
wait "$writer"
rc=$?
((rc == 143)) || problem "exit status $rc, expected 143"
[[ $(cat "$tmp/stderr") == "serial: stopped by SIGTERM" ]] ||
  problem "stderr: $(head -c 300 "$tmp/stderr" | tr '\n' '|')"
[[ -z $(files_in "$tmp/stopped") ]] || problem "left behind: $(files_in "$tmp/stopped")"
report "SIGTERM mid-run"

# A full disk at the write (a 64 KiB tmpfs, which needs root): one line, no crash, nothing left.
full=$tmp/full
mkdir -p "$full"
if ((EUID == 0)) && mount -t tmpfs -o size=64k mlpscale-full "$full" 2>/dev/null; then
  head -c 60000 /dev/zero >"$full/filler" 2>/dev/null
  tiny_args
  run_in_empty_dir "$serial" "${args[@]}" --out "$full/f.h5"
  ((rc == 1)) || problem "exit status $rc, expected 1"
  (($(line_count "$tmp/stderr") == 1)) || problem "$(line_count "$tmp/stderr") stderr lines: $(head -c 300 "$tmp/stderr" | tr '\n' '|')"
  grep -q 'No space left on device' "$tmp/stderr" || problem "stderr: $(first_line "$tmp/stderr")"
  [[ $(files_in "$full") == "./filler " ]] || problem "left behind: $(files_in "$full")"
  report "a full disk at the result write"
  umount "$full"
else
  skip "a full disk at the result write" "mounting a small tmpfs needs root"
fi

# Smaller refusals: each one line "<program>: error: ...", exit 2, nothing written.
tiny_args
expect_refusal "pipeline --partition ''" 1 "pipeline: error: --partition: must not be empty" \
  bin/pipeline "${args[@]}" --partition '' --out "$tmp/refused.h5"
expect_refusal "bench_floor --out ''" 1 "bench_floor: error: --out '': name the result file" \
  bin/bench_floor "${args[@]}" --out ''
expect_refusal "bench_floor --machine (it predicts nothing)" 1 "bench_floor: error: --machine" \
  bin/bench_floor "${args[@]}" --machine "$tmp/absent.json" --out "$tmp/refused.h5"
expect_refusal "bench_kernels with an unknown option" 1 "bench_kernels: error: unknown option" \
  bin/bench_kernels --no-such-option

finish
