//===- ReadModel.cpp - remat-read-model: the model readers' fuzz target ---===//
//
//   remat-read-model MODEL [--preset NAME] [--input-shape NAME=D0,D1,...]
//                          [--frozen NAME,...]
//
// Reads a model file (JSON, or ONNX where built) as `remat compile` does,
// through the flattened model with every shape inferred, and prints its op
// and weight counts. Built without MLIR (REMAT_MODEL_READER=ON), so the
// sanitizer job (tests/sanitize.sh) fuzzes the readers under ASan and UBSan
// without building the compiler. Exit 0, 1 (a model error, printed as
// `remat compile` prints it) or 2 (a usage error).
//
//===----------------------------------------------------------------------===//
#include "compiler/ModelFile.h"

#include <iostream>
#include <sstream>
#include <string>

namespace {

int usage(const std::string &message) {
  std::cerr << "remat-read-model: " << message
            << "\nusage: remat-read-model MODEL [--preset NAME] "
               "[--input-shape NAME=D0,D1,...] [--frozen NAME,...]\n";
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2)
    return usage("no model given");
  std::string path = argv[1];
  remat::model::ModelOptions options;
  for (int i = 2; i < argc; i += 2) {
    std::string flag = argv[i];
    if (i + 1 >= argc)
      return usage(flag + " needs a value");
    std::string value = argv[i + 1];
    if (flag == "--preset") {
      options.preset = value;
    } else if (flag == "--frozen") {
      std::stringstream names(value);
      for (std::string name; std::getline(names, name, ',');)
        options.training.frozen.insert(name);
    } else if (flag == "--input-shape") {
      size_t eq = value.find('=');
      if (eq == std::string::npos)
        return usage("--input-shape needs NAME=D0,D1,...");
      std::vector<int64_t> dims;
      std::stringstream list(value.substr(eq + 1));
      for (std::string dim; std::getline(list, dim, ',');)
        dims.push_back(std::stoll(dim));
      options.training.inputShapes[value.substr(0, eq)] = dims;
    } else {
      return usage("unknown option '" + flag + "'");
    }
  }
  try {
    remat::model::ModelFile file = remat::model::readModelFile(path, options);
    std::cout << file.graph.ops.size() << " ops, " << file.weights.size()
              << " weights\n";
    return 0;
  } catch (const remat::model::OptionError &e) {
    std::cerr << "remat-read-model: " << e.what() << "\n";
    return 2;
  } catch (const remat::model::ModelError &e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
