// expect: RandomContrast: each factor must be in \[0, 1\]
// Keras's factor bounds: the contrast factor is drawn in [1 - lower, 1 + upper], so a lower
// factor above 1 would draw negative contrasts. The twin's factor 1/2 compiles.
#include <memopt/layers.hpp>
#include <memopt/model/spec.hpp>

#ifdef MEMOPT_FAILTEST
using Contrast = memopt::RandomContrast<std::ratio<3, 2>>;
#else
using Contrast = memopt::RandomContrast<std::ratio<1, 2>>;
#endif
using Net = memopt::Sequential<Contrast, memopt::Flatten, memopt::Dense<4, memopt::Softmax>>;

memopt::ModelSpec<Net, memopt::Input<6, 6, 3>, memopt::float32> spec;
