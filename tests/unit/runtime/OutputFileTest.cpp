//===- OutputFileTest.cpp - runtime/plan/OutputFile.h's failure paths ----------===//
//
// The places a tool writes to (/dev/null, links, FIFOs, missing folders) are
// covered end to end by tests/e2e/outputs.py; these cases need a failure in
// the middle of a write, which only the API can cause.
//
//===----------------------------------------------------------------------===//
#include "runtime/plan/OutputFile.h"

#include "TestUtil.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

using remat::runtime::OutputError;
using remat::runtime::OutputFile;

namespace {

std::string makeFolder() {
  std::string pattern = remat::runtime::test::tempPath("outputfile-XXXXXX");
  REQUIRE(mkdtemp(pattern.data()) != nullptr);
  return pattern;
}

std::string readText(const std::string &path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int entries(const std::string &folder) {
  int count = 0;
  DIR *dir = opendir(folder.c_str());
  REQUIRE(dir != nullptr);
  while (dirent *entry = readdir(dir))
    count += std::string(entry->d_name) != "." &&
             std::string(entry->d_name) != "..";
  closedir(dir);
  return count;
}

} // namespace

TEST_CASE("an output abandoned mid-write leaves the old file and no "
          "temporary",
          "[runtime]") {
  std::string folder = makeFolder();
  std::string path = folder + "/out.txt";
  { std::ofstream(path) << "old"; }
  {
    OutputFile out(path);
    out.stream() << "new, but never committed";
    CHECK(entries(folder) == 2); // the file and its temporary
  }
  CHECK(readText(path) == "old");
  CHECK(entries(folder) == 1);
}

TEST_CASE("a committed output replaces the file and keeps its permissions",
          "[runtime]") {
  std::string folder = makeFolder();
  std::string path = folder + "/out.txt";
  { std::ofstream(path) << "old"; }
  REQUIRE(chmod(path.c_str(), 0640) == 0);
  OutputFile out(path);
  out.stream() << std::string(200000, 'x'); // larger than the buffer
  out.commit();
  CHECK(readText(path) == std::string(200000, 'x'));
  struct stat st;
  REQUIRE(stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0640);
  CHECK(entries(folder) == 1);
}

TEST_CASE("an in-place output is visible before it is committed",
          "[runtime]") {
  std::string folder = makeFolder();
  std::string path = folder + "/log.jsonl";
  OutputFile out(path, OutputFile::Mode::InPlace);
  out.stream() << "line 1\n" << std::flush;
  CHECK(readText(path) == "line 1\n");
  CHECK(entries(folder) == 1);
  out.commit();
}

TEST_CASE("outputs that cannot be opened name the path and the cause",
          "[runtime]") {
  std::string folder = makeFolder();
  CHECK_THROWS_WITH(OutputFile(folder + "/none/out"),
                    "cannot write '" + folder + "/none/out': the folder '" +
                        folder + "/none' does not exist");
  CHECK_THROWS_WITH(OutputFile(folder),
                    "cannot write '" + folder + "': it is a directory");
  std::string loop = folder + "/loop";
  REQUIRE(symlink("loop", loop.c_str()) == 0);
  CHECK_THROWS_AS(OutputFile(loop), OutputError);
}
