// Block-order classification: which kernels' results can depend on the order in which their
// blocks run, so that the scheduler (program.cpp) runs those blocks one at a time in
// block-index order and every launch gives the same results whatever the worker count.
#pragma once

#include "ir.h"

namespace cusnap::emu::ptx {

// Sets KernelDesc::serial_blocks / serial_reason of every kernel of `m`, looking at the code of
// every function the kernel can reach (all functions when the module makes indirect calls).
void classify_block_order(Module& m);

}  // namespace cusnap::emu::ptx
