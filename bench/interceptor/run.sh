#!/usr/bin/env bash
# Interceptor overhead (issue 4).
#
# 1. In one process (the numbers docs/performance.md reports): inprocess_overhead calls the
#    emulator directly, through the shim with nothing recorded, and through the shim while it
#    records, interleaved, and prints median ns per call, the added ns and the ratio against
#    direct for cuDeviceGetAttribute (not modelled), cuCtxSetCurrent (modelled) and cuLaunchKernel
#    of an empty 8-parameter kernel (also refused with grid 0, which isolates the recording cost
#    from the emulator's kernel execution), cuGraphAddKernelNode of that kernel (the cost of
#    recording one graph node) and cuGraphLaunch of a graph of four such nodes (the cost of
#    recording one graph launch). The capture it wrote is then checked with
#    `cusnap info` (launch count). COMPARE=<another shim's libcuda.so.1> adds a "rec2" column
#    recording through that build, interleaved (before/after comparisons on a busy machine).
#    RANGE_OUTSIDE=1 makes that column this shim under --capture-range cudaProfilerApi with no
#    range started: the cost of a call outside a capture range (COMPARE defaults to this shim).
#    FILTER_OUTSIDE=1 makes it this shim with a kernel filter (CUSNAP_KERNEL_NAME) that selects
#    no launch: the cost of a launch the filter passes through.
# 2. THREE_PROCESS=1 also runs the older three-process table: call_overhead and the many_launches
#    sample on the emulator directly ("direct"), through the shim with nothing recorded
#    ("shim, off") and under `cusnap capture` ("capture"), best of REPEAT runs.
#
#   bench/interceptor/run.sh [BUILD_DIR]     (default build/release)
#   REPS=301 BATCH=2000 LAUNCH_BATCH=200 bench/interceptor/run.sh build/h-icptperf
#   THREE_PROCESS=1 CALLS=200000 LAUNCHES=20000 REPEAT=3 bench/interceptor/run.sh build/release
#
# Needs targets cusnap_interceptor, cusnap_emulator, cusnap_bench_icpt_inprocess (and cusnap for
# the launch-count check; for THREE_PROCESS also cusnap_bench_call_overhead and
# cusnap_sample_many_launches). Timings vary with machine load: the script prints it.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$(cd "${1:-$root/build/release}" && pwd)"
calls="${CALLS:-200000}"
launches="${LAUNCHES:-20000}"
repeat="${REPEAT:-3}"
inprocess="$build/bench/interceptor/cusnap_bench_icpt_inprocess"
bench="$build/bench/interceptor/cusnap_bench_call_overhead"
many="$(find "$build/samples" -name many_launches -type f -perm -u+x 2>/dev/null | head -1 || true)"
cusnap="$build/bin/cusnap"
emu="$build/emulator/lib"
shim="$build/interceptor/lib"
for f in "$inprocess" "$emu/libcuda.so.1" "$shim/libcuda.so.1"; do
  [[ -x "$f" || -f "$f" ]] || { echo "run.sh: $f not found (build the targets listed above)" >&2; exit 1; }
done
work="${WORKDIR:-${TMPDIR:-/tmp}/cusnap-bench-icpt-$$}"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT

# ---- 1. one process
cmd=("$inprocess" --emulator "$emu/libcuda.so.1" --shim "$shim/libcuda.so.1" --shim-copy "$work/shim-rec.so"
     --capture "$work/inprocess.cusnap" --reps "${REPS:-301}" --batch "${BATCH:-2000}"
     --launch-batch "${LAUNCH_BATCH:-200}")
if [[ -n "${RANGE_OUTSIDE:-}" ]]; then
  cmd+=(--compare "${COMPARE:-$shim/libcuda.so.1}" --range-outside)
elif [[ -n "${FILTER_OUTSIDE:-}" ]]; then
  cmd+=(--compare "${COMPARE:-$shim/libcuda.so.1}" --filter-outside)
elif [[ -n "${COMPARE:-}" ]]; then
  cmd+=(--compare "$COMPARE")
fi
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
echo "+ ${cmd[*]}"
out="$("${cmd[@]}")"
echo "$out"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
expected="$(sed -n 's/^recorded launches expected in .*: //p' <<<"$out")"
if [[ -x "$cusnap" && -n "$expected" ]]; then
  got="$("$cusnap" info "$work/inprocess.cusnap" | awk '$1 == "launch" {print $2}')"
  if [[ "$got" == "$expected" ]]; then
    echo "capture check: $got launches recorded, as expected"
  else
    echo "capture check FAILED: $got launches recorded, $expected expected" >&2
    exit 1
  fi
fi
[[ "${THREE_PROCESS:-0}" == 1 ]] || exit 0

# ---- 2. three processes
for f in "$bench" "$many" "$cusnap"; do
  [[ -x "$f" || -f "$f" ]] || { echo "run.sh: $f not found (build the targets listed above)" >&2; exit 1; }
done

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
