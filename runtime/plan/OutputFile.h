//===- OutputFile.h - Writing a tool's output file safely ------*- C++ -*-===//
//
// Every file a remat tool writes (plans, reports, IR, SVG, weights, logs)
// goes through OutputFile, which writes as compilers do:
//
//   - `-` is standard output;
//   - a symbolic link is followed (through every level) and its target is
//     written; the link itself stays;
//   - a special file (a character device such as /dev/null, a FIFO, a
//     socket) is opened and written in place, never replaced;
//   - a regular file, or a new one, is written to a unique temporary file
//     in the same folder (`.NAME.XXXXXX`, mkstemp) that is renamed over it
//     by commit(): readers see the old content or the new, never a part,
//     two writers never share a temporary, and a failure (an exception, a
//     full disk) removes the temporary and leaves the old file as it was.
//     A replaced file keeps its permission bits; a new one gets 0666 less
//     the umask.
//
// Mode::InPlace (logs that are read while they grow) writes a regular file
// directly, truncating it; a failure leaves what was written so far.
// Errors are OutputError naming the path and the cause (a folder that does
// not exist, a directory given as the file, permissions).
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_OUTPUTFILE_H
#define REMAT_RUNTIME_OUTPUTFILE_H

#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>

namespace remat::runtime {

/// A file that cannot be opened, written or committed.
class OutputError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

class OutputFile {
public:
  enum class Mode { Atomic, InPlace };

  /// Opens `path` for writing (see the file comment); throws OutputError.
  explicit OutputFile(const std::string &path, Mode mode = Mode::Atomic);
  /// Discards the output if commit() was not called: removes the temporary
  /// file (Atomic mode on a regular file).
  ~OutputFile();
  OutputFile(const OutputFile &) = delete;
  OutputFile &operator=(const OutputFile &) = delete;

  std::ostream &stream();
  /// Flushes, closes and (Atomic mode, regular file) renames the temporary
  /// over the path; throws OutputError when any of it fails.
  void commit();

  const std::string &path() const { return path_; }

private:
  struct Impl;
  std::string path_;
  std::unique_ptr<Impl> impl_;
};

/// Writes `text` to `path` through an OutputFile and commits it.
void writeOutputFile(const std::string &path, const std::string &text);

} // namespace remat::runtime

#endif // REMAT_RUNTIME_OUTPUTFILE_H
