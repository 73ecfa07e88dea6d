# cuBLAS where the CUDA toolkit has none (a compiler-only install, as GPU
# machines whose cuBLAS comes with PyTorch's wheels may be): defines
# CUDA::cublas from REMAT_CUBLAS_ROOT (include/ and lib/) or from the CUDA 13
# wheels of python3's site-packages (nvidia/cu13, or nvidia/cublas before
# CUDA 13). Set REMAT_CUBLAS_ROOT to use it even where the toolkit has one.
set(REMAT_CUBLAS_ROOT "" CACHE PATH
    "Directory with include/cublas_v2.h and lib/libcublas.so* (optional)")
if(TARGET CUDA::cublas AND NOT REMAT_CUBLAS_ROOT)
  return()
endif()
set(_remat_cublas_roots)
if(REMAT_CUBLAS_ROOT)
  list(APPEND _remat_cublas_roots "${REMAT_CUBLAS_ROOT}")
else()
  find_program(_remat_python NAMES python3)
  if(_remat_python)
    execute_process(
      COMMAND "${_remat_python}" -c
              "import site; print(';'.join(site.getsitepackages()))"
      OUTPUT_VARIABLE _remat_site OUTPUT_STRIP_TRAILING_WHITESPACE
      ERROR_QUIET)
    foreach(_dir IN LISTS _remat_site)
      list(APPEND _remat_cublas_roots "${_dir}/nvidia/cu13" "${_dir}/nvidia/cublas")
    endforeach()
  endif()
endif()
find_path(REMAT_CUBLAS_INCLUDE_DIR cublas_v2.h
  PATHS ${_remat_cublas_roots} PATH_SUFFIXES include NO_DEFAULT_PATH)
find_library(REMAT_CUBLAS_LIBRARY NAMES cublas libcublas.so.13 libcublas.so.12
  PATHS ${_remat_cublas_roots} PATH_SUFFIXES lib lib64 NO_DEFAULT_PATH)
if(NOT REMAT_CUBLAS_INCLUDE_DIR OR NOT REMAT_CUBLAS_LIBRARY)
  message(FATAL_ERROR "remat: the CUDA toolkit has no cuBLAS and none was "
    "found in ${_remat_cublas_roots}; set REMAT_CUBLAS_ROOT or "
    "REMAT_ENABLE_CUDA=OFF")
endif()
if(TARGET CUDA::cublas)
  # REMAT_CUBLAS_ROOT given: it replaces the toolkit's.
  set_target_properties(CUDA::cublas PROPERTIES
    IMPORTED_LOCATION "${REMAT_CUBLAS_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${REMAT_CUBLAS_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "")
else()
  add_library(CUDA::cublas SHARED IMPORTED)
  set_target_properties(CUDA::cublas PROPERTIES
    IMPORTED_LOCATION "${REMAT_CUBLAS_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${REMAT_CUBLAS_INCLUDE_DIR}")
endif()
message(STATUS "remat: cuBLAS from ${REMAT_CUBLAS_LIBRARY}")
