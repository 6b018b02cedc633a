#!/usr/bin/env bash
# Emulator throughput benchmark: interpreted thread-instructions per second on an ALU-bound, a
# memory-bound and a tensor-core GEMM kernel (with its GFLOP/s of emulated math), and the wall time
# of the matmul sample at a fixed size. Not a test.
#
#   bench/emulator/run.sh [BUILD_DIR]      (default build/release; needs cusnap_bench_emulator,
#                                           cusnap_emulator and cusnap_sample_matmul)
#   REPS=5 THREADS="1 0" MATMUL_SIZE=256 bench/emulator/run.sh build/release
#   LIB_DIRS="/tmp/before build/release/emulator/lib" bench/emulator/run.sh build/release
#
# Each configuration (kernel x CUSNAP_EMU_THREADS, 0 = one worker per CPU) runs REPS processes;
# every process times LAUNCHES launches of the kernel with the host's steady clock (launch +
# synchronize) and checks the results bit for bit against a host computation (a run whose check
# fails aborts the benchmark). The thread-instructions those launches executed come from the
# emulator's own counters (CUSNAP_EMU_STATS "execution": lanes that issued each executed warp
# instruction), never from a formula. Printed per configuration: medians over the REPS runs of
# the wall time per launch, the thread-instruction rate (wall), that rate per worker thread,
# thread-instructions per CPU-second of the process (what one core does when it is not shared:
# on a loaded machine the wall rate understates it), the warp-instruction rate and, for the
# triad, the bytes moved per second (12 bytes per element), for the gemm the emulated GFLOP/s
# (2 M^3 per launch: the tensor_gemm sample's ldmatrix + mma.sync m16n8k16 kernel). With several LIB_DIRS (emulator
# builds to compare, e.g. before/after a change) the runs are interleaved library by library so
# that a change in machine load hits all alike. The 1-minute load average is shown as min-max.
#
# ALU_ARGS / TRIAD_ARGS / GEMM_ARGS override the kernels' sizes (see cusnap_bench_emulator's usage).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$(cd "${1:-$root/build/release}" && pwd)"
bench="$build/bench/emulator/cusnap_bench_emulator"
matmul="$build/samples/bin/matmul"
reps="${REPS:-5}"
launches="${LAUNCHES:-2}"
threads_list="${THREADS:-1 0}"
lib_dirs="${LIB_DIRS:-$build/emulator/lib}"
alu_args="${ALU_ARGS:---blocks 512 --threads 256 --iterations 64}"
triad_args="${TRIAD_ARGS:---blocks 1024 --threads 256 --elements 4194304}"
gemm_args="${GEMM_ARGS:---elements 512}"
matmul_size="${MATMUL_SIZE:-256}"
for f in "$bench" "$matmul"; do [[ -x "$f" ]] || { echo "missing $f (build it first)" >&2; exit 1; }; done
for d in $lib_dirs; do [[ -e "$d/libcuda.so.1" ]] || { echo "no libcuda.so.1 in $d" >&2; exit 1; }; done
work="${WORKDIR:-${TMPDIR:-/tmp}/cusnap-bench-emulator-$$}"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
cpus=$(nproc)
short() { local s="$1"; (( ${#s} > 40 )) && s="...${s: -37}"; echo "$s"; }
workers_of() { (( $1 == 0 )) && echo "$cpus" || echo "$1"; }

# One run: prints "thread_instr warp_instr seconds cpu_seconds bytes"; aborts when the check failed.
one_run() {  # lib_dir threads kernel args...
  local lib="$1" threads="$2" kernel="$3"
  shift 3
  local stats="$work/stats.json" line
  rm -f "$stats"
  if ! line="$(CUSNAP_EMU_STATS="$stats" CUSNAP_EMU_THREADS="$(workers_of "$threads")" LD_LIBRARY_PATH="$lib" \
               "$bench" "$kernel" "$@" --reps "$launches")"; then
    echo "cusnap_bench_emulator $kernel $* failed with $lib (results do not match or a call failed)" >&2
    exit 1
  fi
  local kernel_name launches seconds cpu_seconds checked bytes=0 flops=0 threads_n
  line="${line/kernel=/kernel_name=}"
  eval "${line/threads=/threads_n=}"
  [[ "$checked" == 1 ]] || { echo "results not checked" >&2; exit 1; }
  (( flops > 0 )) && bytes=$flops  # the gemm's "amount moved" is its floating-point operations
  python3 - "$stats" "$kernel_name" "$launches" "$seconds" "$cpu_seconds" "$bytes" <<'EOF'
import json, sys
stats, name, launches = sys.argv[1], sys.argv[2], int(sys.argv[3])
e = json.load(open(stats))["execution"][name]
assert e["launches"] == launches, f"stats saw {e['launches']} launches of {name}, the bench made {launches}"
print(e["threadInstructions"], e["warpInstructions"], *sys.argv[4:7])
EOF
}

echo "$cpus CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')); $reps runs per configuration," \
     "$launches timed launches per run; medians"
echo "alu:   $alu_args"
echo "triad: $triad_args"
echo "gemm:  $gemm_args"
printf "%-6s %-40s %7s %14s %9s %10s %11s %11s %11s %8s %11s\n" kernel library workers "thr-i/launch" "s/launch" \
  "M thr-i/s" "M/s/worker" "M/CPU-s" "M warp-i/s" "GB|GFLOP/s" "load (1m)"
for kernel in alu triad gemm; do
  args="$alu_args"
  [[ $kernel == triad ]] && args="$triad_args"
  [[ $kernel == gemm ]] && args="$gemm_args"
  for threads in $threads_list; do
    for lib in $lib_dirs; do : > "$work/rate.${lib//\//_}"; done
    : > "$work/load"
    for ((r = 0; r < reps; ++r)); do
      for lib in $lib_dirs; do
        cut -d' ' -f1 /proc/loadavg >> "$work/load"
        # shellcheck disable=SC2086
        one_run "$lib" "$threads" "$kernel" $args >> "$work/rate.${lib//\//_}"
      done
    done
    for lib in $lib_dirs; do
      awk -v k="$kernel" -v l="$lib" -v w="$(workers_of "$threads")" -v n="$launches" \
          -v lo="$(sort -g "$work/load" | head -1)" -v hi="$(sort -g "$work/load" | tail -1)" '
        { ti[NR] = $1; rate[NR] = $1 / $3; wrate[NR] = $2 / $3; s[NR] = $3 / n; cpu[NR] = $1 / $4; gb[NR] = $5 / $3 / 1e9 }
        function med(a, n,   i, j, t) {
          for (i = 1; i <= n; ++i) for (j = i + 1; j <= n; ++j) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
          return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }
        END {
          m = med(rate, NR)
          printf "%-6s %-40s %7d %14d %9.3f %10.1f %11.1f %11.1f %11.2f %8s %5.1f-%-5.1f\n", k, substr(l, length(l) > 40 ? length(l) - 39 : 1),
                 w, ti[1] / n, med(s, NR), m / 1e6, m / 1e6 / w, med(cpu, NR) / 1e6, med(wrate, NR) / 1e6,
                 k == "alu" ? "-" : sprintf("%.3f", med(gb, NR)), lo, hi
        }' "$work/rate.${lib//\//_}"
    done
  done
done

echo
echo "matmul sample, --size $matmul_size (m x n x k = $matmul_size x $((matmul_size + 13)) x $((matmul_size + 25))):" \
     "whole-process wall seconds (incl. the host reference), median of $reps"
printf "%-40s %7s %10s %10s %11s\n" library workers "wall s" "kernel s" "load (1m)"
for threads in $threads_list; do
  for lib in $lib_dirs; do : > "$work/mm.${lib//\//_}"; : > "$work/mk.${lib//\//_}"; done
  : > "$work/load"
  for ((r = 0; r < reps; ++r)); do
    for lib in $lib_dirs; do
      cut -d' ' -f1 /proc/loadavg >> "$work/load"
      rm -f "$work/mm.json"
      t0=$(date +%s.%N)
      CUSNAP_EMU_STATS="$work/mm.json" CUSNAP_EMU_THREADS="$(workers_of "$threads")" LD_LIBRARY_PATH="$lib" \
        "$matmul" --size "$matmul_size" > "$work/mm.out" || { cat "$work/mm.out" >&2; exit 1; }
      t1=$(date +%s.%N)
      grep -q PASSED "$work/mm.out" || { cat "$work/mm.out" >&2; exit 1; }
      echo "$t1 - $t0" | bc -l >> "$work/mm.${lib//\//_}"
      python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["execution"]["sgemm_tiled"]["seconds"])' \
        "$work/mm.json" >> "$work/mk.${lib//\//_}"
    done
  done
  for lib in $lib_dirs; do
    printf "%-40s %7d %10.3f %10.3f %5.1f-%-5.1f\n" "$(short "$lib")" "$(workers_of "$threads")" \
      "$(median < "$work/mm.${lib//\//_}")" "$(median < "$work/mk.${lib//\//_}")" \
      "$(sort -g "$work/load" | head -1)" "$(sort -g "$work/load" | tail -1)"
  done
done
