// expect: data::image_cache: expected the images' source too
// image_cache records what its images were made from (options and files), so that a later run
// with other ones is refused instead of replaying the wrong images; a path alone gives it
// nothing to record. The twin (without MEMOPT_FAILTEST) names the source and must compile.
#include <vector>

#include <memopt/data/image_batch.hpp>
#include <memopt/data/image_cache.hpp>

void f() {
  std::vector<memopt::data::LabeledImage> source(10);
#ifdef MEMOPT_FAILTEST
  auto cached = source | memopt::data::image_cache("images.cache");
#else
  auto cached = source | memopt::data::image_cache("images.cache", {8, 8, 3, "made by f"});
#endif
  (void)cached;
}
