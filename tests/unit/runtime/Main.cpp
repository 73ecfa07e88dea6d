// Catch2 main of remat-unit-runtime. A run that passed removes the files
// its tests wrote (TestUtil.h, tempPath); a failed run keeps them and says
// where.
#include "tests/unit/CatchSession.h"

#include "TestUtil.h"

#include <iostream>

int main(int argc, char **argv) {
  int failed = remat::test::runCatchSession(argc, argv);
  if (failed == 0)
    remat::runtime::test::removeTempDir();
  else
    std::cout << "the tests' files are kept in "
              << remat::runtime::test::tempPath("") << "\n";
  return failed;
}
