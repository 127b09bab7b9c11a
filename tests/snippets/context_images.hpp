#pragma once
// What the ```cpp blocks that need memopt::images take as already made, beside context.hpp.
#include <cstdint>
#include <vector>

#include <memopt/data/image_directory.hpp>
#include <memopt/io/image/image.hpp>

namespace memopt_snippets_context {
namespace mo = memopt;

// A folder of images, as `mo::data::image_directory("photos")` lists it.
extern mo::data::ImageDirectory dir;
// An image file's bytes, and an image decoded from it.
extern std::vector<std::uint8_t> bytes;
extern mo::io::image::Image img;
}  // namespace memopt_snippets_context
