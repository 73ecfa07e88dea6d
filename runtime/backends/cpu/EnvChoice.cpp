//===- EnvChoice.cpp - A setting chosen by an environment variable --------===//
#include "runtime/backends/cpu/EnvChoice.h"

#include <cstdlib>
#include <iostream>
#include <mutex>
#include <set>

namespace remat::runtime::cpu {

std::string envChoice(const char *name,
                      std::initializer_list<const char *> choices) {
  std::string fallback = *choices.begin();
  const char *value = std::getenv(name);
  if (!value || !*value)
    return fallback;
  std::string list;
  size_t i = 0;
  for (const char *choice : choices) {
    if (value == std::string(choice))
      return choice;
    if (i > 0)
      list += i + 1 == choices.size() ? " or " : ", ";
    list += choice;
    ++i;
  }
  static std::mutex mutex;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mutex);
  if (warned.insert(name).second)
    std::cerr << "remat: warning: " << name << "='" << value << "' is not "
              << list << "; using " << fallback << " (docs/cli.md)\n";
  return fallback;
}

} // namespace remat::runtime::cpu
