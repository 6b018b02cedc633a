#!/usr/bin/env bash
# Host instructions the emulator executes per interpreted thread-instruction, counted by valgrind
# (callgrind, instructions of the launch only). Unlike wall or CPU time it does not depend on
# machine load, so it is how interpreter changes are compared on a shared machine. Not a test.
#
#   bench/emulator/host_instructions.sh [BUILD_DIR]       (default build/release)
#   LIB_DIRS="/tmp/before build/release/emulator/lib" bench/emulator/host_instructions.sh build/release
#
# Runs the bench's kernels small (valgrind is ~50x slower) with one worker thread, counts the
# instructions executed inside Program::launch (callgrind --toggle-collect) and divides by the
# thread-instructions the emulator's own counters (CUSNAP_EMU_STATS) report for the launch.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$(cd "${1:-$root/build/release}" && pwd)"
bench="$build/bench/emulator/cusnap_bench_emulator"
lib_dirs="${LIB_DIRS:-$build/emulator/lib}"
alu_args="${ALU_ARGS:---blocks 16 --threads 256 --iterations 64}"
triad_args="${TRIAD_ARGS:---blocks 64 --threads 256 --elements 262144}"
command -v valgrind > /dev/null || { echo "valgrind is not installed" >&2; exit 1; }
[[ -x "$bench" ]] || { echo "missing $bench (build it first)" >&2; exit 1; }
work="${WORKDIR:-${TMPDIR:-/tmp}/cusnap-bench-emulator-ir-$$}"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT

printf "%-6s %-44s %14s %16s %12s\n" kernel library "thread-instr" "host instr" "per thr-i"
for kernel in alu triad; do
  args="$alu_args"
  [[ $kernel == triad ]] && args="$triad_args"
  for lib in $lib_dirs; do
    rm -f "$work"/cg.* "$work/stats.json"
    # shellcheck disable=SC2086
    CUSNAP_EMU_THREADS=1 CUSNAP_EMU_STATS="$work/stats.json" LD_LIBRARY_PATH="$lib" \
      valgrind --tool=callgrind --callgrind-out-file="$work/cg.%p" '--toggle-collect=*ProgramImpl::launch*' \
      "$bench" "$kernel" $args --reps 1 > "$work/out" 2> "$work/err" ||
      { cat "$work/out" "$work/err" >&2; exit 1; }
    grep -q "checked=1" "$work/out" || { cat "$work/out" >&2; exit 1; }
    host="$(grep -h "^summary:" "$work"/cg.* | awk '{ s += $2 } END { print s }')"
    threads="$(python3 -c 'import json,sys; e = json.load(open(sys.argv[1]))["execution"]; print(sum(v["threadInstructions"] for v in e.values()))' "$work/stats.json")"
    short="$lib"
    (( ${#short} > 44 )) && short="...${short: -41}"
    awk -v k="$kernel" -v l="$short" -v t="$threads" -v h="$host" \
      'BEGIN { printf "%-6s %-44s %14d %16d %12.2f\n", k, l, t, h, h / t }'
  done
done
