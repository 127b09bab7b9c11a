// expect: data::image_cache: expected a range of images
// image_cache stores decoded images; a range of plain numbers has none to store. The twin
// (without MEMOPT_FAILTEST) caches a range of data::LabeledImage and must compile.
#include <vector>

#include <memopt/data/image_batch.hpp>
#include <memopt/data/image_cache.hpp>
#include <memopt/data/range.hpp>

void f() {
#ifdef MEMOPT_FAILTEST
  auto source = memopt::data::range(10);
#else
  std::vector<memopt::data::LabeledImage> source(10);
#endif
  auto cached = source | memopt::data::image_cache("numbers.cache", {8, 8, 3, "test"});
  (void)cached;
}
