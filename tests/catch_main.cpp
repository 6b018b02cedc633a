// The one Catch2 main of every test executable (library cusnap_catch_main, tests/CMakeLists.txt).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
