#include "cusnap/extract/extract.h"
