# The library memopt::hdf5 needs: the HDF5 C library (Debian: libhdf5-dev, serial, headers
# under include/hdf5/serial), for memopt/io/keras_h5.hpp. Included by memopt's CMakeLists.txt
# and by the installed package config, so that both see the same target. Sets
# memopt_HDF5_FOUND; never fails (Keras's .h5 files are optional).
include_guard(GLOBAL)

# FindHDF5's C component test-compiles a C file: it needs the C language, which a C++-only
# project has not enabled.
get_property(_memopt_languages GLOBAL PROPERTY ENABLED_LANGUAGES)
if(NOT "C" IN_LIST _memopt_languages)
  include(CheckLanguage)
  check_language(C)
  if(CMAKE_C_COMPILER)
    enable_language(C)
  endif()
endif()
unset(_memopt_languages)

set(memopt_HDF5_FOUND FALSE)
if(CMAKE_C_COMPILER_LOADED)
  find_package(HDF5 QUIET COMPONENTS C)
  if(HDF5_FOUND AND TARGET hdf5::hdf5)
    set(memopt_HDF5_FOUND TRUE)
  endif()
endif()
