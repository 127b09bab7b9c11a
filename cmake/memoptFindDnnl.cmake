# Finds oneDNN (Debian's libdnnl-dev; the 2.x API, 2.6 or later) as the imported target
# memopt::dnnl, and sets MEMOPT_DNNL_FOUND and MEMOPT_DNNL_VERSION. Used by memopt's own
# CMakeLists.txt and by the installed memoptConfig.cmake, so that find_package(memopt)
# brings oneDNN along.
#
# oneDNN's own dnnl-config.cmake is not used: Debian's build has the OpenCL GPU runtime, so
# that file requires the OpenCL development package, which memopt's CPU use never needs.
# (Not include_guard: an imported target is visible only in the directory that made it, and
# find_package(memopt) may run in several.)
if(TARGET memopt::dnnl)
  set(MEMOPT_DNNL_FOUND TRUE)
  return()
endif()

set(MEMOPT_DNNL_FOUND FALSE)
find_path(MEMOPT_DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.hpp)
find_library(MEMOPT_DNNL_LIBRARY NAMES dnnl)
if(NOT MEMOPT_DNNL_INCLUDE_DIR OR NOT MEMOPT_DNNL_LIBRARY)
  set(MEMOPT_DNNL_MESSAGE "oneDNN not found (oneapi/dnnl/dnnl.hpp and libdnnl); install "
                          "libdnnl-dev (scripts/deps.sh) or set CMAKE_PREFIX_PATH")
  return()
endif()

file(STRINGS "${MEMOPT_DNNL_INCLUDE_DIR}/oneapi/dnnl/dnnl_version.h" _memopt_dnnl_version_lines
     REGEX "#define DNNL_VERSION_(MAJOR|MINOR|PATCH) ")
foreach(_part IN ITEMS MAJOR MINOR PATCH)
  string(REGEX REPLACE ".*#define DNNL_VERSION_${_part} ([0-9]+).*" "\\1" _memopt_dnnl_${_part}
         "${_memopt_dnnl_version_lines}")
endforeach()
set(MEMOPT_DNNL_VERSION "${_memopt_dnnl_MAJOR}.${_memopt_dnnl_MINOR}.${_memopt_dnnl_PATCH}")
# memopt's wrappers use the 2.x operation descriptors, which oneDNN 3.0 removed.
if(NOT _memopt_dnnl_MAJOR EQUAL 2 OR _memopt_dnnl_MINOR LESS 6)
  set(MEMOPT_DNNL_MESSAGE "oneDNN ${MEMOPT_DNNL_VERSION} found in ${MEMOPT_DNNL_INCLUDE_DIR}, "
                          "expected a 2.x release, 2.6 or later")
  return()
endif()

add_library(memopt::dnnl UNKNOWN IMPORTED)
set_target_properties(memopt::dnnl PROPERTIES
  IMPORTED_LOCATION "${MEMOPT_DNNL_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${MEMOPT_DNNL_INCLUDE_DIR}")
# oneDNN's kernels run on OpenMP's threads (Debian's build), whose count is a setting of each
# calling thread: with OpenMP's runtime linked (libdnnl loads it anyway),
# onednn::set_threads can give each rank of a threaded data-parallel run one core, and with
# C++ compiled under OpenMP (-fopenmp) memopt's own kernels split a batch over the same team
# (backend/cpu/parallel_rows.hpp). Eigen is kept serial there: memopt uses it for element-wise
# optimizer updates, whose bits must not depend on a thread count.
# GNU OpenMP only, the runtime libdnnl links: a second OpenMP runtime (LLVM's libomp, which
# clang finds) in the same process would keep thread counts of its own; elsewhere memopt's
# kernels run on the calling thread.
find_package(OpenMP QUIET COMPONENTS CXX)
if(OpenMP_CXX_FOUND AND OpenMP_CXX_LIBRARIES MATCHES "gomp")
  set_property(TARGET memopt::dnnl APPEND PROPERTY INTERFACE_LINK_LIBRARIES ${OpenMP_CXX_LIBRARIES})
  set_property(TARGET memopt::dnnl APPEND PROPERTY INTERFACE_INCLUDE_DIRECTORIES
               ${OpenMP_CXX_INCLUDE_DIRS})
  set_property(TARGET memopt::dnnl APPEND PROPERTY INTERFACE_COMPILE_DEFINITIONS
               MEMOPT_OPENMP_RUNTIME=1 EIGEN_DONT_PARALLELIZE)
  separate_arguments(_memopt_openmp_flags NATIVE_COMMAND "${OpenMP_CXX_FLAGS}")
  foreach(_flag IN LISTS _memopt_openmp_flags)
    set_property(TARGET memopt::dnnl APPEND PROPERTY INTERFACE_COMPILE_OPTIONS
                 "$<$<COMPILE_LANGUAGE:CXX>:${_flag}>")
  endforeach()
endif()
set(MEMOPT_DNNL_FOUND TRUE)
