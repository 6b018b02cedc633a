// The same kernels, compiled to PTX text (loaded as a second module: each has its own variables).
#include "module_vars_kernels.cu"
