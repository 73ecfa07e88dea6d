//===- OutputFile.cpp - Writing a tool's output file safely ---------------===//

#include "runtime/plan/OutputFile.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <iostream>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace remat::runtime {

namespace {

std::string folderOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string baseOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

[[noreturn]] void fail(const std::string &path, const std::string &why) {
  throw OutputError("cannot write '" + path + "': " + why);
}

/// The file a path names after following every symbolic link; a dangling
/// link gives the path of its missing target (which is then created).
std::string followLinks(const std::string &path) {
  std::string current = path;
  for (int depth = 0; depth < 40; ++depth) {
    struct stat st;
    if (::lstat(current.c_str(), &st) != 0 || !S_ISLNK(st.st_mode))
      return current;
    std::vector<char> target(4096);
    ssize_t n = ::readlink(current.c_str(), target.data(), target.size());
    if (n < 0 || size_t(n) >= target.size())
      fail(path, "cannot read the symbolic link '" + current + "'");
    std::string next(target.data(), size_t(n));
    current = next[0] == '/' ? next : folderOf(current) + "/" + next;
  }
  fail(path, "too many levels of symbolic links");
}

/// An output stream buffer over a file descriptor that remembers the first
/// write error.
class FdBuffer : public std::streambuf {
public:
  explicit FdBuffer(int fd) : fd_(fd), buffer_(1 << 16) { resetPut(); }
  int error() const { return error_; }

protected:
  int_type overflow(int_type ch) override {
    if (!drain())
      return traits_type::eof();
    if (!traits_type::eq_int_type(ch, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(ch);
      pbump(1);
    }
    return traits_type::not_eof(ch);
  }
  std::streamsize xsputn(const char *s, std::streamsize n) override {
    if (n < std::streamsize(buffer_.size()) / 2)
      return std::streambuf::xsputn(s, n);
    if (!drain() || !writeAll(s, size_t(n)))
      return 0;
    return n;
  }
  int sync() override { return drain() ? 0 : -1; }

private:
  void resetPut() { setp(buffer_.data(), buffer_.data() + buffer_.size()); }
  bool drain() {
    bool ok = writeAll(pbase(), size_t(pptr() - pbase()));
    resetPut();
    return ok;
  }
  bool writeAll(const char *data, size_t size) {
    while (size > 0 && error_ == 0) {
      ssize_t written = ::write(fd_, data, size);
      if (written < 0) {
        if (errno != EINTR)
          error_ = errno;
        continue;
      }
      data += written;
      size -= size_t(written);
    }
    return error_ == 0;
  }

  int fd_;
  std::vector<char> buffer_;
  int error_ = 0;
};

} // namespace

struct OutputFile::Impl {
  int fd = -1;
  std::string target;    ///< the file written (links followed)
  std::string temporary; ///< Atomic mode on a regular file: the mkstemp name
  std::unique_ptr<FdBuffer> buffer;
  std::unique_ptr<std::ostream> stream;
  bool committed = false;
};

OutputFile::OutputFile(const std::string &path, Mode mode)
    : path_(path), impl_(std::make_unique<Impl>()) {
  if (path == "-")
    return; // standard output
  if (path.empty())
    fail(path, "empty file name");
  Impl &f = *impl_;
  f.target = followLinks(path);
  struct stat st;
  mode_t permissions = 0;
  bool exists = ::stat(f.target.c_str(), &st) == 0;
  if (!exists && errno != ENOENT)
    fail(path, std::strerror(errno));
  if (exists && S_ISDIR(st.st_mode))
    fail(path, "it is a directory");
  if (exists && !S_ISREG(st.st_mode)) {
    // A device, FIFO or socket: written where it is (a FIFO's open waits
    // for its reader, as a shell redirection does).
    f.fd = ::open(f.target.c_str(), O_WRONLY | O_CLOEXEC);
    if (f.fd < 0)
      fail(path, std::strerror(errno));
  } else {
    std::string folder = folderOf(f.target);
    struct stat folderStat;
    if (::stat(folder.c_str(), &folderStat) != 0)
      fail(path, "the folder '" + folder + "' does not exist");
    if (!S_ISDIR(folderStat.st_mode))
      fail(path, "'" + folder + "' is not a folder");
    if (exists) {
      permissions = st.st_mode & 07777;
    } else {
      mode_t mask = ::umask(0);
      ::umask(mask);
      permissions = 0666 & ~mask;
    }
    if (mode == Mode::InPlace) {
      f.fd = ::open(f.target.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                    0666);
      if (f.fd < 0)
        fail(path, std::strerror(errno));
    } else {
      std::string pattern = folder + "/." + baseOf(f.target) + ".XXXXXX";
      std::vector<char> name(pattern.begin(), pattern.end());
      name.push_back('\0');
      f.fd = ::mkostemp(name.data(), O_CLOEXEC);
      if (f.fd < 0)
        fail(path, std::string("cannot create a temporary file in '") +
                       folder + "': " + std::strerror(errno));
      f.temporary = name.data();
      if (::fchmod(f.fd, permissions) != 0) {
        int error = errno;
        ::close(f.fd);
        ::unlink(f.temporary.c_str());
        f.fd = -1;
        fail(path, std::strerror(error));
      }
    }
  }
  f.buffer = std::make_unique<FdBuffer>(f.fd);
  f.stream = std::make_unique<std::ostream>(f.buffer.get());
}

OutputFile::~OutputFile() {
  if (!impl_ || impl_->committed)
    return;
  if (impl_->fd >= 0)
    ::close(impl_->fd);
  if (!impl_->temporary.empty())
    ::unlink(impl_->temporary.c_str());
}

std::ostream &OutputFile::stream() {
  return impl_->stream ? *impl_->stream : std::cout;
}

void OutputFile::commit() {
  Impl &f = *impl_;
  if (f.committed)
    return;
  if (!f.stream) {
    std::cout.flush();
    if (!std::cout)
      throw OutputError("cannot write to standard output");
    f.committed = true;
    return;
  }
  f.stream->flush();
  if (int error = f.buffer->error())
    fail(path_, std::strerror(error));
  int fd = f.fd;
  f.fd = -1;
  if (::close(fd) != 0)
    fail(path_, std::strerror(errno));
  if (!f.temporary.empty() &&
      ::rename(f.temporary.c_str(), f.target.c_str()) != 0)
    fail(path_, std::strerror(errno));
  f.committed = true;
}

void writeOutputFile(const std::string &path, const std::string &text) {
  OutputFile out(path);
  out.stream().write(text.data(), std::streamsize(text.size()));
  out.commit();
}

} // namespace remat::runtime
