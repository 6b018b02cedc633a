// The ELF note by which cusnap's driver search (cusnap/common/driver_search.h) recognises this
// library as the cusnap emulator from the file alone: `--driver emulator` and CUSNAP_EMULATOR_PATH
// accept only a file that carries it.
#include "cusnap/common/library_mark.h"

CUSNAP_MARK_LIBRARY("emulator");
