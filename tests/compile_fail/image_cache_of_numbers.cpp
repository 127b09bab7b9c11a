// expect: data::image_cache: expected a range of images
// image_cache stores decoded images; a range of plain numbers has none to store.
#include <memopt/data/image_cache.hpp>
#include <memopt/data/range.hpp>

void f() {
  auto cached = memopt::data::range(10) | memopt::data::image_cache("numbers.cache");
  (void)cached;
}
