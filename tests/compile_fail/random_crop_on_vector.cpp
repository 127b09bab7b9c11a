// expect: RandomCrop: its input must be an image \(height, width, channels\)
// Cropping needs a height and a width: on a vector of features RandomCrop does not compile,
// and the message says where it goes. The twin crops the image before Flatten and must compile.
#include <memopt/layers.hpp>
#include <memopt/model/spec.hpp>

using Dense = memopt::Dense<4, memopt::Softmax>;
#ifdef MEMOPT_FAILTEST
using Net = memopt::Sequential<memopt::Flatten, memopt::RandomCrop<4, 4>, Dense>;
#else
using Net = memopt::Sequential<memopt::RandomCrop<4, 4>, memopt::Flatten, Dense>;
#endif

memopt::ModelSpec<Net, memopt::Input<6, 6, 3>, memopt::float32> spec;
