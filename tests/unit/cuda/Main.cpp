// Catch2 main of remat-unit-cuda.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
