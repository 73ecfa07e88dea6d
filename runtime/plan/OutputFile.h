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
// A command checks its outputs before any work (checkOutputs): each folder
// exists and is writable, and no output is one of the command's inputs or
// another output (by device and inode, links followed). It writes them as
// one OutputSet, which renames them into place together at the end, so a
// command that fails leaves none of its outputs behind.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_OUTPUTFILE_H
#define REMAT_RUNTIME_OUTPUTFILE_H

#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace remat::runtime {

/// A file that cannot be opened, written or committed.
class OutputError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// A usage mistake in a command's outputs: an output that is one of its
/// inputs, or two outputs that are one file (exit code 2).
class OutputClash : public std::invalid_argument {
public:
  using std::invalid_argument::invalid_argument;
};

/// A file named on the command line, with the flag that names it ("-o",
/// "--report", "MODEL") for the errors.
struct NamedPath {
  std::string flag;
  std::string path;
};

/// Checks, before any work, that every output can be written (its folder
/// exists and is writable; it is not a folder) and that none is one of
/// `inputs` or another output: throws OutputClash for a clash, OutputError
/// for a folder. `-`, empty paths and special files (/dev/null) pass.
void checkOutputs(const std::vector<NamedPath> &outputs,
                  const std::vector<NamedPath> &inputs);

/// Whether a file beside `path` (a plan's weights) is written: `path` is a
/// regular file or a new one. Standard output and special files (/dev/null,
/// a FIFO) take none.
bool takesSidecar(const std::string &path);

/// Whether `path` is a character device (/dev/null): what is written there
/// is discarded, sidecars included.
bool isDiscarded(const std::string &path);

/// While it lives, `path` (a file, or a folder left empty) is removed if
/// the process is stopped by SIGINT or SIGTERM, before the signal takes its
/// default course: an interrupted command leaves no temporary behind.
/// OutputFile guards its temporaries so; a command guards its own (remat
/// train's plan folder). The handlers are installed on first use, only
/// where the signal's disposition is the default.
class RemoveOnSignal {
public:
  explicit RemoveOnSignal(const std::string &path);
  ~RemoveOnSignal();
  RemoveOnSignal(const RemoveOnSignal &) = delete;
  RemoveOnSignal &operator=(const RemoveOnSignal &) = delete;

private:
  int slot_;
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

/// The outputs of one command: each is opened by open() (a temporary file
/// beside a regular one) and all are committed by commit(); destroyed
/// before that, it removes every temporary, so a failed command leaves no
/// output behind.
class OutputSet {
public:
  /// Opens `path` (throws OutputError) and returns its stream.
  std::ostream &open(const std::string &path);
  /// Opens `path` and writes `text` to it.
  void write(const std::string &path, const std::string &text);
  /// Commits every output, in the order added.
  void commit();

private:
  std::vector<std::unique_ptr<OutputFile>> files_;
};

/// Writes `text` to `path` through an OutputFile and commits it.
void writeOutputFile(const std::string &path, const std::string &text);

} // namespace remat::runtime

#endif // REMAT_RUNTIME_OUTPUTFILE_H
