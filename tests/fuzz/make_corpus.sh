#!/usr/bin/env bash
# Regenerates the fuzzers' seed corpora in tests/fuzz/corpus/ (checked in; README.md):
#   captures/   small captures: closed, killed (no index), tests/data's smallest, the replayer's
#   snapshots/  captures with memory snapshots (tests/extract's fixture) and the captures
#               `cusnap extract` cuts from them and from two samples' captures, the
#               replayer's snapshot captures (issue #10)
#   fatbin/     nvcc fatbins (every --compress-mode), a cubin, rdc fatbins
#   ptx/        nvcc PTX of the tests' kernels and the LLVM-generated PTX in tests/emulator/ptx/llvm
# Usage: tests/fuzz/make_corpus.sh [release build dir]  (needs cusnap, cusnap_format_sample_writer,
# cusnap_extract_make_fixture, cusnap_replayer_make_capture, the interceptor, the emulator and the
# texture, surface, module_vars and pitched_2d samples built there, and nvcc on PATH).
# Files over 64 KiB (the fuzzers' -max_len) are not kept.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$(cd "${1:-$root/build/release}" && pwd)"
out="$root/tests/fuzz/corpus"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
rm -rf "$out"
mkdir -p "$out"/{captures,snapshots,fatbin,ptx}

# captures/
writer="$build/tests/format/cusnap_format_sample_writer"
"$writer" "$out/captures/closed.cusnap" "$tmp/closed.json" --small --calls 30
"$writer" "$out/captures/killed.cusnap" "$tmp/killed.json" --small --calls 30 --no-close
cp "$root/tests/data/runtime_style.cusnap" "$out/captures/"
make_capture="$build/tests/replayer/cusnap_replayer_make_capture"
"$make_capture" "$out/captures/replayer.cusnap" >/dev/null
# CUDA arrays, texture and surface objects, array copies both ways (schema 6): the samples,
# captured on the emulator.
for sample in texture surface; do
  CUSNAP_INTERCEPTOR_DIR="$build/interceptor/lib" "$build/bin/cusnap" capture \
    --driver "$build/emulator/lib/libcuda.so.1" --force-overwrite -o "$out/captures/$sample.cusnap" \
    -- "$build/samples/bin/$sample" >/dev/null
done

# snapshots/
nvcc -ptx -arch=compute_75 -o "$tmp/extract_kernels.ptx" \
  "$root/tests/extract/kernels/extract_kernels.cu"
fixture="$build/tests/extract/cusnap_extract_make_fixture"
"$fixture" capture "$out/snapshots/fixture.cusnap" "$tmp/extract_kernels.ptx"
"$build/bin/cusnap" extract "$out/snapshots/fixture.cusnap" --kernel-name "regex:." \
  --launch-count 2 -o "$tmp/extracted-%n.cusnap"
for f in "$tmp"/extracted*.cusnap; do cp "$f" "$out/snapshots/"; done
# Real programs' extracts (the standalone replay fuzzer's seeds): module_vars (module
# variables) and pitched_2d (pitched memory), captured on the emulator with hash-only snapshots,
# their first launch cut out.
for sample in module_vars pitched_2d; do
  CUSNAP_INTERCEPTOR_DIR="$build/interceptor/lib" "$build/bin/cusnap" capture \
    --driver "$build/emulator/lib/libcuda.so.1" --snapshot-kernels "regex:." --force-overwrite \
    -o "$tmp/$sample.cusnap" -- "$build/samples/bin/$sample" >/dev/null
  "$build/bin/cusnap" extract "$tmp/$sample.cusnap" --kernel-name "regex:." --launch-count 1 \
    -o "$out/snapshots/$sample-extract.cusnap" >/dev/null
done
for mode in extract hashonly wholerun; do
  "$make_capture" "$out/snapshots/replayer_$mode.cusnap" snapshot "$mode" >/dev/null
done

# fatbin/
kernels="$root/tests/fatbin/kernels/fatbin_kernels.cu"
for mode in none speed size default; do
  nvcc -fatbin -gencode arch=compute_75,code=compute_75 -gencode arch=compute_90,code=sm_90 \
    --compress-mode="$mode" -o "$out/fatbin/k_$mode.fatbin" "$kernels"
done
nvcc -cubin -gencode arch=compute_90,code=sm_90 -o "$out/fatbin/k_sm90.cubin" "$kernels"
nvcc -c -rdc=true -gencode arch=compute_75,code=compute_75 -o "$tmp/k_rdc.o" "$kernels"
objcopy -O binary --only-section=__nv_relfatbin "$tmp/k_rdc.o" "$out/fatbin/k_rdc.relfatbin"

# ptx/
for cu in "$root/tests/fatbin/kernels/fatbin_kernels.cu" \
          "$root/tests/extract/kernels/extract_kernels.cu" \
          "$root/tests/replayer/kernels/replay_kernels.cu"; do
  nvcc -ptx -arch=compute_75 -o "$out/ptx/$(basename "$cu" .cu).ptx" "$cu"
done
cp "$root"/tests/emulator/ptx/llvm/*.ptx "$out/ptx/"

find "$out" -type f -size +64k -print -delete | sed 's/^/too large, left out: /'
du -sh "$out"/*
