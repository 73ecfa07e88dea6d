//===- CompileCommand.cpp - `remat compile` -------------------------------===//
//
// Reads a model (a file or `-` for stdin), applies --preset/--set, lowers it
// to the graph dialect and prints the requested stage to -o (default
// stdout). Errors go to stderr as one located message, exit code 1; usage
// errors exit 2.
//
//===----------------------------------------------------------------------===//

#include "tools/remat/CompileCommand.h"

#include "compiler/Importer.h"
#include "compiler/ModelGraph.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <fstream>
#include <iostream>
#include <sstream>

namespace remat::tools {

static const char *kCompileHelp =
    "usage: remat compile MODEL [options]\n"
    "\n"
    "Reads MODEL (a JSON model file, or - for stdin; docs/model-format.md),\n"
    "builds its graph and prints the requested stage.\n"
    "\n"
    "options:\n"
    "  --emit=STAGE       what to print: graph (the verified forward graph)\n"
    "  -o FILE            write to FILE instead of stdout (- is stdout)\n"
    "  --preset NAME      apply a named preset of the model's config\n"
    "  --set NAME=VALUE   override a config variable (repeatable)\n"
    "  -h, --help         this text\n";

namespace {
struct CompileOptions {
  std::string model;
  std::string emit = "graph";
  std::string output = "-";
  model::ModelOptions modelOptions;
};

int usageError(const std::string &message) {
  std::cerr << "remat compile: " << message
            << "\n(see remat compile --help)\n";
  return 2;
}

/// Accepts both `--flag value` and `--flag=value`.
bool takeValue(int argc, char **argv, int &i, const std::string &flag,
               std::string &value) {
  std::string arg = argv[i];
  if (arg == flag) {
    if (i + 1 >= argc)
      throw std::invalid_argument(flag + " needs a value");
    value = argv[++i];
    return true;
  }
  if (arg.rfind(flag + "=", 0) == 0) {
    value = arg.substr(flag.size() + 1);
    return true;
  }
  return false;
}
} // namespace

int compileMain(int argc, char **argv) {
  CompileOptions options;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string arg = argv[i], value;
      if (arg == "-h" || arg == "--help") {
        std::cout << kCompileHelp;
        return 0;
      }
      if (takeValue(argc, argv, i, "--emit", value)) {
        options.emit = value;
      } else if (takeValue(argc, argv, i, "-o", value)) {
        options.output = value;
      } else if (takeValue(argc, argv, i, "--preset", value)) {
        options.modelOptions.preset = value;
      } else if (takeValue(argc, argv, i, "--set", value)) {
        auto eq = value.find('=');
        if (eq == std::string::npos || eq == 0)
          return usageError("--set expects NAME=VALUE, got '" + value + "'");
        options.modelOptions.overrides.emplace_back(value.substr(0, eq),
                                                    value.substr(eq + 1));
      } else if (arg.size() > 1 && arg[0] == '-') {
        return usageError("unknown option '" + arg + "'");
      } else if (options.model.empty()) {
        options.model = arg;
      } else {
        return usageError("more than one model given ('" + options.model +
                          "' and '" + arg + "')");
      }
    }
  } catch (const std::invalid_argument &e) {
    return usageError(e.what());
  }
  if (options.model.empty())
    return usageError("no model given");
  if (options.emit != "graph")
    return usageError("unknown --emit stage '" + options.emit +
                      "' (available: graph)");

  std::string text;
  std::string sourceName = options.model == "-" ? "<stdin>" : options.model;
  if (options.model == "-") {
    std::stringstream buffer;
    buffer << std::cin.rdbuf();
    text = buffer.str();
  } else {
    std::ifstream in(options.model, std::ios::binary);
    if (!in) {
      std::cerr << "remat compile: cannot open '" << options.model << "'\n";
      return 1;
    }
    std::stringstream buffer;
    buffer << in.rdbuf();
    text = buffer.str();
  }

  try {
    model::ModelGraph graph =
        model::loadModel(text, sourceName, options.modelOptions);
    mlir::MLIRContext context;
    auto module = compiler::importModel(graph, context);

    std::string printed;
    llvm::raw_string_ostream os(printed);
    module->print(os);
    os << "\n";
    os.flush();
    if (options.output == "-") {
      std::cout << printed;
    } else {
      // Write to a temporary file first so a failure never leaves a
      // half-written output behind.
      std::string tmp = options.output + ".tmp";
      {
        std::ofstream out(tmp, std::ios::binary);
        out << printed;
        if (!out) {
          std::cerr << "remat compile: cannot write '" << options.output
                    << "'\n";
          return 1;
        }
      }
      if (std::rename(tmp.c_str(), options.output.c_str()) != 0) {
        std::cerr << "remat compile: cannot write '" << options.output
                  << "'\n";
        return 1;
      }
    }
  } catch (const model::ModelError &e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

} // namespace remat::tools
