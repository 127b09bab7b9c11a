// expect: RandomZoom: its input must be an image .height, width, channels.
// A model whose Input is a vector of 64 pixels has no image to zoom. The twin (without
// MEMOPT_FAILTEST) reads them as an 8 x 8 image and must compile.
#include <memopt/layers.hpp>
#include <memopt/model/spec.hpp>

#include <ratio>

using Net = memopt::Sequential<memopt::RandomZoom<std::ratio<1, 5>>, memopt::Flatten,
                               memopt::Dense<10, memopt::Softmax>>;
#ifdef MEMOPT_FAILTEST
using In = memopt::Input<64>;
#else
using In = memopt::Input<8, 8, 1>;
#endif

memopt::ModelSpec<Net, In, memopt::float32> spec;
