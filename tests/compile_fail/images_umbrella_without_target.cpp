// expect: memopt/images.hpp needs the memopt::images CMake target
// The image umbrella header in a program that links memopt::memopt but not memopt::images:
// its first error names the target. Compiled without memopt::images under MEMOPT_FAILTEST and
// with it in the twin (images_* files, tests/compile_fail/CMakeLists.txt).
#include <memopt/images.hpp>

namespace mo = memopt;

void f() {
#ifdef MEMOPT_FAILTEST
  auto train = mo::data::image_directory("photos", {.image_size = {128, 128}});
#else
  auto train = mo::data::image_directory("photos", {.image_size = {128, 128}});
#endif
  (void)train;
}
