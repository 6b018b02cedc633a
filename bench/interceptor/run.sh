#!/usr/bin/env bash
# Interceptor overhead: the same programs on the emulator directly ("direct"), through the shim
# with nothing recorded ("shim, off": no CUSNAP_CAPTURE_OUTPUT) and under `cusnap capture`
# ("capture"). Prints the best of REPEAT runs per cell and the overhead against direct.
#
#   bench/interceptor/run.sh [BUILD_DIR]     (default build/release)
#   CALLS=200000 LAUNCHES=20000 REPEAT=3 bench/interceptor/run.sh build/h-cap2
#
# Programs: bench/interceptor/call_overhead (ns per cuCtxGetCurrent, cuPointerGetAttribute,
# cuMemsetD8Async of 4 bytes) and the many_launches sample (us per launch, its own timing of
# LAUNCHES dependent launches + one synchronisation). Needs targets cusnap, cusnap_interceptor,
# cusnap_emulator, cusnap_bench_call_overhead and cusnap_sample_many_launches.
# The emulator executes kernels on the CPU, so launch numbers include the emulated kernel; the
# per-call difference between columns is what the shim adds. Timings vary with machine load.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$(cd "${1:-$root/build/release}" && pwd)"
calls="${CALLS:-200000}"
launches="${LAUNCHES:-20000}"
repeat="${REPEAT:-3}"
bench="$build/bench/interceptor/cusnap_bench_call_overhead"
many="$(find "$build/samples" -name many_launches -type f -perm -u+x | head -1)"
cusnap="$build/bin/cusnap"
emu="$build/emulator/lib"
shim="$build/interceptor/lib"
for f in "$bench" "$many" "$cusnap" "$emu/libcuda.so.1" "$shim/libcuda.so.1"; do
  [[ -x "$f" || -f "$f" ]] || { echo "run.sh: $f not found (build the targets listed above)" >&2; exit 1; }
done
work="${WORKDIR:-${TMPDIR:-/tmp}/cusnap-bench-icpt-$$}"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT

# run MODE PROGRAM ARGS...: the program's stdout
run() {
  local mode="$1"; shift
  case "$mode" in
    direct) env -u CUSNAP_CAPTURE_OUTPUT LD_LIBRARY_PATH="$emu" "$@" ;;
    off) env -u CUSNAP_CAPTURE_OUTPUT LD_LIBRARY_PATH="$shim" CUSNAP_REAL_DRIVER="$emu/libcuda.so.1" "$@" ;;
    capture) "$cusnap" capture --driver emulator --force-overwrite -o "$work/bench.cusnap" -- "$@" 2>/dev/null ;;
  esac
}

# best METRIC-LINES...: minimum value per metric over repeated runs
declare -A best
measure() {
  local mode="$1"
  for ((r = 0; r < repeat; r++)); do
    while read -r name _ ns; do
      key="$mode/$name"
      if [[ -z "${best[$key]:-}" ]] || awk "BEGIN{exit !($ns < ${best[$key]})}"; then best[$key]="$ns"; fi
    done < <(run "$mode" "$bench" "$calls")
    line="$(run "$mode" "$many" --size "$launches" | grep -o '[0-9]* launches in [0-9.]* s')"
    us="$(awk -v l="$line" 'BEGIN{split(l, f, " "); printf "%.2f", f[4] * 1e6 / f[1]}')"
    key="$mode/launch (many_launches)"
    if [[ -z "${best[$key]:-}" ]] || awk "BEGIN{exit !($us < ${best[$key]})}"; then best[$key]="$us"; fi
  done
}
for mode in direct off capture; do measure "$mode"; done

printf "%-26s %6s %10s %10s %10s %12s %12s\n" call unit direct "shim, off" capture "+off" "+capture"
for name in cuCtxGetCurrent cuPointerGetAttribute cuMemsetD8Async "launch (many_launches)"; do
  unit=ns; [[ "$name" == launch* ]] && unit=us
  d="${best[direct/$name]}"; o="${best[off/$name]}"; c="${best[capture/$name]}"
  awk -v n="$name" -v u="$unit" -v d="$d" -v o="$o" -v c="$c" \
    'BEGIN{printf "%-26s %6s %10.2f %10.2f %10.2f %+12.2f %+12.2f\n", n, u, d, o, c, o - d, c - d}'
done
echo "(best of $repeat runs; $calls calls per query, $((calls / 10)) memsets, $launches launches; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))"
