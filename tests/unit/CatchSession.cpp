// Catch2's implementation without a main (CATCH_CONFIG_RUNNER), compiled
// once into RematCatch for every unit-test executable: it is the slowest
// file of each to compile (about 30 s). The mains: CatchMain.cpp, or an
// area's own Main.cpp where it does more than run the tests.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "tests/unit/CatchSession.h"

int remat::test::runCatchSession(int argc, char **argv) {
  return Catch::Session().run(argc, argv);
}
