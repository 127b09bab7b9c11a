// expect: RandomCrop: the crop is larger than its input image
// A 10 x 6 crop of an 8 x 8 image is taller than the image: memopt's shapes are fixed, so it
// does not compile (Keras would resize the image up). GCC names the four sizes in the
// instantiation of RandomCropWithinInput<8, 8, 10, 6> before the message, clang in the failed
// requirement. The twin crops 6 x 6 and must compile.
#include <memopt/layers.hpp>
#include <memopt/model/spec.hpp>

#ifdef MEMOPT_FAILTEST
constexpr std::size_t crop_height = 10;
#else
constexpr std::size_t crop_height = 6;
#endif

using Net = memopt::Sequential<memopt::RandomCrop<crop_height, 6>, memopt::Flatten,
                               memopt::Dense<10, memopt::Softmax>>;
memopt::ModelSpec<Net, memopt::Input<8, 8, 3>, memopt::float32> spec;
