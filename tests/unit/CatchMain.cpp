// The main() of a unit-test executable that only runs its Catch2 tests
// (RematCatchMain).
#include "tests/unit/CatchSession.h"

int main(int argc, char **argv) {
  return remat::test::runCatchSession(argc, argv);
}
