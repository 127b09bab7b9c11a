# cmake -DEXE=<fashion_mnist> -P host_only.cmake
# Fails when the host-only example would load a CUDA library: a dynamic dependency on
# cudart, cuBLAS(Lt) or the driver, or a statically linked cudart (which names libcuda.so).
if(NOT EXISTS "${EXE}")
  message(FATAL_ERROR "host_only: expected the example at '${EXE}', found nothing")
endif()
file(STRINGS "${EXE}" found REGEX "libcuda\\.so|libcudart|libcublas")
if(found)
  list(REMOVE_DUPLICATES found)
  list(LENGTH found count)
  if(count GREATER 4)
    list(SUBLIST found 0 4 found)
    list(APPEND found "... (${count} in all)")
  endif()
  list(JOIN found ", " found)
  message(FATAL_ERROR "host_only: expected '${EXE}' to need no CUDA library (a CPU run must "
                      "not load them), found references to: ${found}")
endif()
message(STATUS "host_only: '${EXE}' references no CUDA library")
