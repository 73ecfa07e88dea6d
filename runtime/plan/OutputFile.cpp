//===- OutputFile.cpp - Writing a tool's output file safely ---------------===//

#include "runtime/plan/OutputFile.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <mutex>
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

namespace {

/// The paths RemoveOnSignal guards, as C strings the handler may read
/// (null: a free slot).
constexpr int kGuardSlots = 256;
std::atomic<char *> gGuarded[kGuardSlots];

extern "C" void removeGuardedAndRaise(int signal) {
  // Files first, then folders (rmdir fails on a file and unlink on a
  // folder, harmlessly): async-signal-safe calls only.
  for (std::atomic<char *> &slot : gGuarded)
    if (char *path = slot.load())
      ::unlink(path);
  for (std::atomic<char *> &slot : gGuarded)
    if (char *path = slot.load())
      ::rmdir(path);
  ::signal(signal, SIG_DFL);
  ::raise(signal);
}

void installHandlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int signal : {SIGINT, SIGTERM}) {
      struct sigaction current;
      if (::sigaction(signal, nullptr, &current) != 0 ||
          current.sa_handler != SIG_DFL)
        continue; // somebody else's handler (or ignored): left alone
      struct sigaction action {};
      action.sa_handler = removeGuardedAndRaise;
      sigemptyset(&action.sa_mask);
      ::sigaction(signal, &action, nullptr);
    }
  });
}

} // namespace

RemoveOnSignal::RemoveOnSignal(const std::string &path) : slot_(-1) {
  installHandlers();
  char *copy = ::strdup(path.c_str());
  for (int i = 0; i < kGuardSlots && copy; ++i) {
    char *expected = nullptr;
    if (gGuarded[i].compare_exchange_strong(expected, copy)) {
      slot_ = i;
      return;
    }
  }
  std::free(copy); // every slot taken: unguarded
}

RemoveOnSignal::~RemoveOnSignal() {
  if (slot_ >= 0)
    std::free(gGuarded[slot_].exchange(nullptr));
}

struct OutputFile::Impl {
  int fd = -1;
  std::string target;    ///< the file written (links followed)
  std::string temporary; ///< Atomic mode on a regular file: the mkstemp name
  std::unique_ptr<RemoveOnSignal> guard; ///< the temporary's
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
      f.guard = std::make_unique<RemoveOnSignal>(f.temporary);
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
  f.guard.reset();
  f.committed = true;
}

namespace {

std::string canonicalFolder(const std::string &folder) {
  char *real = ::realpath(folder.c_str(), nullptr);
  if (!real)
    return folder;
  std::string canonical = real;
  std::free(real);
  return canonical;
}

std::string describe(const NamedPath &named) {
  return named.flag + " '" + named.path + "'";
}

/// A file by identity: device and inode when it exists, else the canonical
/// path it will have.
struct FileKey {
  NamedPath named;
  bool exists = false;
  dev_t device = 0;
  ino_t inode = 0;
  std::string path;

  bool sameAs(const FileKey &other) const {
    if (exists != other.exists)
      return false;
    return exists ? device == other.device && inode == other.inode
                  : path == other.path;
  }
};

} // namespace

void checkOutputs(const std::vector<NamedPath> &outputs,
                  const std::vector<NamedPath> &inputs) {
  std::vector<FileKey> inputKeys;
  for (const NamedPath &input : inputs) {
    struct stat st;
    if (input.path.empty() || input.path == "-" ||
        ::stat(input.path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      continue;
    inputKeys.push_back({input, true, st.st_dev, st.st_ino, ""});
  }
  std::vector<FileKey> outputKeys;
  for (const NamedPath &output : outputs) {
    if (output.path.empty() || output.path == "-")
      continue;
    std::string target = followLinks(output.path);
    struct stat st;
    bool exists = ::stat(target.c_str(), &st) == 0;
    if (!exists && errno != ENOENT)
      fail(output.path, std::strerror(errno));
    if (exists && S_ISDIR(st.st_mode))
      fail(output.path, "it is a directory");
    if (exists && !S_ISREG(st.st_mode)) {
      // A device, FIFO or socket, written in place.
      if (::access(target.c_str(), W_OK) != 0)
        fail(output.path, std::strerror(errno));
      continue;
    }
    std::string folder = folderOf(target);
    struct stat folderStat;
    if (::stat(folder.c_str(), &folderStat) != 0)
      fail(output.path, "the folder '" + folder + "' does not exist");
    if (!S_ISDIR(folderStat.st_mode))
      fail(output.path, "'" + folder + "' is not a folder");
    if (::access(folder.c_str(), W_OK | X_OK) != 0)
      fail(output.path, "the folder '" + folder + "' is not writable: " +
                            std::strerror(errno));
    FileKey key{output, exists, exists ? st.st_dev : 0,
                exists ? st.st_ino : 0,
                canonicalFolder(folder) + "/" + baseOf(target)};
    for (const FileKey &input : inputKeys)
      if (key.sameAs(input))
        throw OutputClash(describe(output) + " is " + describe(input.named) +
                          " (the same file): writing it would destroy an "
                          "input; choose another output file");
    for (const FileKey &other : outputKeys)
      if (key.sameAs(other))
        throw OutputClash(describe(output) + " and " + describe(other.named) +
                          " are the same file; choose another for one");
    outputKeys.push_back(key);
  }
}

bool takesSidecar(const std::string &path) {
  if (path.empty() || path == "-")
    return false;
  struct stat st;
  std::string target = followLinks(path);
  return ::stat(target.c_str(), &st) != 0 || S_ISREG(st.st_mode);
}

bool isDiscarded(const std::string &path) {
  struct stat st;
  return path != "-" && ::stat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode);
}

std::ostream &OutputSet::open(const std::string &path) {
  files_.push_back(std::make_unique<OutputFile>(path));
  return files_.back()->stream();
}

void OutputSet::write(const std::string &path, const std::string &text) {
  open(path).write(text.data(), std::streamsize(text.size()));
}

void OutputSet::commit() {
  for (const std::unique_ptr<OutputFile> &file : files_)
    file->commit();
}

void writeOutputFile(const std::string &path, const std::string &text) {
  OutputFile out(path);
  out.stream().write(text.data(), std::streamsize(text.size()));
  out.commit();
}

} // namespace remat::runtime
