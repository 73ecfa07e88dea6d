//===- EnvChoice.h - A setting chosen by an environment variable *- C++ -*-===//
//
// The CPU backend's A/B switches (REMAT_CPU_CONV, REMAT_CPU_SCRATCH,
// REMAT_CPU_MOMENTS, docs/cli.md) read the same way: unset or empty means
// the first choice; a value that is none of the choices warns once on
// stderr and means the first choice too.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_BACKENDS_CPU_ENVCHOICE_H
#define REMAT_RUNTIME_BACKENDS_CPU_ENVCHOICE_H

#include <initializer_list>
#include <string>

namespace remat::runtime::cpu {

/// The value of environment variable `name` if it is one of `choices`,
/// else the first of them (with a warning for a value that is not).
std::string envChoice(const char *name,
                      std::initializer_list<const char *> choices);

} // namespace remat::runtime::cpu

#endif // REMAT_RUNTIME_BACKENDS_CPU_ENVCHOICE_H
