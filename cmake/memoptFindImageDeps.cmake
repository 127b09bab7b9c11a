# The libraries memopt::images needs: libjpeg-turbo (TurboJPEG API), libpng, and Debian's
# compiled stb (libstb-dev: stb_image for BMP, stb_image_resize 0.9x for resizing). Included
# by memopt's CMakeLists.txt and by the installed package config, so that both see the same
# targets. Sets memopt_IMAGE_DEPS_FOUND; never fails (images are optional).
include_guard(GLOBAL)

find_package(libjpeg-turbo CONFIG QUIET)
find_package(PNG QUIET)

# stb ships no CMake package; Debian's libstb-dev has the headers under include/stb/ and
# libstb.so. An imported target of memopt's own name carries both.
if(NOT TARGET memopt::stb)
  find_path(MEMOPT_STB_INCLUDE_DIR stb_image_resize.h PATH_SUFFIXES stb)
  find_library(MEMOPT_STB_LIBRARY NAMES stb)
  if(MEMOPT_STB_INCLUDE_DIR AND MEMOPT_STB_LIBRARY)
    add_library(memopt::stb UNKNOWN IMPORTED)
    set_target_properties(memopt::stb PROPERTIES
      IMPORTED_LOCATION "${MEMOPT_STB_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${MEMOPT_STB_INCLUDE_DIR}")
  endif()
endif()

if(TARGET libjpeg-turbo::turbojpeg AND TARGET PNG::PNG AND TARGET memopt::stb)
  set(memopt_IMAGE_DEPS_FOUND TRUE)
else()
  set(memopt_IMAGE_DEPS_FOUND FALSE)
endif()
