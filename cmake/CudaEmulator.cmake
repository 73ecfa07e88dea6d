# REMAT_CUDA_EMULATOR=ON: the CUDA backend and its [cuda] tests built by the
# host C++ compiler against runtime/backends/cuda/emu (a CPU emulation of
# the CUDA runtime, kernel threads, cuBLAS and cub's radix sort), so the
# kernels' logic is tested where no GPU exists. No nvcc is used; the option
# excludes the real backend (one build directory builds one of them).

# remat_cuda_sources(<out-var> <file.cu|file.cpp>...): the sources to
# compile. With the emulator each .cu becomes a generated .cpp that includes
# it (the host compiler does not take .cu files); otherwise unchanged.
function(remat_cuda_sources out)
  set(result)
  foreach(src IN LISTS ARGN)
    if(REMAT_CUDA_EMULATOR AND src MATCHES "\\.cu$")
      get_filename_component(abs "${src}" ABSOLUTE)
      file(RELATIVE_PATH rel "${PROJECT_SOURCE_DIR}" "${abs}")
      string(REGEX REPLACE "[/.]" "_" stem "${rel}")
      set(wrapper "${CMAKE_CURRENT_BINARY_DIR}/emu/${stem}.cpp")
      file(CONFIGURE OUTPUT "${wrapper}"
           CONTENT "// Generated: ${rel} for the CUDA emulator.\n#include \"${abs}\"\n")
      list(APPEND result "${wrapper}")
    else()
      list(APPEND result "${src}")
    endif()
  endforeach()
  set(${out} "${result}" PARENT_SCOPE)
endfunction()
