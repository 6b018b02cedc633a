#!/usr/bin/env bash
# Replay overhead benchmark: the many_launches sample (many tiny kernels) run directly on a
# driver, versus `cusnap replay` of its capture on the same driver. Not a test.
#
#   bench/replay/run.sh [BUILD_DIR]          (default build/release)
#   LAUNCHES=20000 REPS=5 DRIVER=/usr/lib/x86_64-linux-gnu/libcuda.so.1 bench/replay/run.sh build
#
# DRIVER: the driver both runs use (default: the build's emulator). The capture is made once,
# through the interceptor on the same driver. Each configuration runs REPS times; the median wall
# time of the whole process is reported (start-up, module load and teardown included on both
# sides), plus the ratio replay / original. Replay runs use --no-timing --no-nvtx (pure replay;
# verification stays on) and, separately, the default timing to show its cost.
# Then the multi_stream sample (four streams joined by events; MULTI_SIZE elements, default
# 262144) captured once and replayed with --no-timing --no-nvtx, streams concurrent as captured
# (the default) versus --serialize (everything on one stream, in capture order).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$(cd "${1:-$root/build/release}" && pwd)"
launches="${LAUNCHES:-20000}"
reps="${REPS:-5}"
sample="$build/samples/bin/many_launches"
driver="${DRIVER:-$build/emulator/lib/libcuda.so.1}"
interceptor_dir="$build/interceptor/lib"
replay=()
if [[ -x "$build/bin/cusnap" ]] && "$build/bin/cusnap" --help 2>/dev/null | grep -q "^ *replay"; then
  replay=("$build/bin/cusnap" replay)
elif [[ -x "$build/tests/replayer/cusnap-replay" ]]; then
  replay=("$build/tests/replayer/cusnap-replay" replay)
fi
multi_sample="$build/samples/bin/multi_stream"
multi_size="${MULTI_SIZE:-262144}"
for f in "$sample" "$multi_sample" "$driver" "$interceptor_dir/libcuda.so.1"; do
  [[ -e "$f" ]] || { echo "missing $f (build the samples, emulator and interceptor)" >&2; exit 1; }
done
(( ${#replay[@]} )) || { echo "no cusnap replay binary under $build" >&2; exit 1; }
work="${WORKDIR:-${TMPDIR:-/tmp}/cusnap-bench-replay-$$}"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
driver_dir="$(dirname "$driver")"

median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
time_runs() {  # command...: prints the median wall seconds over $reps runs
  for _ in $(seq "$reps"); do
    local t0 t1
    t0=$(date +%s.%N)
    "$@" >/dev/null 2>"$work/stderr" || { cat "$work/stderr" >&2; echo "failed: $*" >&2; exit 1; }
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc -l
  done | median
}

echo "driver: $driver; $launches launches; median of $reps runs"
original=$(time_runs env LD_LIBRARY_PATH="$driver_dir" "$sample" --size "$launches")
env LD_LIBRARY_PATH="$interceptor_dir" CUSNAP_CAPTURE_OUTPUT="$work/capture.cusnap" CUSNAP_FORCE_OVERWRITE=1 \
  CUSNAP_REAL_DRIVER="$driver" "$sample" --size "$launches" >/dev/null
capture_bytes=$(stat -c %s "$work/capture.cusnap")
pure=$(time_runs "${replay[@]}" "$work/capture.cusnap" --driver "$driver" --no-timing --no-nvtx --progress off -q)
timed=$(time_runs "${replay[@]}" "$work/capture.cusnap" --driver "$driver" --progress off -q)
printf "%-34s %10s %10s\n" configuration "wall s" "ratio"
printf "%-34s %10.3f %10s\n" "original program" "$original" "1.00"
printf "%-34s %10.3f %10.2f\n" "replay --no-timing --no-nvtx" "$pure" "$(echo "$pure / $original" | bc -l)"
printf "%-34s %10.3f %10.2f\n" "replay (events around launches)" "$timed" "$(echo "$timed / $original" | bc -l)"
printf "capture: %d bytes; replay overhead per launch: %.2f us (pure)\n" "$capture_bytes" \
  "$(echo "($pure - $original) * 1000000 / $launches" | bc -l)"

env LD_LIBRARY_PATH="$interceptor_dir" CUSNAP_CAPTURE_OUTPUT="$work/multi.cusnap" CUSNAP_FORCE_OVERWRITE=1 \
  CUSNAP_REAL_DRIVER="$driver" "$multi_sample" --size "$multi_size" >/dev/null
multi_original=$(time_runs env LD_LIBRARY_PATH="$driver_dir" "$multi_sample" --size "$multi_size")
concurrent=$(time_runs "${replay[@]}" "$work/multi.cusnap" --driver "$driver" --no-timing --no-nvtx --progress off -q)
serialized=$(time_runs "${replay[@]}" "$work/multi.cusnap" --driver "$driver" --no-timing --no-nvtx --progress off -q --serialize)
echo "multi_stream --size $multi_size (4 streams):"
printf "%-34s %10s %10s\n" configuration "wall s" "ratio"
printf "%-34s %10.3f %10s\n" "original program" "$multi_original" "1.00"
printf "%-34s %10.3f %10.2f\n" "replay, streams concurrent" "$concurrent" "$(echo "$concurrent / $multi_original" | bc -l)"
printf "%-34s %10.3f %10.2f\n" "replay --serialize" "$serialized" "$(echo "$serialized / $multi_original" | bc -l)"
