#pragma once
// memopt's image API: memopt/memopt.hpp plus folders of image files (Keras's
// image_dataset_from_directory), their decoding, resizing and caching. Needs the CMake target
// memopt::images (libjpeg-turbo, libpng, stb), which memopt.hpp alone does not:
//
// ```cpp
// #include <memopt/images.hpp>  // target_link_libraries(app PRIVATE memopt::images)
// namespace mo = memopt;
// int main() {
//   auto [train, val] = mo::data::image_directory_split(
//       "photos", {.image_size = {128, 128}, .seed = 1337, .validation_split = 0.2});
//   auto batches = train | mo::data::shuffle(train.size(), 1) | train.decode()
//                        | mo::data::batch(32);
// }
// ```

// Checked here, once, before any image header: a program that links only memopt::memopt
// gets this line first rather than a missing stb_image.h.
#if !__has_include(<stb_image.h>) || !__has_include(<stb_image_resize.h>) || \
    !__has_include(<turbojpeg.h>) || !__has_include(<png.h>)
#error \
    "memopt/images.hpp needs the memopt::images CMake target (libjpeg-turbo, libpng, stb): target_link_libraries(app PRIVATE memopt::images)"
#else

#include "memopt/memopt.hpp"

#include "memopt/data/decode_images.hpp"
#include "memopt/data/image_batch.hpp"
#include "memopt/data/image_cache.hpp"
#include "memopt/data/image_dataset.hpp"
#include "memopt/data/image_directory.hpp"
#include "memopt/io/image/decode.hpp"
#include "memopt/io/image/format.hpp"
#include "memopt/io/image/image.hpp"
#include "memopt/io/image/load.hpp"
#include "memopt/io/image/resize.hpp"

#endif
