#!/usr/bin/env bash
# Regenerates the checked-in PTX of the non-nvcc corpus (test_corpus.cpp) from its sources, so
# that the build and the tests need none of these producers:
#   llc_*.ll          -> llc_*.ptx            Debian's LLVM 14 llc (apt: llvm-14)
#   nvvm_kernels.ll   -> nvvm_kernels.ptx     the toolkit's libNVVM, through nvvm_compile.c
#   numba_kernels.py  -> numba_<kernel>.ptx   numba-cuda's compile_ptx (scripts/python-env)
# Usage: tests/emulator/ptx/corpus/regenerate.sh [path/to/python]   (from anywhere)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cuda=${CUDA_PATH:-/usr/local/cuda}
python=${1:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for ll in "$here"/llc_*.ll; do
  llc -march=nvptx64 -mcpu=sm_75 -mattr=+ptx70 -O2 "$ll" -o "${ll%.ll}.ptx"
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
