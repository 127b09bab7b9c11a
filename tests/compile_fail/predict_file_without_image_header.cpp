// expect: Model::predict\(file\): include <memopt/data/image_directory.hpp> \(and link
// memopt::images\) predict on an image file with only memopt.hpp included: decoding files needs the
// image headers (and memopt::images), which the diagnostic names. The twin predicts on an image
// already decoded, which needs no image library.
#include <cstdint>
#include <filesystem>
#include <ratio>
#include <vector>

#include <memopt/memopt.hpp>

using Net = memopt::Sequential<memopt::Rescaling<std::ratio<1, 255>>, memopt::Flatten,
                               memopt::Dense<3, memopt::Softmax>>;

std::vector<float> f(memopt::Model<Net, memopt::Input<4, 4, 3>>& model) {
#ifdef MEMOPT_FAILTEST
  return model.predict(std::filesystem::path("cat.jpg"));
#else
  const memopt::data::LabeledImage image{
      .pixels = std::vector<std::uint8_t>(4 * 4 * 3, 7), .height = 4, .width = 4, .channels = 3};
  return model.predict(image);
#endif
}
