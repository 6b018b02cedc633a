#!/usr/bin/env bash
# Regenerates the checked-in PTX of the non-nvcc corpus (test_corpus.cpp) from its sources, so
# that the build and the tests need none of these producers:
#   llc_{bits,stats}.ll -> llc_*.ptx          Debian's LLVM 14 llc (apt: llvm-14), sm_75/PTX 7.0
#   llc_{vectors,atomics,calls,wide}.ll -> llc_*.<sm>.ptx   the same llc for three targets:
#                       sm_60/PTX 6.0 (llc_vectors: sm_50, where f16 arithmetic goes through
#                       f32), sm_75/PTX 7.0, sm_86/PTX 7.5
#   clang_opencl.cl   -> clang_opencl.O<n>.ptx  Debian's clang 14 (apt: clang-14), OpenCL C for
#                       nvptx64-nvidia-nvcl with -g at -O0, -O1, -O2 (.file/.loc, .debug_*)
#   nvvm_kernels.ll   -> nvvm_kernels.ptx     the toolkit's libNVVM, through nvvm_compile.c
#   numba_kernels.py  -> numba_<kernel>.ptx   numba-cuda's compile_ptx (scripts/python-env)
# Usage: tests/emulator/ptx/corpus/regenerate.sh [path/to/python]   (from anywhere)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cuda=${CUDA_PATH:-/usr/local/cuda}
python=${1:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for name in llc_bits llc_stats; do
  llc -march=nvptx64 -mcpu=sm_75 -mattr=+ptx70 -O2 "$here/$name.ll" -o "$here/$name.ptx"
done
for name in llc_vectors llc_atomics llc_calls llc_wide; do
  low=sm_60:ptx60  # atomicrmw fadd double needs sm_60
  if [[ $name == llc_vectors ]]; then low=sm_50:ptx60; fi  # f16 arithmetic promoted to f32
  for target in $low sm_75:ptx70 sm_86:ptx75; do
    llc -march=nvptx64 -mcpu="${target%:*}" -mattr=+"${target#*:}" -O2 "$here/$name.ll" \
        -o "$here/$name.${target%:*}.ptx"
  done
done
# -fno-dwarf-directory-asm: LLVM 14 otherwise writes `.file 1 "dir" "name"`, which ptxas (and
# the emulator) refuse; the prefix map keeps the checkout's path out of the debug info.
for level in O0 O1 O2; do
  (cd "$here" && clang -cl-std=CL1.2 -target nvptx64-nvidia-nvcl -march=sm_75 -g -"$level" \
      -fno-dwarf-directory-asm -fdebug-prefix-map="$here"=. -S clang_opencl.cl \
      -o clang_opencl."$level".ptx)
done

gcc -Wall -Wextra -O1 -I"$cuda/include" "$here/nvvm_compile.c" -o "$work/nvvm_compile" \
    -L"$cuda/lib" -L"$cuda/lib64" -lnvvm -Wl,-rpath,"$cuda/lib:$cuda/lib64"
"$work/nvvm_compile" "$here/nvvm_kernels.ll" -arch=compute_75 > "$here/nvvm_kernels.ptx"

# numba-cuda looks for $CUDA_HOME/nvvm/lib64/libnvvm.so.4 and $CUDA_HOME/nvvm/libdevice; the
# toolkit here keeps libnvvm in lib/, so give it that layout.
mkdir -p "$work/cuda_home/nvvm/lib64"
libnvvm=
for candidate in "$cuda"/lib/libnvvm.so.4 "$cuda"/lib64/libnvvm.so.4 "$cuda"/nvvm/lib64/libnvvm.so.4; do
  if [[ -z $libnvvm && -e $candidate ]]; then libnvvm=$candidate; fi
done
ln -s "$libnvvm" "$work/cuda_home/nvvm/lib64/libnvvm.so.4"
ln -s "$cuda/nvvm/libdevice" "$work/cuda_home/nvvm/libdevice"
ln -s "$cuda/include" "$work/cuda_home/include"
CUDA_HOME="$work/cuda_home" "$python" "$here/numba_kernels.py"
