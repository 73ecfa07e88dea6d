//===- CatchSession.h - Catch2's runner for the unit-test mains -*- C++ -*-===//
//
// Catch2 v2 declares its Session only beside its implementation, which is
// compiled once (CatchSession.cpp, RematCatch); the mains run the tests
// through this function instead.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_TESTS_UNIT_CATCHSESSION_H
#define REMAT_TESTS_UNIT_CATCHSESSION_H

namespace remat::test {

/// Catch::Session().run(argc, argv): the tests' exit status.
int runCatchSession(int argc, char **argv);

} // namespace remat::test

#endif // REMAT_TESTS_UNIT_CATCHSESSION_H
