//===- InputFile.cpp - Why an input file cannot be read -------------------===//

#include "runtime/plan/InputFile.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace remat::runtime {

std::optional<std::string> inputProblem(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return std::string(std::strerror(errno));
  struct stat st;
  bool directory = ::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
  ::close(fd);
  if (directory)
    return std::string("it is a directory");
  return std::nullopt;
}

bool looksLikeOnnx(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  unsigned char first = 0;
  ssize_t n = ::read(fd, &first, 1);
  ::close(fd);
  return n == 1 && first == 0x08;
}

} // namespace remat::runtime
