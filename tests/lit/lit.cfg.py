# lit configuration of remat's FileCheck tests. Run through the configured
# lit.site.cfg.py in the build tree (ctest -R lit, or ninja check-lit).
import os

import lit.formats

config.name = "remat"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py",
                   "lit.site.cfg.py.in", "Inputs"]

config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = getattr(config, "remat_lit_obj_root", None)
if config.test_exec_root is None:
    lit_config.fatal("run lit on the build directory (tests/lit in the build "
                     "tree), not on the sources: lit.site.cfg.py is missing")

# Tools are found on PATH, ours first: remat-opt, remat, then FileCheck, not
# and split-file from LLVM 19.
tool_dirs = [config.remat_opt_dir, config.remat_dir, config.llvm_tools_dir]
config.environment["PATH"] = os.pathsep.join(
    tool_dirs + [config.environment.get("PATH", os.environ.get("PATH", ""))])

config.substitutions.append(("%remat_src_root", config.remat_src_root))
config.substitutions.append(("%remat_obj_root", config.remat_obj_root))

# Tests of the driver say `REQUIRES: remat` until it is built.
if os.path.exists(os.path.join(config.remat_dir, "remat")):
    config.available_features.add("remat")
