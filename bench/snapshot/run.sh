#!/usr/bin/env bash
# Memory snapshot benchmark (docs/performance.md, "Memory snapshots"). Not a test.
#
#   bench/snapshot/run.sh [BUILD_DIR]                 (default build/release)
#   MIB=32 LAUNCHES=10 REPS=3 DRIVER=emulator bench/snapshot/run.sh build/release
#
# cusnap_bench_snapshot (LAUNCHES launches of `step`, each synchronised, over a MIB-MiB buffer of
# random bytes) is captured without snapshots and with every launch selected, on both hashing
# routes (CUSNAP_SNAPSHOT_HASH=host|device), for two workloads: "unchanged" (each launch writes
# 64 words: one chunk changes) and "changed" (each launch writes every word). Per configuration
# the median over REPS runs of the program's own ns per launch (launch + synchronise, timed
# inside the process). Reported:
#   - cost per selected launch: snapshot ns per launch minus the plain capture's;
#   - snapshot throughput: 2 x MIB MiB (the memory is covered before and after each launch) over
#     that cost, in GB/s (10^9 bytes);
#   - capture file bytes; and, for one launch cut out with `cusnap extract`, the extracted file's
#     bytes against the bytes that launch wrote.
# DRIVER: what `cusnap capture --driver` gets (emulator, auto, or a libcuda.so.1 path).
# BUILD_DIR may also be a scripts/gpu-bundle directory (it keeps these paths), as gpu-check runs
# it on a GPU machine; only bash, coreutils and awk are needed there.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$(cd "${1:-$root/build/release}" && pwd)"
mib="${MIB:-32}"
launches="${LAUNCHES:-10}"
reps="${REPS:-3}"
driver="${DRIVER:-emulator}"
app="$build/bench/snapshot/cusnap_bench_snapshot"
image="$build/samples/many_launches/many_launches_kernels.fatbin"
cusnap="$build/bin/cusnap"
for f in "$app" "$image" "$cusnap" "$build/interceptor/lib/libcuda.so.1"; do
  [[ -e "$f" ]] || { echo "missing $f (build cusnap_bench_snapshot, the samples, the CLI and the interceptor)" >&2; exit 1; }
done
work="${WORKDIR:-${TMPDIR:-/tmp}/cusnap-bench-snapshot-$$}"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT

median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
# run <name> <touched words> [env...] -- [capture options...]: median ns per launch over $reps
run() {
  local name="$1" touched="$2"
  shift 2
  local envs=()
  while [[ "$1" != "--" ]]; do envs+=("$1"); shift; done
  shift
  for _ in $(seq "$reps"); do
    env "${envs[@]}" "$cusnap" capture --driver "$driver" --force-overwrite -o "$work/$name.cusnap" "$@" \
      -- "$app" "$image" "$mib" "$launches" "$touched" >"$work/out" 2>"$work/err" ||
      { cat "$work/err" >&2; echo "failed: $name" >&2; exit 1; }
    awk '/^ns_per_launch/ { print $2 }' "$work/out"
  done | median
}

bytes=$((mib << 20))
echo "driver: $driver; $launches launches over $mib MiB; median of $reps runs; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-10s %-8s %14s %14s %12s %14s %16s\n" workload route "ns/launch" "cost ms/launch" "GB/s" "file bytes" "extract bytes"
for workload in unchanged changed; do
  touched=64
  [[ "$workload" == changed ]] && touched=0
  written=$((touched == 0 ? bytes : touched * 4))
  plain=$(run "plain-$workload" "$touched" CUSNAP_SNAPSHOT_HASH=host --)
  printf "%-10s %-8s %14.0f %14s %12s %14d %16s\n" "$workload" "none" "$plain" "-" "-" \
    "$(stat -c %s "$work/plain-$workload.cusnap")" "-"
  for route in host device; do
    name="$route-$workload"
    ns=$(run "$name" "$touched" CUSNAP_SNAPSHOT_HASH="$route" -- --snapshot-kernels step)
    cost=$(awk -v a="$ns" -v b="$plain" 'BEGIN { print a - b }')
    gbs=$(awk -v b="$bytes" -v c="$cost" 'BEGIN { print (c > 0 ? 2 * b / c : 0) }')
    "$cusnap" extract "$work/$name.cusnap" --kernel-name step --launch-skip $((launches / 2)) \
      --launch-count 1 -o "$work/$name.extract.cusnap" >/dev/null 2>&1
    printf "%-10s %-8s %14.0f %14.2f %12.2f %14d %16s\n" "$workload" "$route" "$ns" \
      "$(awk -v c="$cost" 'BEGIN { print c / 1000000 }')" "$gbs" "$(stat -c %s "$work/$name.cusnap")" \
      "$(stat -c %s "$work/$name.extract.cusnap") (launch wrote $written)"
  done
done
