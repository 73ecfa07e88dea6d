// The main() of remat-unit-compiler: Catch2's runner, nothing else.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
