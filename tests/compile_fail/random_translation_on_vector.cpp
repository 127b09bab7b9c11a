// expect: RandomTranslation: its input must be an image .height, width, channels.
// An augmentation layer moves pixels, so its input is an image; after Flatten there are none.
// The twin (without MEMOPT_FAILTEST) augments the image first, as Keras's models do, and must
// compile.
#include <memopt/layers.hpp>
#include <memopt/model/spec.hpp>

#include <ratio>

using Shift = memopt::RandomTranslation<std::ratio<1, 10>, std::ratio<1, 10>>;
using Head = memopt::Dense<10, memopt::Softmax>;
#ifdef MEMOPT_FAILTEST
using Net = memopt::Sequential<memopt::Flatten, Shift, Head>;
#else
using Net = memopt::Sequential<Shift, memopt::Flatten, Head>;
#endif

memopt::ModelSpec<Net, memopt::Input<8, 8, 1>, memopt::float32> spec;
