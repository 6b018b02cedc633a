#!/usr/bin/env bash
# Writer benchmark: cusnap's put_blob vs the zstd command line tool on the same bytes.
#
#   bench/writer/run.sh [BUILD_DIR]     (default build/release; needs target cusnap_bench_writer)
#   SIZE_MB=512 DEDUP_MB=256 LEVEL=3 REPS=5 WORKDIR=/tmp/cusnap-bench bench/writer/run.sh
#
# For each payload (compressible float data, incompressible random bytes) it runs, REPS times and
# interleaved (so that a change in machine load hits both tools alike),
#   ours: cusnap_bench_writer put = map the file + put_blob + close (a complete capture file), and
#   zstd: zstd -T0 -LEVEL on the same file,
# timing both from outside the same way (wall clock of the whole process). It prints medians:
# throughput side by side, the median of the per-repetition ratios ours/zstd (>1: ours faster),
# CPU seconds (user + system; less sensitive to other load than wall time), output sizes, and
# the 1-minute load average seen during the repetitions. `put+close` is our time
# without process start and file mapping, as measured inside the program. Then it prints the cost
# of a second upload of the same DEDUP_MB bytes. Inputs are read from the page cache in both cases.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build/release}"
bench="$(find "$build" -name cusnap_bench_writer -type f -perm -u+x | head -1)"
[[ -x "$bench" ]] || { echo "cusnap_bench_writer not found under $build" >&2; exit 1; }
size_mb="${SIZE_MB:-512}"
dedup_mb="${DEDUP_MB:-256}"
level="${LEVEL:-3}"
reps="${REPS:-5}"
work="${WORKDIR:-${TMPDIR:-/tmp}/cusnap-bench-$$}"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "$(nproc) CPUs; zstd: $(zstd --version | head -1); level $level; $reps interleaved repetitions; medians"
TIMEFORMAT='%R %U %S'
printf "%-8s %6s %10s %10s %10s %7s %8s %8s %12s %12s %7s %11s\n" payload MiB "ours MB/s" \
  "put+close" "zstd MB/s" ratio "ours cpu" "zstd cpu" "ours bytes" "zstd bytes" "size %" "load (1m)"
for kind in floats random; do
  in="$work/$kind.bin"
  "$bench" generate "$kind" "$size_mb" "$in"
  cat "$in" > /dev/null  # page cache
  for f in ours_s inner_s zstd_s ratio load ours_cpu zstd_cpu; do : > "$work/$f"; done
  for ((r = 0; r < reps; ++r)); do
    cut -d' ' -f1 /proc/loadavg >> "$work/load"
    rm -f "$work/$kind.cusnap" "$work/$kind.zst"
    # bash's `time`: wall, user and system seconds of the child, the same way for both tools.
    { time "$bench" put "$in" "$work/$kind.cusnap" --level "$level" > "$work/line"; } 2> "$work/ours_t"
    { time zstd -q -f -T0 "-$level" "$in" -o "$work/$kind.zst"; } 2> "$work/zstd_t"
    eval "$(cat "$work/line")"  # bytes= seconds= load_seconds= out_bytes=
    read -r ours_s ours_u ours_k < "$work/ours_t"
    read -r zstd_s zstd_u zstd_k < "$work/zstd_t"
    echo "$ours_s" >> "$work/ours_s"
    echo "$seconds" >> "$work/inner_s"
    echo "$zstd_s" >> "$work/zstd_s"
    echo "$zstd_s / $ours_s" | bc -l >> "$work/ratio"
    echo "$ours_u + $ours_k" | bc -l >> "$work/ours_cpu"
    echo "$zstd_u + $zstd_k" | bc -l >> "$work/zstd_cpu"
    ours_out="$out_bytes"
    zstd_out="$(stat -c %s "$work/$kind.zst")"
  done
  awk -v k="$kind" -v b="$bytes" -v os="$(median < "$work/ours_s")" -v is="$(median < "$work/inner_s")" \
      -v zs="$(median < "$work/zstd_s")" -v ra="$(median < "$work/ratio")" -v oo="$ours_out" \
      -v zo="$zstd_out" -v oc="$(median < "$work/ours_cpu")" -v zc="$(median < "$work/zstd_cpu")" \
      -v lo="$(sort -g "$work/load" | head -1)" -v hi="$(sort -g "$work/load" | tail -1)" \
    'BEGIN { printf "%-8s %6d %10.1f %10.1f %10.1f %6.2fx %8.2f %8.2f %12d %12d %6.2f%% %5.1f-%-5.1f\n",
                    k, b / 1048576, b / os / 1e6, b / is / 1e6, b / zs / 1e6, ra, oc, zc, oo, zo,
                    (oo - zo) * 100.0 / zo, lo, hi }'
  rm -f "$work/$kind.zst" "$work/$kind.cusnap" "$in"
done

dedup_in="$work/dedup.bin"
"$bench" generate floats "$dedup_mb" "$dedup_in"
line="$("$bench" dedup "$dedup_in" "$work/dedup.cusnap" --level "$level")"
eval "$line"
echo
echo "dedup: second upload of the same $dedup_mb MiB added $second_upload_added bytes to the file" \
     "(${second_upload_seconds}s, hashing only)"
