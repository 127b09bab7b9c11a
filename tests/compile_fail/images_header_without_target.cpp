// expect: memopt: the image headers need stb_image.h .stb_image., which comes with the
// memopt::images CMake target: target_link_libraries.app PRIVATE memopt::images. An image header in
// a program that links memopt::memopt but not memopt::images (which brings stb, libjpeg-turbo and
// libpng): the header names the target before the compiler's "No such file". Files named images_*
// are compiled without memopt::images under MEMOPT_FAILTEST and with it in their twin
// (tests/compile_fail/CMakeLists.txt); the code is the same in both, since the misuse is the link,
// not the code.
#include <memopt/data/image_directory.hpp>

namespace mo = memopt;

void f() {
#ifdef MEMOPT_FAILTEST
  auto train = mo::data::image_directory("photos", {.image_size = {128, 128}});
#else
  auto train = mo::data::image_directory("photos", {.image_size = {128, 128}});
#endif
  (void)train;
}
