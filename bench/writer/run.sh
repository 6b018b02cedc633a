#!/usr/bin/env bash
# Writer benchmark: cusnap's put_blob vs the zstd command line tool on the same bytes.
#
#   bench/writer/run.sh [BUILD_DIR]     (default build/release; needs target cusnap_bench_writer)
#   SIZE_MB=512 DEDUP_MB=256 LEVEL=3 WORKDIR=/tmp/cusnap-bench bench/writer/run.sh
#
# For each payload (compressible float data, incompressible random bytes) it times
#   ours: read the file + put_blob + close (a complete capture file), and
#   zstd: zstd -T0 -LEVEL on the same file,
# and prints throughput and output size side by side, then the cost of a second upload of the
# same DEDUP_MB bytes. Files are read from the page cache in both cases (each is read once first).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build/release}"
bench="$(find "$build" -name cusnap_bench_writer -type f -perm -u+x | head -1)"
[[ -x "$bench" ]] || { echo "cusnap_bench_writer not found under $build" >&2; exit 1; }
size_mb="${SIZE_MB:-512}"
dedup_mb="${DEDUP_MB:-256}"
level="${LEVEL:-3}"
work="${WORKDIR:-${TMPDIR:-/tmp}/cusnap-bench-$$}"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT

now() { date +%s.%N; }

printf "%-14s %10s %12s %12s %8s %14s %14s %8s\n" payload MiB "ours MB/s" "zstd MB/s" ratio \
  "ours bytes" "zstd bytes" "size %"
for kind in floats random; do
  in="$work/$kind.bin"
  "$bench" generate "$kind" "$size_mb" "$in"
  cat "$in" > /dev/null  # page cache
  line="$("$bench" put "$in" "$work/$kind.cusnap" --level "$level")"
  eval "$line"  # bytes= seconds= out_bytes=
  ours_s="$seconds"; ours_out="$out_bytes"
  t0="$(now)"
  zstd -q -f -T0 "-$level" "$in" -o "$work/$kind.zst"
  t1="$(now)"
  zstd_s="$(echo "$t1 - $t0" | bc -l)"
  zstd_out="$(stat -c %s "$work/$kind.zst")"
  awk -v k="$kind" -v b="$bytes" -v os="$ours_s" -v zs="$zstd_s" -v oo="$ours_out" -v zo="$zstd_out" \
    'BEGIN { om = b / os / 1e6; zm = b / zs / 1e6;
             printf "%-14s %10d %12.1f %12.1f %7.2fx %14d %14d %7.2f%%\n",
                    k, b / 1048576, om, zm, om / zm, oo, zo, (oo - zo) * 100.0 / zo }'
  rm -f "$work/$kind.zst" "$work/$kind.cusnap"
  [[ "$kind" == floats ]] || rm -f "$in"
done

dedup_in="$work/dedup.bin"
"$bench" generate floats "$dedup_mb" "$dedup_in"
line="$("$bench" dedup "$dedup_in" "$work/dedup.cusnap" --level "$level")"
eval "$line"
echo
echo "dedup: second upload of the same $dedup_mb MiB added $second_upload_added bytes to the file" \
     "(${second_upload_seconds}s, hashing only)"
