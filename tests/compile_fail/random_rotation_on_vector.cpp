// expect: RandomRotation: its input must be an image .height, width, channels.
// A Dense layer's output is a vector: there is nothing to rotate. The twin (without
// MEMOPT_FAILTEST) rotates the input image and must compile.
#include <memopt/layers.hpp>
#include <memopt/model/spec.hpp>

#include <ratio>

using Turn = memopt::RandomRotation<std::ratio<1, 10>>;
#ifdef MEMOPT_FAILTEST
using Net = memopt::Sequential<memopt::Flatten, memopt::Dense<16, memopt::ReLU>, Turn,
                               memopt::Dense<10, memopt::Softmax>>;
#else
using Net = memopt::Sequential<Turn, memopt::Flatten, memopt::Dense<16, memopt::ReLU>,
                               memopt::Dense<10, memopt::Softmax>>;
#endif

memopt::ModelSpec<Net, memopt::Input<8, 8, 1>, memopt::float32> spec;
